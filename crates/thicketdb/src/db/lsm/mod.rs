//! The LSM engine (`layout=lsm`, every profile but `yodb`): levels of
//! runs fed by one log and per-keyspace memtables. `DbInner` is its state,
//! shared with the background threads and iterators; `DbHandle` owns the
//! threads. The facade (`db/mod.rs`) reaches it through `Engine::Lsm`.

pub(crate) mod background;
pub(crate) mod background_state;
pub(crate) mod check_files;
mod check_runs;
pub(crate) mod checkpoint_copy;
pub(crate) mod compact;
pub(crate) mod flush;
pub(crate) mod flush_sync;
pub(crate) mod iter_sources;
pub(crate) mod lock_order;
pub(crate) mod log_rewrite;
pub(crate) mod log_state;
pub(crate) mod log_sync;
pub(crate) mod log_table;
pub(crate) mod lsbm_trim;
pub(crate) mod obsolete;
pub(crate) mod open;
pub(crate) mod read;
pub(crate) mod read_only;
pub(crate) mod relog;
pub(crate) mod report;
pub(crate) mod search;
pub(crate) mod settle;
pub(crate) mod super_version;
pub(crate) mod tree;
pub(crate) mod write;

#[cfg(test)]
mod close_tests;
#[cfg(test)]
mod lsbm_tests;
#[cfg(test)]
mod readahead_tests;
#[cfg(test)]
mod triad_log_tests;
#[cfg(test)]
mod triad_tests;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use parking_lot::{Condvar, Mutex, RwLock};

pub(crate) use background_state::BackgroundState;
pub(crate) use super_version::SuperVersion;

use crate::db::snapshot::SnapshotRegistry;
use crate::error::{Error, Result};
use crate::io::{FileLock, FileSystem};
use crate::options::Options;
use crate::stats::Counters;
use crate::version::table_cache::TableCache;
use crate::version::VersionSet;
use lock_order::Ranked;
use tree::Tree;
use write::WriteState;

/// Lock order (checked in debug builds and unit tests, `lock_order.rs`):
/// `write` → `log` → `versions` → `background` → `lock`; `super_version`
/// is taken last, inside any of them, and holds nothing while held but the
/// file backings' internal mutex (a dropped version unpins its files). The
/// block, table and snapshot caches lock internally and take nothing else.
pub(crate) struct DbInner {
    pub dir: PathBuf,
    pub options: Options,
    pub fs: Arc<dyn FileSystem>,
    pub counters: Arc<Counters>,
    pub table_cache: Arc<TableCache>,
    pub snapshots: Arc<SnapshotRegistry>,
    /// Sequence number of the last write visible to readers.
    pub last_sequence: AtomicU64,
    /// The default keyspace's tree (also in `trees`).
    pub default: Arc<Tree>,
    /// Every live keyspace's tree, the default one first. Changed under
    /// `versions` (with the MANIFEST edit); like `super_version`, taken last.
    /// Replaced whole (copy on write), so a reader clones one `Arc`.
    pub trees: RwLock<Arc<Vec<Arc<Tree>>>>,
    pub write: Ranked<WriteState>,
    /// Signalled when a writer finishes, a memtable is flushed, or L0 shrinks.
    pub write_cv: Condvar,
    pub log: Ranked<log_state::LogState>,
    pub versions: Ranked<VersionSet>,
    pub background: Ranked<BackgroundState>,
    /// Signalled when background work may be due or a task finished.
    pub background_cv: Condvar,
    /// Reference counts of the store's files (shared with `versions`).
    pub backings: Arc<crate::io::Backings>,
    pub closed: AtomicBool,
    /// Set with `BackgroundState::error`.
    pub failed: AtomicBool,
    /// Opened by `Db::open_read_only`: no background threads, no log, no
    /// lock; writes are refused.
    pub read_only: bool,
    /// Released by `close`, even while other handles are alive.
    pub lock: Ranked<Option<Box<dyn FileLock>>>,
    /// SifrDB's parallel search; `None` searches serially.
    pub search: Option<Arc<search::SearchPool>>,
}

impl DbInner {
    /// A source of new file numbers for a flush, a compaction or
    /// recovery (each call takes `versions`).
    pub fn file_numbers(&self) -> impl Fn() -> u64 + '_ {
        move || self.versions.lock().new_file_number()
    }

    /// Every live keyspace's tree, the default one first.
    pub fn trees(&self) -> Arc<Vec<Arc<Tree>>> {
        self.trees.read().clone()
    }

    /// The background error, if any, as the error writers get. The flag
    /// keeps the common case (no error) off the background mutex.
    pub fn check_background_error(&self) -> Result<()> {
        if !self.failed.load(Ordering::Acquire) {
            return Ok(());
        }
        match &self.background.lock().error {
            Some(e) => Err(Error::Background(Box::new(e.clone()))),
            None => Ok(()),
        }
    }

    pub fn check_open(&self) -> Result<()> {
        if self.closed.load(Ordering::Acquire) {
            Err(Error::Closed)
        } else {
            Ok(())
        }
    }

    /// `Error::ReadOnly` naming `what` on a store opened read-only.
    pub fn check_writable(&self, what: &str) -> Result<()> {
        if self.read_only {
            Err(Error::ReadOnly(what.to_string()))
        } else {
            Ok(())
        }
    }
}

/// The LSM engine behind a `Db`: its state and background threads. The
/// last handle to go stops the threads and persists the counters.
pub(crate) struct DbHandle {
    pub inner: Arc<DbInner>,
    background: Mutex<Vec<JoinHandle<()>>>,
}

impl DbHandle {
    /// Opens (or creates) the store in `dir` and starts its threads.
    pub fn open(dir: &Path, options: Options, fs: Arc<dyn FileSystem>) -> Result<DbHandle> {
        let inner = Arc::new(open::open(dir, options, fs)?);
        let threads = background::spawn(inner.clone())?;
        Ok(DbHandle {
            inner,
            background: Mutex::new(threads),
        })
    }

    /// Opens the store in `dir` read-only (no threads, nothing written).
    pub fn open_read_only(
        dir: &Path,
        options: Options,
        fs: Arc<dyn FileSystem>,
    ) -> Result<DbHandle> {
        Ok(DbHandle {
            inner: Arc::new(read_only::open(dir, options, fs)?),
            background: Mutex::new(Vec::new()),
        })
    }

    /// Stops the background threads, flushes the log, persists the
    /// counters and releases the lock.
    pub fn shutdown(&self) -> Result<()> {
        if self.inner.read_only {
            // Nothing to stop or persist: a read-only store writes nothing.
            self.inner.closed.store(true, Ordering::Release);
            return Ok(());
        }
        let threads = std::mem::take(&mut *self.background.lock());
        if threads.is_empty() {
            return Ok(());
        }
        self.inner.closed.store(true, Ordering::Release);
        {
            let mut bg = self.inner.background.lock();
            bg.shutting_down = true;
            self.inner.background_cv.notify_all();
        }
        // A panicking background thread has already recorded nothing useful;
        // the store is closed either way.
        for thread in threads {
            let _ = thread.join();
        }
        let flushed = self.inner.log.lock().writer.flush();
        let persisted = self.inner.versions.lock().persist_counters();
        obsolete::collect_obsolete_files(&self.inner);
        self.inner.lock.lock().take();
        flushed.and(persisted)
    }
}

impl Drop for DbHandle {
    fn drop(&mut self) {
        // Errors here cannot be reported; `Db::close` reports them.
        let _ = self.shutdown();
    }
}
