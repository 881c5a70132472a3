//! The store's current log: the writer the write leader appends to, and
//! how a log file is created.

use std::path::Path;
use std::sync::Arc;

use crate::error::Result;
use crate::io::{FileSyncer, FileSystem, WritableFile};
use crate::log::LogWriter;
use crate::options::Options;

/// The current log; only the write leader and memtable switches touch it.
pub(crate) struct LogState {
    pub writer: LogWriter,
    /// The file number of the log `writer` appends to (a checkpoint copies
    /// exactly its written prefix).
    pub number: u64,
    /// Logs a memtable switch left without syncing them, as LevelDB's
    /// switch does (numbered), and whether the current log's directory
    /// entry is not durable yet: the next sync write makes them durable
    /// before the current log ([`LogState::sync`]), so that what survives
    /// a power loss stays a prefix of the writes. A log whose memtable is
    /// in a table by then needs no sync: it is let go at the next switch.
    pub unsynced: Vec<(u64, LogWriter)>,
    pub dir_unsynced: bool,
}

impl LogState {
    pub fn new(writer: LogWriter, number: u64) -> LogState {
        LogState {
            writer,
            number,
            unsynced: Vec::new(),
            dir_unsynced: false,
        }
    }

    /// Makes the current log durable, after every earlier log the switches
    /// left unsynced and the current log's directory entry; returns the
    /// `fdatasync`s it took.
    pub fn sync(&mut self, fs: &dyn FileSystem, dir: &Path) -> Result<u64> {
        let syncs = self.sync_all_but_current(fs, dir)?;
        self.writer.sync()?;
        Ok(syncs + 1)
    }

    /// What [`sync`](Self::sync) does but the current log's own
    /// `fdatasync`, handed back for the caller to run after releasing the
    /// log (`log_sync.rs`): everything flushed by then is written, so the
    /// syncer covers it. A log without a syncer is synced here (`None`).
    pub fn syncer(
        &mut self,
        fs: &dyn FileSystem,
        dir: &Path,
    ) -> Result<(u64, Option<Arc<dyn FileSyncer>>)> {
        let syncs = self.sync_all_but_current(fs, dir)?;
        self.writer.flush()?;
        match self.writer.syncer()? {
            Some(syncer) => Ok((syncs, Some(syncer))),
            None => {
                self.writer.sync()?;
                Ok((syncs + 1, None))
            }
        }
    }

    /// Syncs the earlier logs a switch left unsynced, then the directory
    /// entry of the current one; returns the syncs taken.
    pub fn sync_all_but_current(&mut self, fs: &dyn FileSystem, dir: &Path) -> Result<u64> {
        let mut syncs = 0;
        for (_, earlier) in &mut self.unsynced {
            earlier.sync()?;
            syncs += 1;
        }
        self.unsynced.clear();
        if self.dir_unsynced {
            fs.sync_dir(dir)?;
            self.dir_unsynced = false;
            syncs += 1;
        }
        Ok(syncs)
    }

    /// Appends to `writer` (log `number`, its directory entry not synced)
    /// from now on; the current log waits for the next sync, and earlier
    /// ones below `live_from` (flushed: their writes are in tables) are
    /// let go.
    pub fn switch_unsynced(&mut self, writer: LogWriter, number: u64, live_from: u64) {
        let old = std::mem::replace(&mut self.writer, writer);
        let old_number = std::mem::replace(&mut self.number, number);
        self.unsynced.retain(|(n, _)| *n >= live_from);
        self.unsynced.push((old_number, old));
        self.dir_unsynced = true;
    }
}

/// Creates a log file the way `log_mmap` asks.
pub(crate) fn create_log(
    fs: &dyn FileSystem,
    options: &Options,
    path: &Path,
) -> Result<Box<dyn WritableFile>> {
    if options.log_mmap {
        fs.create_mapped(path)
    } else {
        fs.create(path)
    }
}
