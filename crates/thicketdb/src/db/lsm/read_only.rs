//! `Db::open_read_only`: a complete view of a store that never writes a
//! byte to its directory.
//!
//! The MANIFEST is read but no new one is written, the logs it still needs
//! are replayed into memtables kept immutable in memory (never flushed), no
//! log is created, the `LOCK` file is not taken and no background thread
//! runs. Every file goes through `ReadOnlyFs` (`db/read_only_fs.rs`), which refuses anything that
//! would change the directory, so a write attempted by mistake fails with
//! `Error::ReadOnly` instead of reaching the disk. A store on a full (or
//! read-only) file system opens this way.
//!
//! Beside a read-write opener (another process, or this one): allowed, as
//! RocksDB allows it. The read-only handle sees the store as it was when it
//! opened and never changes the writer's files. The writer does not know
//! about it, though: once it compacts away or deletes files the view
//! references, reads of those tables fail with an I/O or corruption error
//! (never a wrong value: every block is checksummed); reopen for a fresh
//! view. An open that races with the writer starts over, after a pause
//! that doubles each time, up to `OPEN_ATTEMPTS` times: when a file vanishes (a MANIFEST roll, a flushed
//! log deleted), when the MANIFEST's log number moved while the logs were
//! read (a log flushed and deleted meanwhile would be missing from the
//! view), and when a log reads as damaged (a record the writer was copying
//! into its memory-mapped log as we read it: zeros with records after
//! them). Real damage fails every attempt and is returned.

use std::path::Path;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use super::open::{assemble, new_table_cache, replay_logs, replay_targets, FullMemtable, Parts};
use super::tree::Tree;
use super::DbInner;
use crate::db::identity::check_stored_identity;
use crate::db::read_only_fs::ReadOnlyFs;
use crate::error::{Error, Result};
use crate::io::{FileSystem, WritableFile};
use crate::log::LogWriter;
use crate::memtable::Memtable;
use crate::options::Options;
use crate::stats::Counters;
use crate::version::files::current_path;
use crate::version::VersionSet;

/// Opens that raced with a writer (see the module comment) start over
/// this many times: with the back-off below, about a second in all. Ten
/// (0.2 s) lost to a writer flushing 64 KiB memtables on a loaded machine,
/// where one open outlasted the writer's flush interval every time.
const OPEN_ATTEMPTS: usize = 20;

/// One attempt at opening.
enum Attempt {
    Opened(Box<DbInner>),
    /// A writer flushed while the logs were read: the view may lack a log.
    Raced,
}

pub(crate) fn open(dir: &Path, options: Options, fs: Arc<dyn FileSystem>) -> Result<DbInner> {
    options.validate()?;
    let fs = ReadOnlyFs::wrap(fs);
    let mut last = None;
    for attempt in 0..OPEN_ATTEMPTS {
        if attempt > 0 {
            // Back off (1, 2, 4 ... 64 ms): retrying at once beside a
            // writer that flushes every few milliseconds races it again.
            std::thread::sleep(std::time::Duration::from_millis(1 << (attempt - 1).min(6)));
        }
        match open_once(dir, options.clone(), &fs) {
            Ok(Attempt::Opened(inner)) => return Ok(*inner),
            Ok(Attempt::Raced) => last = None,
            Err(e) if may_be_a_race(&e) => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| {
        Error::io(
            std::io::Error::other(format!(
                "a writer flushed during each of {OPEN_ATTEMPTS} read-only open attempts"
            )),
            dir.display().to_string(),
        )
    }))
}

/// Errors a concurrent writer can cause (see the module comment).
fn may_be_a_race(e: &Error) -> bool {
    match e {
        Error::Io { kind, .. } => *kind == std::io::ErrorKind::NotFound,
        Error::Corruption { file, .. } => file.ends_with(".log"),
        _ => false,
    }
}

fn open_once(dir: &Path, options: Options, fs: &Arc<dyn FileSystem>) -> Result<Attempt> {
    if !fs.exists(&current_path(dir)) {
        return Err(Error::InvalidArgument(format!(
            "no store in {}",
            dir.display()
        )));
    }
    check_stored_identity(fs.as_ref(), dir, &options)?;
    let counters = Arc::new(Counters::default());
    let backings = Arc::new(crate::io::Backings::default());
    let recovered = VersionSet::recover(fs.as_ref(), dir, options.comparator.clone())?;
    let log_numbers = recovered.log_numbers();
    counters.restore(&recovered.stats);
    let next_file_number = Arc::new(AtomicU64::new(recovered.next_file_number));
    let versions = VersionSet::without_manifest(
        fs.clone(),
        dir,
        counters.clone(),
        recovered,
        next_file_number,
        backings.clone(),
    );
    let targets = replay_targets(&options, &versions)?;
    let replayed = replay_logs(
        fs.as_ref(),
        dir,
        &targets,
        &versions,
        &counters,
        FullMemtable::Keep,
    )?;
    // Logs are deleted only after flushes moved the log numbers past them:
    // if none moved, every log this view needs was read.
    let now = VersionSet::recover(fs.as_ref(), dir, options.comparator.clone())?;
    if now.log_numbers() != log_numbers {
        return Ok(Attempt::Raced);
    }
    let mut trees = Vec::with_capacity(targets.len());
    for (target, replayed) in targets.into_iter().zip(replayed.trees) {
        let version = versions
            .current_of(target.id)
            .ok_or_else(|| Error::invariant("a recovered keyspace has no version"))?;
        let mem = Memtable::new(0, target.options.comparator.clone());
        trees.push(Arc::new(Tree::new(
            target.id,
            target.name,
            target.options,
            version,
            mem,
            replayed.memtables,
        )));
    }
    Ok(Attempt::Opened(Box::new(assemble(Parts {
        dir,
        table_cache: new_table_cache(dir, fs, &options)?,
        options,
        fs: fs.clone(),
        counters,
        backings,
        versions,
        trees,
        last_sequence: replayed.last_sequence,
        log: LogWriter::new(Box::new(NoLog)),
        log_number: 0,
        lock: None,
        read_only: true,
    })?)))
}

/// The log writer of a read-only store: it has no file, and `Db` refuses
/// writes before they get here.
struct NoLog;

impl WritableFile for NoLog {
    fn append(&mut self, _data: &[u8]) -> Result<()> {
        Err(Error::ReadOnly("appending to the log".to_string()))
    }

    fn flush(&mut self) -> Result<()> {
        Ok(())
    }

    fn sync(&mut self) -> Result<()> {
        Ok(())
    }

    fn len(&self) -> u64 {
        0
    }
}
