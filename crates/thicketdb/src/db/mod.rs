//! The store: the write path, the read path and the background threads.
//!
//! `Db` is a cheap handle (`Clone`, `Send + Sync`). State shared with the
//! background threads and iterators lives in `DbInner`; the last `Db` handle
//! to go stops the background threads and persists the counters.

#[macro_use]
mod data_api;
mod background;
mod batch;
mod buffer;
mod call_options;
pub mod check;
mod checkpoint;
pub mod chunked;
mod compact;
mod flush;
mod iter;
mod keyspace;
mod lock_order;
mod log_rewrite;
mod log_table;
mod open;
mod range;
mod read;
mod read_only;
mod search;
mod settle;
mod snapshot;
mod space;
mod stats;
mod tools;
mod tree;
mod write;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use parking_lot::{Condvar, Mutex, RwLock};

pub(crate) use batch::{DecodedBatch, OpKind};
pub use batch::{WriteBatch, MAX_KEY_SIZE, MAX_VALUE_SIZE};
pub use call_options::{ReadOptions, WriteOptions};
pub use checkpoint::CheckpointReport;
pub use iter::DbIterator;
pub use keyspace::{Keyspace, MAX_KEYSPACE_NAME};
pub use range::Range;
pub use snapshot::Snapshot;
pub use space::SpaceUsage;
pub use stats::Stats;
pub use tools::{destroy, dump, repair, RepairReport};
pub use tree::DEFAULT_KEYSPACE_NAME;

use crate::error::{Error, Result};
use crate::io::{FileLock, FileSystem, PosixFs};
use crate::memtable::Memtable;
use crate::options::{Layout, Options};
use crate::stats::Counters;
use crate::version::table_cache::TableCache;
use crate::version::{Version, VersionSet};
use chunked::ChunkStore;
use lock_order::Ranked;
use snapshot::SnapshotRegistry;
use tree::Tree;
use write::WriteState;

/// What a read needs, swapped as one unit: the mutable memtable, the
/// immutable ones waiting for flush (newest first) and the version.
pub(crate) struct SuperVersion {
    pub mem: Arc<Memtable>,
    pub imms: Vec<Arc<Memtable>>,
    pub version: Arc<Version>,
    /// The policy's estimate of bytes compaction owes `version` (computed
    /// once per version, read by every write for stalls).
    pub pending_compaction_bytes: u64,
}

/// Coordination between writers, the background threads, manual
/// compaction and `close`.
pub(crate) struct BackgroundState {
    /// A failed flush or compaction; writes are refused until reopen.
    pub error: Option<Error>,
    pub shutting_down: bool,
    /// What the running background compactions hold, per keyspace id.
    pub busy: std::collections::BTreeMap<u32, crate::compaction::Busy>,
    /// A manual compaction runs or waits: no background compaction starts.
    pub manual_compaction: bool,
    /// Where the next round-robin pick over keyspaces starts.
    pub next_tree: usize,
}

impl BackgroundState {
    /// The claims of running tasks in `tree`.
    pub fn busy_in(&mut self, tree: &Tree) -> &mut crate::compaction::Busy {
        self.busy
            .entry(tree.id)
            .or_insert_with(|| crate::compaction::Busy::new(tree.options.comparator.clone()))
    }

    /// Whether no background compaction runs in any keyspace.
    pub fn idle(&self) -> bool {
        self.busy.values().all(|b| b.is_empty())
    }
}

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
    pub log: Ranked<write::LogState>,
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

struct DbHandle {
    inner: Arc<DbInner>,
    background: Mutex<Vec<JoinHandle<()>>>,
}

impl DbHandle {
    fn shutdown(&self) -> Result<()> {
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
        background::collect_obsolete_files(&self.inner);
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

/// Closes a chunked store when its last `Db` handle goes.
struct ChunkedHandle(Arc<ChunkStore>);

impl Drop for ChunkedHandle {
    fn drop(&mut self) {
        // Errors here cannot be reported; `Db::close` reports them.
        let _ = self.0.close();
    }
}

/// Where a data call of `Db` or `Keyspace` goes (`data_api!`): a
/// keyspace's tree in the LSM engine, or a keyspace's chunks in the
/// chunked engine.
#[derive(Clone, Copy)]
enum Target<'a> {
    Tree(&'a Arc<DbInner>, &'a Arc<Tree>),
    Chunked(&'a Arc<ChunkStore>, &'a Arc<chunked::ChunkSpace>),
}

/// The layout seam: the engine behind a `Db`, chosen by `Options::layout`.
#[derive(Clone)]
enum Engine {
    /// Levels of runs (`layout=lsm`, every LSM profile).
    Lsm(Arc<DbHandle>),
    /// YoDB's chunks (`layout=chunked`, `db/chunked/`).
    Chunked(Arc<ChunkedHandle>),
}

/// A ThicketDB store. Cheap to clone and share across threads.
#[derive(Clone)]
pub struct Db {
    engine: Engine,
    /// Process-unique id of this open: a batch holding a keyspace's
    /// updates names the open it is for ([`WriteBatch::put_in`]).
    instance: u64,
}

/// The last [`Db::instance`] handed out.
static LAST_INSTANCE: AtomicU64 = AtomicU64::new(0);

fn next_instance() -> u64 {
    LAST_INSTANCE.fetch_add(1, Ordering::Relaxed) + 1
}

impl std::fmt::Debug for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Db").field("dir", &self.path()).finish()
    }
}

