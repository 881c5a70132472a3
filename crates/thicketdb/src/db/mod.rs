//! The store's facade: `Db` and `Keyspace`, whose every call matches once
//! on the layout (`Engine`: the LSM engine in `lsm/`, YoDB's chunks in
//! `chunked/`), and the seams both engines build on (batches, call options,
//! snapshots, the user-key iterator, the table probe, stored identity,
//! keyspace rules, the read-only file system, checkpoint steps, reports).
//!
//! `Db` is a cheap handle (`Clone`, `Send + Sync`); the last one to go
//! closes the engine.

#[macro_use]
mod data_api;
mod batch;
mod call_options;
pub mod check;
mod check_keys;
mod check_report;
mod checkpoint_steps;
pub mod chunked;
mod identity;
mod iter;
mod keyspace;
mod keyspace_batch;
mod keyspace_rules;
pub(crate) mod lsm;
mod probe;
mod range;
mod read_only_fs;
mod snapshot;
mod space_usage;
mod stats_report;
mod tools;
pub(crate) mod whitebox;

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

pub(crate) use batch::{DecodedBatch, OpKind};
pub use batch::{WriteBatch, MAX_KEY_SIZE, MAX_VALUE_SIZE};
pub use call_options::{ReadOptions, WriteOptions};
pub use checkpoint_steps::CheckpointReport;
pub use iter::DbIterator;
pub use keyspace::Keyspace;
pub use keyspace_rules::{DEFAULT_KEYSPACE_NAME, MAX_KEYSPACE_NAME};
pub use range::Range;
pub use snapshot::Snapshot;
pub use space_usage::SpaceUsage;
pub use stats_report::Stats;
pub use tools::{destroy, dump, repair, RepairReport};

use crate::error::{Error, Result};
use crate::io::{FileSystem, PosixFs};
use crate::options::{Layout, Options};
use chunked::ChunkStore;
use lsm::tree::Tree;
use lsm::{DbHandle, DbInner};

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
    let Some((stored, _)) = Options::load_recorded(fs, dir)? else {
        return Ok(options.layout);
    };
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
    /// Whether directory `path` holds a store: every store made since
    /// layouts has an `OPTIONS` file, an older LSM store a `CURRENT`.
    pub fn exists(path: impl AsRef<Path>) -> bool {
        let dir = path.as_ref();
        crate::version::files::options_path(dir).exists()
            || crate::version::files::current_path(dir).exists()
    }

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
        let handle = DbHandle::open(path.as_ref(), options, fs)?;
        Ok(Db {
            engine: Engine::Lsm(Arc::new(handle)),
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
        let handle = DbHandle::open_read_only(path.as_ref(), options, fs)?;
        Ok(Db {
            engine: Engine::Lsm(Arc::new(handle)),
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
        lsm::write::write(inner, batch, opts)
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
        lsm::write::flush(inner)
    }

    /// Makes every write that returned before this call durable, as a
    /// synced write would, without writing anything (RocksDB's `SyncWAL`).
    /// Writers go on meanwhile: the `fdatasync` does not hold the write
    /// queue, as a synced write's does. A server's group commit writes
    /// without `sync`, then one `sync_log` acknowledges every write made
    /// before it. A failed sync fails the store's later writes, as a failed
    /// synced write does.
    pub fn sync_log(&self) -> Result<()> {
        let inner = match &self.engine {
            Engine::Lsm(h) => &h.inner,
            Engine::Chunked(c) => return c.0.sync_log(),
        };
        inner.check_writable("sync_log")?;
        lsm::log_sync::sync_log(inner)
    }

    /// Trims LSbM's compaction buffer now instead of at the next
    /// `lsbm_trim_interval` (a no-op without `lsbm_buffer`, and in the
    /// chunked layout).
    pub fn trim_compaction_buffer(&self) -> Result<()> {
        match self.lsm() {
            Some(inner) => {
                inner.check_open()?;
                lsm::lsbm_trim::trim(inner)
            }
            None => Ok(()),
        }
    }

    /// Engine statistics.
    pub fn stats(&self) -> Stats {
        match &self.engine {
            Engine::Lsm(h) => lsm::report::stats(&h.inner),
            Engine::Chunked(c) => c.0.stats(),
        }
    }

    /// Space amplification: allocated bytes of the store's files over the
    /// key and value bytes of the live keys. Unlike `stats`, this reads
    /// every live key.
    pub fn space_usage(&self) -> Result<SpaceUsage> {
        match &self.engine {
            Engine::Lsm(h) => lsm::report::space_usage(&h.inner),
            Engine::Chunked(c) => {
                // Every keyspace, read at one snapshot.
                let opts = ReadOptions {
                    snapshot: Some(c.0.snapshot()),
                    // A one-off scan: it leaves the cache to the reads.
                    fill_cache: false,
                    ..ReadOptions::default()
                };
                let cursors =
                    c.0.spaces()
                        .iter()
                        .map(|space| c.0.iter(space, opts.clone()))
                        .collect::<Result<Vec<_>>>()?;
                space_usage::measure(cursors, c.0.fs(), c.0.dir())
            }
        }
    }

    /// Blocks until no immutable memtable waits for its flush and no
    /// compaction is running or due (the policy picks none, no journaled
    /// merge is left to resume, no manual compaction runs). The mutable
    /// memtable is not flushed. Writes made meanwhile can keep the
    /// background busy, and so this call waiting, for as long as they last.
    ///
    /// Fails with the background error if a flush or compaction failed, and
    /// with `Error::Closed` once the store is closed.
    pub fn wait_for_compactions(&self) -> Result<()> {
        match self.lsm() {
            Some(inner) => lsm::settle::wait_until_settled(inner),
            // Rebalances run in the writers' calls: nothing is left to wait for.
            None => self.stats().background_error.map_or(Ok(()), |e| {
                Err(Error::Background(Box::new(Error::InvalidArgument(e))))
            }),
        }
    }

    /// Writes a consistent copy of the store into the new directory `dir`
    /// (which must not exist), hard-linking table segments where the file
    /// system allows and copying the rest. Writers are held off only while
    /// the point is taken, not while files are copied. The copy opens like
    /// any store (read-write or read-only).
    pub fn checkpoint(&self, dir: impl AsRef<Path>) -> Result<CheckpointReport> {
        match &self.engine {
            Engine::Lsm(h) => lsm::checkpoint_copy::checkpoint(&h.inner, dir.as_ref()),
            Engine::Chunked(c) => c.0.checkpoint(dir.as_ref()),
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
mod check_tests;
#[cfg(test)]
mod tests;
