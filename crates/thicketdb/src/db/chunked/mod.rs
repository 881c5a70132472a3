//! YoDB's chunked layout (`layout=chunked`): the store is a list of chunks,
//! each owning a contiguous key range and a funk on disk (one table plus an
//! append-only chunk log). There is no global write-ahead log: a put is
//! written once, to its chunk's log, until a funk rebalance merges the log
//! into a new table (and splits the chunk when it grew past `chunk_size`).
//!
//! It sits inside `db` because it shares `db`'s seams: write batches, the
//! snapshot registry, the user-key iterator, the table probe
//! (`docs/architecture.md`, *Layouts*). `ChunkStore` is declared here with
//! its life (open, flush, compaction, statistics, close); its write path
//! is in `write.rs`, its reads in `read.rs`.
//!
//! Concurrency (YoDB §3.2-§3.4; `docs/architecture.md`, *Chunked layout*,
//! gives the lock order and who holds what). Writes run concurrently and
//! wait for nothing outside their own chunks: a put takes its chunks'
//! `rebalance_lock`s shared and `append_lock`s, announces itself in each
//! chunk's pending slot, takes its sequence numbers with one atomic add on
//! `last_sequence` (the paper's GV), appends, and withdraws
//! (`pending.rs`: the paper's pending-operations array, per chunk). A
//! reader at sequence `s` waits, before it reads a chunk, only for a put
//! pending in that chunk that may be numbered up to `s`; it then finds
//! every write up to `s` complete there and filters out every later one,
//! so a scan sees a prefix of the write order in every chunk, and a batch
//! spanning chunks whole or not at all. Sync writes
//! share fsyncs (`sync_group.rs`). A funk rebalance is built by the one
//! thread holding the chunk's `funk_change_lock` while puts go on (a build
//! thread the writer queued the chunk for, `build_queue.rs`, or with
//! `chunk_rebalance_threads=0` the writer); only its switch holds the
//! `rebalance_lock` exclusively (`rebalance.rs`).
//! Readers take no lock (but to wait for such a pending put): they clone the current `ChunkSet` (chunk index
//! and list in one `Arc`, swapped whole on a rebalance); a replaced chunk
//! keeps its files until its last reader drops it.

mod append_order;
mod batch_log;
mod build_queue;
pub(crate) mod check_chunks;
mod checkpoint_copy;
pub mod checkpoint_mark;
mod checkpointer;
mod chunk;
mod chunk_iter;
mod chunk_log;
mod chunk_space;
mod chunk_views;
pub mod closed;
mod durable_prefix;
pub(crate) mod files;
mod framed;
mod funk_tables;
mod heat;
pub mod incarnations;
mod keyspaces;
pub mod log_filter;
mod log_sorted;
pub mod manifest;
mod munk;
pub mod munk_list;
mod open;
mod pending;
mod read;
mod rebalance;
mod row_cache;
mod sync_group;
mod table_filter;
mod write;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};

use super::snapshot::SnapshotRegistry;
use super::stats_report::Stats;
use crate::error::{Error, Result};
use crate::io::{FileLock, FileSystem};
use crate::options::Options;
use crate::stats::Counters;
use batch_log::BatchLog;
use chunk::Chunk;
pub(crate) use chunk_space::ChunkSpace;
use munk::MunkCache;
use row_cache::RowCache;

/// The chunk index and the chunk list in one: chunks sorted by start key,
/// the first starting at the empty key. Replaced whole, never changed.
pub(super) struct ChunkSet {
    chunks: Vec<Arc<Chunk>>,
}

impl ChunkSet {
    /// The index of the chunk owning `key`: binary search on start keys.
    fn locate(&self, key: &[u8]) -> usize {
        self.chunks
            .partition_point(|c| c.start.as_slice() <= key)
            .saturating_sub(1)
    }

    /// The chunks holding keys in `[lower, upper)`.
    fn overlapping(&self, lower: Option<&[u8]>, upper: Option<&[u8]>) -> &[Arc<Chunk>] {
        &self.chunks[self.overlapping_range(lower, upper)]
    }

    /// The indexes of the chunks holding keys in `[lower, upper)`.
    fn overlapping_range(
        &self,
        lower: Option<&[u8]>,
        upper: Option<&[u8]>,
    ) -> std::ops::Range<usize> {
        let first = lower.map_or(0, |l| self.locate(l));
        let end = upper.map_or(self.chunks.len(), |u| {
            self.chunks.partition_point(|c| c.start.as_slice() < u)
        });
        first..end.max(first)
    }
}

