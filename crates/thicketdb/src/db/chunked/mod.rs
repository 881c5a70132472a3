//! YoDB's chunked layout (`layout=chunked`): the store is a list of chunks,
//! each owning a contiguous key range and a funk on disk (one table plus an
//! append-only chunk log). There is no global write-ahead log: a put is
//! written once, to its chunk's log, until a funk rebalance merges the log
//! into a new table (and splits the chunk when it grew past `chunk_size`).
//!
//! It sits inside `db` because it shares `db`'s write batches, snapshot
//! registry and user-key iterator (`docs/architecture.md`, *Layouts*).
//!
//! Concurrency (YoDB §3.2-§3.4; `docs/architecture.md`, *Chunked layout*,
//! gives the lock order and who holds what). Writes run concurrently: a
//! put takes its chunks' `rebalance_lock`s shared and `append_lock`s,
//! takes its sequence numbers (`sequencer.rs`), appends, and publishes in
//! `last_sequence` strictly in allocation order. Why a scan never sees a
//! put out of order with one global sequence: each chunk receives its
//! numbers in order (they are taken under its `append_lock`), and
//! `last_sequence` reaches `t` only once every write numbered up to `t` is
//! in every chunk log, munk and row cache it touches; a reader at `s`
//! sees exactly the writes up to `s`, in every chunk. It costs one atomic
//! add and one publish per batch, one atomic load per read. Sync writes
//! share fsyncs (`sync_group.rs`). A funk rebalance is built by the one
//! thread holding the chunk's `funk_change_lock` while puts go on (a build
//! thread the writer queued the chunk for, `build_queue.rs`, or with
//! `chunk_rebalance_threads=0` the writer); only its switch holds the
//! `rebalance_lock` exclusively (`rebalance.rs`).
//! Readers take no lock: they clone the current `ChunkSet` (chunk index
//! and list in one `Arc`, swapped whole on a rebalance); a replaced chunk
//! keeps its files until its last reader drops it.

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
pub mod incarnations;
mod keyspaces;
pub mod log_filter;
mod log_sorted;
pub mod manifest;
mod munk;
pub mod munk_list;
mod open;
mod rebalance;
mod row_cache;
mod sequencer;
mod sync_group;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};