/// The layout of the store in `dir` as its `OPTIONS` records it, or
/// `options`' for a new store.
pub(crate) fn layout_of(fs: &dyn FileSystem, dir: &Path, options: &Options) -> Result<Layout> {
    let path = crate::version::files::options_path(dir);
    if !fs.exists(&path) {
        return Ok(options.layout);
    }
    let stored = Options::decode(&path.display().to_string(), &fs.read_to_vec(&path)?)?;
    if stored.layout != options.layout {
        return Err(Error::InvalidArgument(format!(
            "store in {} was created with layout {}; it cannot be opened as {}",
            dir.display(),
            stored.layout,
            options.layout
        )));
    }
    Ok(stored.layout)
}

impl Db {
    /// Opens (or creates) the store in directory `path`.
    pub fn open(path: impl AsRef<Path>, options: Options) -> Result<Db> {
        Db::open_with_fs(path, options, Arc::new(PosixFs))
    }

    /// Opens the store through a given file system (tests inject faults).
    pub fn open_with_fs(
        path: impl AsRef<Path>,
        options: Options,
        fs: Arc<dyn FileSystem>,
    ) -> Result<Db> {
        if layout_of(fs.as_ref(), path.as_ref(), &options)? == Layout::Chunked {
            let store = ChunkStore::open(path.as_ref(), options, fs)?;
            return Ok(Db::chunked(store));
        }
        let inner = Arc::new(open::open(path.as_ref(), options, fs)?);
        let threads = background::spawn(inner.clone())?;
        Ok(Db {
            engine: Engine::Lsm(Arc::new(DbHandle {
                inner,
                background: Mutex::new(threads),
            })),
            instance: next_instance(),
        })
    }

    fn chunked(store: Arc<ChunkStore>) -> Db {
        Db {
            engine: Engine::Chunked(Arc::new(ChunkedHandle(store))),
            instance: next_instance(),
        }
    }

    /// Opens the store in `path` for reading only, without writing a byte
    /// there: the logs are replayed into memory, no lock is taken and no
    /// background thread runs. Writes, `flush` and `compact_range` return
    /// `Error::ReadOnly`. Works on a full or read-only file system, and
    /// beside a read-write opener (see `docs/architecture.md`: the view is
    /// the store as it was at open).
    pub fn open_read_only(path: impl AsRef<Path>, options: Options) -> Result<Db> {
        Db::open_read_only_with_fs(path, options, Arc::new(PosixFs))
    }

    /// `open_read_only` through a given file system.
    pub fn open_read_only_with_fs(
        path: impl AsRef<Path>,
        options: Options,
        fs: Arc<dyn FileSystem>,
    ) -> Result<Db> {
        if layout_of(fs.as_ref(), path.as_ref(), &options)? == Layout::Chunked {
            let store = ChunkStore::open_read_only(path.as_ref(), options, fs)?;
            return Ok(Db::chunked(store));
        }
        let inner = Arc::new(read_only::open(path.as_ref(), options, fs)?);
        Ok(Db {
            engine: Engine::Lsm(Arc::new(DbHandle {
                inner,
                background: Mutex::new(Vec::new()),
            })),
            instance: next_instance(),
        })
    }

    /// Whether this handle was opened with `open_read_only`.
    pub fn is_read_only(&self) -> bool {
        match &self.engine {
            Engine::Lsm(h) => h.inner.read_only,
            Engine::Chunked(c) => c.0.is_read_only(),
        }
    }

    /// The LSM engine's state; `None` for a chunked store.
    fn lsm(&self) -> Option<&Arc<DbInner>> {
        match &self.engine {
            Engine::Lsm(h) => Some(&h.inner),
            Engine::Chunked(_) => None,
        }
    }

    /// The LSM engine's state, or an error saying the chunked layout has
    /// no `what`.
    fn lsm_for(&self, what: &str) -> Result<&Arc<DbInner>> {
        self.lsm().ok_or_else(|| {
            Error::InvalidArgument(format!("{what} is not supported by the chunked layout"))
        })
    }

    /// The LSM engine's state (tests of LSM behaviour).
    #[cfg(test)]
    fn inner(&self) -> &Arc<DbInner> {
        self.lsm().expect("an LSM store")
    }

