//! The batch log: a write batch whose updates span chunks is appended here
//! whole (one record in the log record format, the batch's encoding)
//! before its parts go to the chunk logs. A crash between the chunk logs'
//! appends leaves some chunks without their part; the next open finds
//! every chunk whose log ends below the batch's sequence numbers and
//! appends the missing part there, so a batch is in every chunk or in
//! none (it was not acknowledged). A new batch log is started at every
//! read-write open, once the old one's batches are complete everywhere.

use std::path::Path;

use super::files::batch_log_path;
use crate::db::batch::DecodedBatch;
use crate::error::{Error, Result};
use crate::io::FileSystem;
use crate::log::{LogReader, LogWriter, RecoveryMode};

/// The open batch log.
pub(super) struct BatchLog {
    pub number: u64,
    writer: LogWriter,
    /// Appends not synced yet.
    dirty: bool,
}

impl BatchLog {
    /// Creates an empty batch log (the caller syncs the directory).
    pub fn create(fs: &dyn FileSystem, dir: &Path, number: u64) -> Result<BatchLog> {
        Ok(BatchLog {
            number,
            writer: LogWriter::new(fs.create(&batch_log_path(dir, number))?),
            dirty: false,
        })
    }

    /// Appends one batch; returns the bytes written.
    pub fn append(&mut self, record: &[u8], sync: bool) -> Result<u64> {
        let before = self.writer.len();
        self.writer.add_record(record)?;
        if sync {
            self.writer.sync()?;
        } else {
            self.writer.flush()?;
        }
        self.dirty = !sync;
        Ok(self.writer.len() - before)
    }

    /// Syncs the log if an append since the last sync was not; returns
    /// whether it did.
    pub fn sync_if_dirty(&mut self) -> Result<bool> {
        if !self.dirty {
            return Ok(false);
        }
        self.writer.sync()?;
        self.dirty = false;
        Ok(true)
    }
}

/// One logged batch: its first sequence number and its encoding.
pub(super) type LoggedBatch = (u64, Vec<u8>);

/// Every complete batch of the batch log `number`, in order (each checked
/// to decode). A torn tail is dropped: its batch was not acknowledged,
/// and no chunk log holds a part of it, for the parts are appended only
/// once the whole record has been handed to the file system.
pub(super) fn read(
    fs: &dyn FileSystem,
    dir: &Path,
    number: u64,
    mode: RecoveryMode,
) -> Result<Vec<LoggedBatch>> {
    let path = batch_log_path(dir, number);
    let mut reader = LogReader::new(fs.open_sequential(&path)?, path.clone(), mode);
    let mut out = Vec::new();
    while let Some((offset, record)) = reader.read_record()? {
        let batch =
            DecodedBatch::parse(&record).map_err(|why| Error::corruption(&path, offset, why))?;
        batch
            .ops()
            .map_err(|why| Error::corruption(&path, offset, why))?;
        out.push((batch.first_sequence, record));
    }
    Ok(out)
}