/// What the store's metadata lock (`ChunkStore::writer`) guards: the
/// batch log, file numbers and keyspace ids; the chunk list is written,
/// and chunk sets installed, under it.
struct Writer {
    batch_log: BatchLog,
    /// The next file number to hand out.
    next_file_number: u64,
    /// The next keyspace id to hand out.
    next_keyspace_id: u32,
}

/// What a test runs before a funk build, or between it and its switch.
#[cfg(test)]
type ChunkHook = Arc<dyn Fn(&Chunk) + Send + Sync>;

/// A store in the chunked layout.
pub(crate) struct ChunkStore {
    dir: PathBuf,
    options: Options,
    fs: Arc<dyn FileSystem>,
    counters: Arc<Counters>,
    snapshots: Arc<SnapshotRegistry>,
    /// The last sequence number handed out (the paper's GV): reads see
    /// the writes up to it, each chunk once its pending put below it is
    /// complete (`pending.rs`).
    last_sequence: AtomicU64,
    /// Puts return in number order (`append_order.rs`).
    append_order: append_order::AppendOrder,
    /// Every write numbered up to it is synced (in the logs or funks):
    /// `CHUNKS` records it, and recovery keeps only a gapless run of
    /// writes past it (`durable_prefix.rs`).
    durable_sequence: AtomicU64,
    /// The store's incarnation (`incarnations.rs`).
    incarnation: u32,
    /// `durability=async`: every write up to it is durable and recorded in
    /// `CHECKPOINT`; funk rebalances merge nothing past it. `u64::MAX` in
    /// the synchronous mode.
    checkpointed: AtomicU64,
    /// `durability=async`: the background checkpointer.
    checkpointer: checkpointer::Checkpointer,
    /// When the last checkpoint began.
    last_checkpoint_at: Mutex<std::time::Instant>,
    /// Group commit of syncing writers.
    sync_group: sync_group::SyncGroup,
    /// Every live keyspace, the default one first; replaced whole (under
    /// the metadata lock) when one is created or dropped.
    spaces: RwLock<Arc<Vec<Arc<ChunkSpace>>>>,
    /// The default keyspace (also first in `spaces`).
    default: Arc<ChunkSpace>,
    /// The metadata lock; `None` in a read-only store.
    writer: Mutex<Option<Writer>>,
    /// The funk tables open (`funk_tables.rs`), with the tables' context.
    tables: Arc<funk_tables::FunkTables>,
    munks: MunkCache,
    row_cache: RowCache,
    read_only: bool,
    closed: AtomicBool,
    /// A failed log append or rebalance: the logs may end in a partial
    /// record, so writes are refused until reopen.
    failed: Mutex<Option<Error>>,
    lock: Mutex<Option<Box<dyn FileLock>>>,
    /// The background threads building funk rebalances
    /// (`chunk_rebalance_threads`).
    builds: build_queue::BuildQueue,
    /// Run by a funk rebalance before its build (tests hold a build or
    /// inject a fault there).
    #[cfg(test)]
    before_build: Mutex<Option<ChunkHook>>,
    /// Run by a funk rebalance between its build and its switch (tests
    /// hold a build there).
    #[cfg(test)]
    before_switch: Mutex<Option<ChunkHook>>,
    /// Run by a sync round's leader before it syncs (tests hold a round
    /// there).
    #[cfg(test)]
    before_sync_round: Mutex<Option<Arc<dyn Fn() + Send + Sync>>>,
    /// Run by a put once it took its numbers, before it appends (tests
    /// hold a put there, under its chunks' append locks).
    #[cfg(test)]
    after_numbers_taken: Mutex<Option<Arc<dyn Fn() + Send + Sync>>>,
}

impl ChunkStore {
    /// Opens (or creates) the chunked store in `dir` and starts its
    /// `chunk_rebalance_threads` build threads.
    pub fn open(dir: &Path, options: Options, fs: Arc<dyn FileSystem>) -> Result<Arc<ChunkStore>> {
        let store = Arc::new(open::open(dir, options, fs, false)?);
        store
            .builds
            .start(&store, store.options.chunk_rebalance_threads)?;
        if store.is_async() {
            let interval = std::time::Duration::from_millis(store.options.checkpoint_interval);
            store.checkpointer.start(&store, interval)?;
        }
        Ok(store)
    }

    /// Opens the store for reading only: nothing is written, no lock taken,
    /// no thread started.
    pub fn open_read_only(
        dir: &Path,
        options: Options,
        fs: Arc<dyn FileSystem>,
    ) -> Result<Arc<ChunkStore>> {
        // Through the read-only file system: a mistaken write cannot land.
        let store = open::open(
            dir,
            options,
            crate::db::read_only_fs::ReadOnlyFs::wrap(fs),
            true,
        )?;
        Ok(Arc::new(store))
    }