    /// For `data_api!`: the store itself.
    fn db(&self) -> &Db {
        self
    }

    /// For `data_api!`: the data methods of `Db` work on the default
    /// keyspace.
    fn target(&self) -> Target<'_> {
        match &self.engine {
            Engine::Lsm(h) => Target::Tree(&h.inner, &h.inner.default),
            Engine::Chunked(c) => Target::Chunked(&c.0, c.0.default_space()),
        }
    }

    /// For `data_api!`: a handle on the default keyspace.
    fn handle(&self) -> Keyspace {
        Keyspace::default_of(self)
    }

    data_api!();

    /// The store's directory.
    pub fn path(&self) -> &Path {
        match &self.engine {
            Engine::Lsm(h) => &h.inner.dir,
            Engine::Chunked(c) => c.0.dir(),
        }
    }

    /// The options this store runs with.
    pub fn options(&self) -> &Options {
        match &self.engine {
            Engine::Lsm(h) => &h.inner.options,
            Engine::Chunked(c) => c.0.options(),
        }
    }

    /// Applies a batch atomically.
    pub fn write(&self, batch: WriteBatch) -> Result<()> {
        self.write_opt(batch, WriteOptions::default())
    }

    /// `write` with per-write options.
    pub fn write_opt(&self, batch: WriteBatch, opts: WriteOptions) -> Result<()> {
        if batch.store().is_some_and(|store| store != self.instance) {
            // Keyspace ids are per store: applied here, the updates would
            // land in whatever keyspace of this store has the same id.
            return Err(Error::InvalidArgument(
                "the batch holds updates for a keyspace of another open store".into(),
            ));
        }
        let inner = match &self.engine {
            Engine::Lsm(h) => &h.inner,
            Engine::Chunked(c) => return c.0.write(batch, opts),
        };
        inner.check_writable("write")?;
        if batch.range_deletions() > 0 && !inner.options.comparator.is_bytewise() {
            return Err(Error::InvalidArgument(
                "range deletes need the built-in byte order; this store has a custom comparator"
                    .into(),
            ));
        }
        write::write(inner, batch, opts)
    }

    /// A consistent read view at the current point of the write order.
    pub fn snapshot(&self) -> Snapshot {
        match &self.engine {
            Engine::Lsm(h) => Snapshot::latest(&h.inner.last_sequence, h.inner.snapshots.clone()),
            Engine::Chunked(c) => c.0.snapshot(),
        }
    }

    /// Flushes the memtables (of every keyspace: they share the log) and
    /// waits until every immutable memtable is on disk (chunked layout:
    /// syncs every chunk log).
    pub fn flush(&self) -> Result<()> {
        let inner = match &self.engine {
            Engine::Lsm(h) => &h.inner,
            Engine::Chunked(c) => return c.0.flush(),
        };
        inner.check_writable("flush")?;
        write::flush(inner)
    }

    /// Trims LSbM's compaction buffer now instead of at the next
    /// `lsbm_trim_interval` (a no-op without `lsbm_buffer`, and in the
    /// chunked layout).
    pub fn trim_compaction_buffer(&self) -> Result<()> {
        match self.lsm() {
            Some(inner) => {
                inner.check_open()?;
                buffer::trim(inner)
            }
            None => Ok(()),
        }
    }

    /// Engine statistics.
    pub fn stats(&self) -> Stats {
        match &self.engine {
            Engine::Lsm(h) => stats::collect(&h.inner),
            Engine::Chunked(c) => c.0.stats(),
        }
    }

    /// Space amplification: allocated bytes of the store's files over the
    /// key and value bytes of the live keys. Unlike `stats`, this reads
    /// every live key.
    pub fn space_usage(&self) -> Result<SpaceUsage> {
        match &self.engine {
            Engine::Lsm(h) => space::usage(&h.inner),
            Engine::Chunked(c) => {
                // Every keyspace, read at one snapshot.
                let opts = ReadOptions {
                    snapshot: Some(c.0.snapshot()),
                    ..ReadOptions::default()
                };
                let cursors =
                    c.0.spaces()
                        .iter()
                        .map(|space| c.0.iter(space, opts.clone()))
                        .collect::<Result<Vec<_>>>()?;
                space::measure(cursors, c.0.fs(), c.0.dir())
            }
        }
    }

    /// Stops background work, persists counters and releases the store.
    /// Other clones of this handle get `Error::Closed` afterwards.
    pub fn close(self) -> Result<()> {
        match &self.engine {
            Engine::Lsm(h) => h.shutdown(),
            Engine::Chunked(c) => c.0.close(),
        }
    }
}

#[cfg(test)]
mod lsbm_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod triad_log_tests;
#[cfg(test)]
mod triad_tests;