use super::batch::WriteBatch;
use super::call_options::{ReadOptions, WriteOptions};
use super::iter::DbIterator;
use super::snapshot::{Snapshot, SnapshotRegistry};
use super::stats_report::Stats;
use crate::db::batch::OpKind;
use crate::error::{Error, Result};
use crate::format::internal_key::{InternalKey, ValueKind};
use crate::io::{FileLock, FileSystem};
use crate::options::Options;
use crate::stats::Counters;
use crate::table::TableContext;
use crate::version::range_del_view::RangeDelView;
use batch_log::BatchLog;
use chunk::{Chunk, Found};
use chunk_iter::ChunkRunIterator;
pub(crate) use chunk_space::ChunkSpace;
use chunk_views::{ChunkRangeDels, ChunkViews};
use munk::MunkCache;
use row_cache::{Cached, RowCache};

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
        let first = lower.map_or(0, |l| self.locate(l));
        let end = upper.map_or(self.chunks.len(), |u| {
            self.chunks.partition_point(|c| c.start.as_slice() < u)
        });
        &self.chunks[first..end.max(first)]
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
    /// The last published sequence number: every write up to it is in
    /// every chunk log (and munk, row cache) it touches.
    last_sequence: AtomicU64,
    /// Hands out sequence numbers and publishes them in order.
    sequencer: sequencer::Sequencer,
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
    context: TableContext,
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

    /// Applies `batch` atomically: across chunks through the batch log.
    pub fn write(&self, mut batch: WriteBatch, opts: WriteOptions) -> Result<()> {
        self.check_open()?;
        if self.read_only {
            return Err(Error::ReadOnly("write".into()));
        }
        if batch.is_empty() {
            return Ok(());
        }
        if let Some(e) = &*self.failed.lock() {
            return Err(Error::Background(Box::new(e.clone())));
        }
        let result = self.write_batch(&mut batch, opts);
        match &result {
            // A write that met `close` under its append locks took no
            // number and appended nothing: the store is not damaged, and
            // failing it would keep `close` from recording a clean close.
            Err(Error::Closed) | Ok(()) => {}
            Err(e) => self.fail(e),
        }
        result
    }

    /// Refuses writes from now on (until reopen), and lets the writers
    /// waiting to publish after a failed one give up.
    fn fail(&self, e: &Error) {
        self.failed.lock().get_or_insert_with(|| e.clone());
        self.sequencer.wake_all();
    }

    /// The write path: append under the chunks' shared `rebalance_lock`s
    /// and `append_lock`s, sync (group commit), publish in order, then
    /// rebalance the chunks that grew past their limits.
    fn write_batch(&self, batch: &mut WriteBatch, opts: WriteOptions) -> Result<()> {
        let (spaces, chunks, first, last) = loop {
            let spaces = self.spaces();
            let sets: Vec<Arc<ChunkSet>> = spaces.iter().map(|s| s.chunk_set()).collect();
            let groups = group_by_chunk(&spaces, &sets, batch)?;
            if groups.is_empty() {
                // Every update was of a dropped keyspace.
                return Ok(());
            }
            // In group order: the lock order.
            let chunks: Vec<(usize, Arc<Chunk>)> = groups
                .keys()
                .map(|&(s, i)| (s, sets[s].chunks[i].clone()))
                .collect();
            let shared: Vec<_> = chunks.iter().map(|(_, c)| self.lock_shared(c)).collect();
            // A chunk retired since the sets were read is replaced: group
            // again. A chunk not retired now stays current while shared.
            if chunks.iter().any(|(_, c)| c.is_retired()) {
                continue;
            }
            // `None`: a keyspace drop retired a chunk meanwhile.
            let Some((first, last)) = self.append(batch, &spaces, &groups, &chunks)? else {
                continue;
            };
            drop(shared);
            break (spaces, chunks, first, last);
        };
        if opts.sync && !self.is_async() {
            self.sync_group.sync(|| {
                #[cfg(test)]
                {
                    // Not under the lock: the hook may block.
                    let hook = self.before_sync_round.lock().clone();
                    if let Some(hook) = hook {
                        hook();
                    }
                }
                self.sync_dirty_logs()
            })?;
        }
        self.sequencer
            .publish(&self.last_sequence, first, last, || {
                self.failed.lock().clone()
            })?;
        if opts.sync && self.is_async() {
            // After publication: the checkpoint waits for it.
            self.wait_checkpointed(last)?;
        }
        for (space, chunk) in chunks.iter().rev() {
            let space = &spaces[*space];
            if self.munks.touch(self, chunk, 1) {
                self.admit_munk(chunk, false)?;
            }
            let limit = match chunk.munk() {
                Some(_) => space.options.funk_log_limit_with_munk,
                None => space.options.funk_log_limit,
            };
            if chunk.log.len() > limit {
                self.rebalance_past_limit(space, chunk, limit)?;
            }
        }
        self.munks.enforce_budget(self);
        Ok(())
    }

    /// A chunk whose log grew past `limit`: queued for a build thread, or
    /// (no threads) built here unless another thread builds it. With
    /// threads, the log counts from the tail a switch left in it (puts
    /// that came during its build; a chunk written as fast as it is built
    /// would otherwise be rebuilt for the tail alone), and past
    /// `BACKLOG_FACTOR` times the limit the writer waits for the build
    /// under way, or runs it (`build_queue.rs`).
    fn rebalance_past_limit(
        &self,
        space: &Arc<ChunkSpace>,
        chunk: &Arc<Chunk>,
        limit: u64,
    ) -> Result<()> {
        use rebalance::IfBuilding;
        let grown = chunk.log.len().saturating_sub(chunk.tail_bytes);
        let built = if !self.builds.is_running() {
            rebalance::rebalance(self, space, chunk, IfBuilding::Skip)
        } else if grown <= limit {
            Ok(false)
        } else if grown > limit.saturating_mul(build_queue::BACKLOG_FACTOR) {
            Counters::add(&self.counters.chunk_puts_waited_for_build, 1);
            rebalance::rebalance(self, space, chunk, IfBuilding::Wait)
        } else {
            self.builds.push(space, chunk, &self.counters);
            Ok(false)
        };
        match built {
            // The write is published; a build `close` stopped wrote
            // nothing the store keeps.
            Ok(_) | Err(Error::Closed) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Takes `chunk`'s `rebalance_lock` shared, counting a put that found
    /// the chunk immutable (a rebalance switching it).
    fn lock_shared<'a>(&self, chunk: &'a Chunk) -> parking_lot::RwLockReadGuard<'a, ()> {
        chunk.rebalance_lock.try_read().unwrap_or_else(|| {
            Counters::add(&self.counters.chunk_puts_waited_for_switch, 1);
            chunk.rebalance_lock.read()
        })
    }

    /// Appends the batch's groups to their chunks (`chunks`, in group
    /// order, current while their `rebalance_lock`s are held shared) and
    /// the caches; returns the sequence numbers it took, or `None` (and
    /// takes none) when a keyspace drop retired one of the chunks.
    fn append(
        &self,
        batch: &WriteBatch,
        spaces: &[Arc<ChunkSpace>],
        groups: &std::collections::BTreeMap<(usize, usize), WriteBatch>,
        chunks: &[(usize, Arc<Chunk>)],
    ) -> Result<Option<(u64, u64)>> {
        let appending: Vec<_> = chunks.iter().map(|(_, c)| c.append_lock.lock()).collect();
        // `close` records the logs' lengths under every append lock.
        self.check_open()?;
        // A drop retires its chunks under every append lock: a number
        // appended to a dropped chunk's log would leave a gap that makes
        // recovery drop every later write (`durable_prefix.rs`).
        if chunks.iter().any(|(_, c)| c.is_retired()) {
            return Ok(None);
        }
        let count: u64 = groups.values().map(|g| g.len() as u64).sum();
        let first = self.sequencer.allocate(count);
        let mut logged = 0;
        if groups.len() > 1 {
            // Spanning chunks: the whole batch goes to the batch log first,
            // so that recovery can complete it in every chunk. Synced with
            // the group, before any chunk log (`sync_dirty_logs`).
            let mut whole = WriteBatch::new();
            for sub in groups.values() {
                whole.append(sub);
            }
            let mut meta = self.writer.lock();
            let meta = meta
                .as_mut()
                .ok_or_else(|| Error::ReadOnly("write".into()))?;
            logged += meta.batch_log.append(whole.encode(first), false)?;
        }
        let mut sequence = first;
        for ((space, chunk), sub) in chunks.iter().zip(groups.values()) {
            let space = &spaces[*space];
            let mut sub = sub.clone();
            let count = sub.len() as u64;
            let record = sub.encode(sequence);
            logged += chunk.log.append(record, false)?;
            // The munk and the row cache take the writes before they are
            // published: a reader that sees the sequence finds them there.
            let munk = chunk.munk();
            let before = munk.as_ref().map_or(0, |m| m.bytes());
            let decoded = super::batch::DecodedBatch::parse(record).map_err(Error::invariant)?;
            let mut seq = sequence;
            decoded
                .for_each(|op| {
                    self.apply_to_caches(space, munk.as_deref(), &op, seq);
                    seq += 1;
                })
                .map_err(Error::invariant)?;
            if let Some(m) = munk.filter(|m| !m.is_sealed()) {
                // Evicted meanwhile: its bytes left the budget with it.
                self.munks.grew(m.bytes() - before);
            }
            // Under the append lock: the munk misses no put.
            self.munks.rebalance_if_grown(self, chunk);
            sequence += count;
        }
        drop(appending);
        let c = &self.counters;
        Counters::add(&c.user_bytes_written, batch.user_bytes());
        Counters::add(&c.user_writes, batch.len() as u64);
        Counters::add(&c.write_groups, 1);
        Counters::add(&c.log_bytes_written, logged);
        Ok(Some((first, sequence - 1)))
    }

    /// Gives `chunk` a munk if the munk cache admits it, under its
    /// `rebalance_lock` (shared) and `append_lock`, so that the munk
    /// misses no put; `try_only` (a get) gives up rather than wait.
    fn admit_munk(&self, chunk: &Chunk, try_only: bool) -> Result<()> {
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

    /// Applies one update at `seq` to the row cache and the chunk's munk.
    fn apply_to_caches(
        &self,
        space: &ChunkSpace,
        munk: Option<&munk::Munk>,
        op: &super::batch::BatchOp<'_>,
        seq: u64,
    ) {
        match op.kind {
            OpKind::Point(kind) => {
                let value = (kind == ValueKind::Value).then_some(op.value);
                self.row_cache.put(&space.row_key(op.key), value, seq);
                if let Some(m) = munk {
                    m.add(seq, kind, op.key, op.value);
                }
            }
            OpKind::RangeDeletion => {
                let (start, end) = (space.row_key(op.key), space.row_key(op.value));
                self.row_cache.delete_range(&start, &end, seq);
                if let Some(m) = munk {
                    m.add_range_deletion(seq, op.key, op.value);
                }
            }
        }
    }

    /// Syncs every log holding unsynced appends, the batch log first (a
    /// cross-chunk batch's parts are never durable before it). One sync
    /// per log covers all the writes since its last one, in every chunk.
    /// Concurrent syncing writers share it (`sync_group.rs`). Every
    /// chunk's `append_lock` and the metadata lock are held throughout:
    /// the logs then hold exactly the batches numbered up to the last one
    /// handed out (each batch takes its numbers and appends under its
    /// chunks' append locks), and the durable sequence moves up to the
    /// last number handed out. A power loss in the middle of the round
    /// may keep a later write and lose an earlier one: recovery keeps
    /// only the writes before the first one lost (`durable_prefix.rs`).
    /// REQUIRES: no `append_lock` held by the caller.
    fn sync_dirty_logs(&self) -> Result<()> {
        self.with_logs_synced(|_| Ok(()))
    }

    /// Runs `f` with the metadata lock's content once every dirty log is
    /// synced (`sync_dirty_logs`), holding every append lock throughout:
    /// no write comes between the sync and `f`.
    /// REQUIRES: no `append_lock` held by the caller.
    fn with_logs_synced<T>(&self, f: impl FnOnce(Option<&mut Writer>) -> Result<T>) -> Result<T> {
        loop {
            let chunks = self.every_chunk();
            let _appending: Vec<_> = chunks.iter().map(|c| c.append_lock.lock()).collect();
            let mut meta = self.writer.lock();
            // Chunks are replaced under the metadata lock: none retired
            // and none added means no other log takes appends.
            if chunks.iter().any(|c| c.is_retired()) || self.every_chunk().len() != chunks.len() {
                continue;
            }
            // Every number handed out is in the logs (each batch takes
            // its numbers and appends under its chunks' append locks).
            let allocated = self.sequencer.last_allocated();
            let mut syncs = match meta.as_mut() {
                Some(meta) => u64::from(meta.batch_log.sync_if_dirty()?),
                None => 0,
            };
            for chunk in &chunks {
                syncs += u64::from(chunk.log.sync_if_dirty()?);
            }
            Counters::add(&self.counters.fsyncs_log, syncs);
            self.durable_sequence.fetch_max(allocated, Ordering::AcqRel);
            return f(meta.as_mut());
        }
    }

    /// The newest value of `key` in `space` visible to `opts`' snapshot
    /// (or now).
    pub fn get(
        &self,
        space: &ChunkSpace,
        key: &[u8],
        opts: &ReadOptions,
    ) -> Result<Option<Vec<u8>>> {
        self.check_open()?;
        space.check_live()?;
        Counters::add(&self.counters.gets, 1);
        // The chunk set before the sequence: a set a rebalance installed
        // since keeps every version at or above the sequence read after.
        let (set, index, munk, sequence) = loop {
            let set = space.chunk_set();
            if set.chunks.is_empty() {
                // Dropped since the check above.
                space.check_live()?;
            }
            let index = set.locate(key);
            let chunk = &set.chunks[index];
            let munk = chunk.munk();
            let sequence = match &opts.snapshot {
                Some(s) => s.sequence(),
                None => self.last_sequence.load(Ordering::Acquire),
            };
            // Replaced since it was taken: a put this sequence covers may
            // be in the replacement only.
            if !chunk.is_retired() && !munk.as_ref().is_some_and(|m| m.is_sealed()) {
                break (set, index, munk, sequence);
            }
        };
        let chunk = &set.chunks[index];
        if self.munks.touch(self, chunk, 1) && !self.read_only {
            // A get does not wait for writers to build a munk.
            self.admit_munk(chunk, true)?;
        }
        if let Some(munk) = munk {
            Counters::add(&self.counters.chunk_gets_from_munk, 1);
            let lookup = InternalKey::new(key, sequence, ValueKind::SEEK);
            return Ok(match munk.get(lookup.encoded()) {
                Some(crate::memtable::Lookup::Value(v)) => Some(v),
                _ => None,
            });
        }
        let row_key = space.row_key(key);
        if let Cached::Row(value) = self.row_cache.get(&row_key, sequence) {
            Counters::add(&self.counters.chunk_gets_from_row_cache, 1);
            return Ok(value);
        }
        let value = match chunk.get(key, sequence, &self.counters)? {
            Found::Value(v) => Some(v),
            Found::Deleted => None,
            Found::Absent => return Ok(None),
        };
        self.row_cache.insert(&row_key, value.clone(), sequence);
        Ok(value)
    }

    /// A consistent view at the latest write.
    pub fn snapshot(&self) -> Snapshot {
        Snapshot::latest(&self.last_sequence, self.snapshots.clone())
    }

    /// An iterator over the chunks of `space` that `opts`' bounds
    /// overlap, at one snapshot. A chunk is read (and counted as an
    /// access for the munk cache) only when the cursor reaches it
    /// (`chunk_views.rs`).
    pub fn iter(self: &Arc<Self>, space: &ChunkSpace, opts: ReadOptions) -> Result<DbIterator> {
        self.check_open()?;
        space.check_live()?;
        let snapshot = match &opts.snapshot {
            Some(s) => s.clone(),
            None => self.snapshot(),
        };
        // Taken after the snapshot: its chunks hold every version the
        // snapshot sees.
        let set = space.chunk_set();
        let chunks = set
            .overlapping(opts.lower_bound.as_deref(), opts.upper_bound.as_deref())
            .to_vec();
        let views = Arc::new(ChunkViews::new(chunks, Arc::downgrade(self)));
        let order = self.options.comparator.clone();
        let cursor = ChunkRunIterator::new(views.clone(), order.clone(), opts.fill_cache);
        let mut range_dels = RangeDelView::of_fragments(snapshot.sequence());
        range_dels.add_parted(0, Box::new(ChunkRangeDels::new(views.clone())));
        Ok(DbIterator::over_sources(
            vec![Box::new(cursor)],
            snapshot,
            opts,
            order,
            Box::new(views),
        )
        .with_range_dels(range_dels))
    }

    /// Counts a scan's access of `chunk` for the munk cache and offers a
    /// hot chunk a munk, without waiting for writers (as a get does).
    fn touch_for_scan(&self, chunk: &Chunk) -> Result<()> {
        if self.munks.touch(self, chunk, 1) && !self.read_only && !chunk.is_retired() {
            self.admit_munk(chunk, true)?;
        }
        Ok(())
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
        if self.is_async() {
            // Tables take checkpointed writes only: all of them, now.
            self.take_checkpoint()?;
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
        let tables: Vec<_> = chunks.iter().filter_map(|c| c.table.clone()).collect();
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
            live_table_bytes: tables.iter().map(|t| t.length()).sum(),
            last_sequence: self.last_sequence.load(Ordering::Acquire),
            background_error: self.failed.lock().as_ref().map(|e| e.to_string()),
            ..Stats::default()
        };
        if let Some(cache) = &self.context.cache {
            s.block_cache_hits = cache.hits();
            s.block_cache_misses = cache.misses();
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
    /// filters and sorted views, the munks and the row cache.
    pub fn memory_bytes(&self) -> u64 {
        let filters: usize = self.every_chunk().iter().map(|c| c.log.index_bytes()).sum();
        self.context.cache.as_ref().map_or(0, |c| c.usage())
            + filters as u64
            + self.munks.resident_bytes()
            + self.row_cache.bytes()
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
        // Every append lock, then every appended batch published: no
        // append is under way, and none follows (a writer checks `closed`
        // under its append locks), so the log lengths recorded hold whole,
        // published batches.
        let chunks = self.every_chunk();
        let _appending: Vec<_> = chunks.iter().map(|c| c.append_lock.lock()).collect();
        let published = self
            .sequencer
            .wait_all_published(&self.last_sequence, || self.failed.lock().clone());
        // Under the metadata lock: the list names the current sets (a
        // rebalance's switch finding the store closed installs nothing).
        let writer = self.writer.lock();
        // Persists the counters (a failed store keeps its last list), and
        // the logs' lengths, so that the next open reads no log.
        let persisted = match (&*writer, self.failed.lock().is_some() || published.is_err()) {
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

/// The batch's updates grouped by the keyspace (index in `spaces`, whose
/// chunk sets are `sets`) and chunk owning their keys, in that order; each
/// group keeps the batch's order (so two updates of one key keep theirs).
/// A range deletion goes to every chunk it overlaps, cut to the chunk's
/// keys; an empty one deletes nothing and is left out, as is an update of
/// a keyspace that is not (any more) in `spaces` (dropped).
fn group_by_chunk(
    spaces: &[Arc<ChunkSpace>],
    sets: &[Arc<ChunkSet>],
    batch: &mut WriteBatch,
) -> Result<std::collections::BTreeMap<(usize, usize), WriteBatch>> {
    let mut groups: std::collections::BTreeMap<(usize, usize), WriteBatch> = Default::default();
    let encoded = batch.encode(0);
    let decoded = super::batch::DecodedBatch::parse(encoded).map_err(Error::invariant)?;
    let mut failed = None;
    decoded
        .for_each(|op| {
            let Some(space) = spaces.iter().position(|s| s.id == op.keyspace) else {
                return;
            };
            let set = &sets[space];
            let result = match op.kind {
                OpKind::Point(_) => groups
                    .entry((space, set.locate(op.key)))
                    .or_default()
                    .push_op(&op),
                OpKind::RangeDeletion => {
                    let (start, end) = (op.key, op.value);
                    let first = set.locate(start);
                    let chunks = set.overlapping(Some(start), Some(end));
                    chunks.iter().enumerate().try_for_each(|(i, chunk)| {
                        let from = start.max(chunk.start.as_slice());
                        let to = match set.chunks.get(first + i + 1) {
                            Some(next) => end.min(next.start.as_slice()),
                            None => end,
                        };
                        if from >= to {
                            return Ok(());
                        }
                        let clipped = super::batch::BatchOp {
                            key: from,
                            value: to,
                            ..op
                        };
                        groups
                            .entry((space, first + i))
                            .or_default()
                            .push_op(&clipped)
                    })
                }
            };
            if let Err(e) = result {
                failed.get_or_insert(e);
            }
        })
        .map_err(Error::invariant)?;
    match failed {
        Some(e) => Err(e),
        None => Ok(groups),
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
mod range_del_tests;
#[cfg(test)]
pub(crate) mod tests;