    /// Whether writes become durable by checkpoints (`durability=async`).
    fn is_async(&self) -> bool {
        self.options.durability == crate::options::Durability::Async && !self.read_only
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn options(&self) -> &Options {
        &self.options
    }

    pub fn fs(&self) -> &dyn FileSystem {
        self.fs.as_ref()
    }

    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    fn check_open(&self) -> Result<()> {
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        Ok(())
    }

    /// Every live keyspace, the default one first.
    pub fn spaces(&self) -> Arc<Vec<Arc<ChunkSpace>>> {
        self.spaces.read().clone()
    }

    /// The default keyspace.
    pub fn default_space(&self) -> &Arc<ChunkSpace> {
        &self.default
    }

    /// Every chunk of every keyspace (the munk cache's candidates).
    fn every_chunk(&self) -> Vec<Arc<Chunk>> {
        self.spaces()
            .iter()
            .flat_map(|s| s.chunk_set().chunks.clone())
            .collect()
    }

    /// Refuses writes from now on (until reopen).
    fn fail(&self, e: &Error) {
        self.failed.lock().get_or_insert_with(|| e.clone());
    }

    /// Gives `chunk` a munk if the munk cache admits it, under its
    /// `rebalance_lock` (shared) and `append_lock`, so that the munk
    /// misses no put; `try_only` (a get) gives up rather than wait.
    fn admit_munk(&self, chunk: &Arc<Chunk>, try_only: bool) -> Result<()> {
        let shared = match try_only {
            true => chunk.rebalance_lock.try_read(),
            false => Some(chunk.rebalance_lock.read()),
        };
        let Some(_shared) = shared else {
            return Ok(());
        };
        let appending = match try_only {
            true => chunk.append_lock.try_lock(),
            false => Some(chunk.append_lock.lock()),
        };
        if appending.is_none() || chunk.is_retired() {
            return Ok(());
        }
        self.munks.admit(self, chunk)
    }

    /// Syncs every log holding unsynced appends. Under the append locks
    /// (`sync_dirty_logs`): syncing chunk logs one by one while writers
    /// append could make a later write durable and an earlier one, in a
    /// log synced before it, not.
    pub fn flush(&self) -> Result<()> {
        self.check_open()?;
        if self.read_only {
            return Err(Error::ReadOnly("flush".into()));
        }
        if self.is_async() {
            return self.take_checkpoint().map(|_| ());
        }
        self.sync_dirty_logs()
    }

    /// Makes every write that returned before it durable, as a synced write
    /// would: in the synchronous mode one shared sync round
    /// (`sync_group.rs`), in the asynchronous one the next checkpoint.
    pub fn sync_log(&self) -> Result<()> {
        self.check_open()?;
        if self.read_only {
            return Err(Error::ReadOnly("sync_log".into()));
        }
        if self.is_async() {
            return self.wait_checkpointed(self.last_sequence.load(Ordering::SeqCst));
        }
        self.sync_group.sync(|| self.sync_dirty_logs())
    }

    /// Funk-rebalances every chunk overlapping `[start, end]` whose log
    /// holds anything: logs merged into tables, versions no snapshot needs
    /// dropped, chunks past `chunk_size` split.
    pub fn compact_range(
        &self,
        space: &ChunkSpace,
        start: Option<&[u8]>,
        end: Option<&[u8]>,
    ) -> Result<()> {
        self.check_open()?;
        space.check_live()?;
        if self.read_only {
            return Err(Error::ReadOnly("compact_range".into()));
        }
        // Tables take durable writes only: all of them, now.
        match self.is_async() {
            true => self.take_checkpoint().map(|_| ())?,
            false => self.sync_dirty_logs()?,
        }
        let mut at = start.map(<[u8]>::to_vec);
        loop {
            let set = space.chunk_set();
            let index = at.as_deref().map_or(0, |k| set.locate(k));
            let Some(chunk) = set.chunks.get(index) else {
                return Ok(());
            };
            if end.is_some_and(|e| chunk.start.as_slice() > e) {
                return Ok(());
            }
            let next = set.chunks.get(index + 1).map(|c| c.start.clone());
            if chunk.log.len() > 0
                && !rebalance::rebalance(self, space, chunk, rebalance::IfBuilding::Wait)?
                && chunk.is_retired()
            {
                // Another thread's build replaced it: its replacements may
                // hold puts of the tail; look again at the same key.
                continue;
            }
            match next {
                Some(n) => at = Some(n),
                None => return Ok(()),
            }
        }
    }

    /// The layout's figures and the shared counters.
    pub fn stats(&self) -> Stats {
        let chunks = self.every_chunk();
        let tables: Vec<_> = chunks.iter().filter_map(|c| c.table).collect();
        let (hits, misses) = self.row_cache.hits_and_misses();
        let mut s = Stats {
            keyspaces: self.spaces().len(),
            chunks: chunks.len(),
            munks_resident: chunks.iter().filter(|c| c.munk().is_some()).count(),
            munk_bytes: self.munks.resident_bytes(),
            row_cache_bytes: self.row_cache.bytes(),
            row_cache_hit_ratio: match hits + misses {
                0 => 0.0,
                n => hits as f64 / n as f64,
            },
            tables: tables.len(),
            open_segment_files: self.tables.open_count(),
            live_table_bytes: tables.iter().map(|t| t.length).sum(),
            last_sequence: self.last_sequence.load(Ordering::Acquire),
            background_error: self.failed.lock().as_ref().map(|e| e.to_string()),
            ..Stats::default()
        };
        if let Some(cache) = &self.tables.context().cache {
            s.block_cache_hits = cache.hits();
            s.block_cache_misses = cache.misses();
            (s.block_cache_passing_hits, s.block_cache_passing_misses) = cache.passing_lookups();
            s.block_cache_bytes = cache.usage();
            s.block_cache_metadata_bytes = cache.reserved();
        }
        s.copy_counters(&self.counters);
        let table_bytes = s.compaction_bytes_written;
        s.engine_bytes_written = s.log_bytes_written + table_bytes + s.manifest_bytes_written;
        s.write_amplification = if s.user_bytes_written == 0 {
            0.0
        } else {
            (table_bytes + s.manifest_bytes_written) as f64 / s.user_bytes_written as f64
        };
        s.fsyncs = s.fsyncs_log + s.fsyncs_compaction + s.fsyncs_manifest;
        s
    }

    /// Bytes of memory the store holds: the block cache, the chunk logs'
    /// filters, sorted views and write buffers, the munks and the row
    /// cache.
    pub fn memory_bytes(&self) -> u64 {
        let chunks = self.every_chunk();
        let filters: usize = chunks.iter().map(|c| c.log.index_bytes()).sum();
        self.tables
            .context()
            .cache
            .as_ref()
            .map_or(0, |c| c.usage())
            + filters as u64
            + self.log_buffer_bytes()
            + self.munks.resident_bytes()
            + self.row_cache.bytes()
    }

    /// Bytes of memory the chunk logs' write buffers hold (within
    /// `chunk_log_buffer_bytes`, `ChunkStore::log_group_bytes`).
    pub fn log_buffer_bytes(&self) -> u64 {
        self.every_chunk()
            .iter()
            .map(|c| c.log.buffer_bytes() as u64)
            .sum()
    }

    /// Stops the build threads and writes and releases the lock; later
    /// calls get `Closed`.
    pub fn close(&self) -> Result<()> {
        if self.closed.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        // A build under way sees `closed` and abandons (`rebalance.rs`).
        self.builds.stop();
        self.checkpointer.stop();
        // Every append lock: no append is under way (a put withdraws
        // before it releases them), and none follows (a writer checks
        // `closed` under its append locks), so the log lengths recorded
        // hold whole batches.
        let chunks = self.every_chunk();
        let _appending: Vec<_> = chunks.iter().map(|c| c.append_lock.lock()).collect();
        // Under the metadata lock: the list names the current sets (a
        // rebalance's switch finding the store closed installs nothing).
        let writer = self.writer.lock();
        // Persists the counters (a failed store keeps its last list), and
        // the logs' lengths, so that the next open reads no log.
        let persisted = match (&*writer, self.failed.lock().is_some()) {
            (Some(w), false) => self
                .write_chunk_list(w)
                .and_then(|()| self.record_clean_close())
                .and_then(|()| self.mark_clean_close()),
            _ => Ok(()),
        };
        self.lock.lock().take();
        persisted
    }
}

impl Drop for ChunkStore {
    fn drop(&mut self) {
        // Unclosed (a test's store): the threads must not outlive it.
        self.builds.stop();
        self.checkpointer.stop();
    }
}

#[cfg(test)]
mod async_tests;
#[cfg(test)]
mod build_queue_tests;
#[cfg(test)]
mod chunk_iter_tests;
#[cfg(test)]
mod concurrency_tests;
#[cfg(test)]
mod keyspace_tests;
#[cfg(test)]
mod lazy_open_tests;
#[cfg(test)]
mod log_buffer_tests;
#[cfg(test)]
mod many_chunks_tests;
#[cfg(test)]
mod range_del_tests;
#[cfg(test)]
mod switch_fault_tests;
#[cfg(test)]
pub(crate) mod tests;
