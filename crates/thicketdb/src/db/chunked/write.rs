//! The chunked layout's write path: a batch grouped by keyspace and chunk,
//! each group appended to its chunk's log, munk and row cache under the
//! chunk's locks, sequence numbers published in order, sync rounds, and
//! the funk rebalances a write may start (`docs/architecture.md`, *Chunked
//! layout*).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::chunk::Chunk;
use super::chunk_space::ChunkSpace;
use super::pending::Announced;
use super::{ChunkSet, ChunkStore, Writer};
use crate::db::batch::{OpKind, WriteBatch};
use crate::db::call_options::WriteOptions;
use crate::error::{Error, Result};
use crate::format::internal_key::ValueKind;
use crate::stats::Counters;

impl ChunkStore {
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

    /// The write path: announce and append under the chunks' shared
    /// `rebalance_lock`s and `append_lock`s (waiting for no other chunk's
    /// put, `pending.rs`), sync (group commit), then rebalance the chunks
    /// that grew past their limits.
    pub(super) fn write_batch(&self, batch: &mut WriteBatch, opts: WriteOptions) -> Result<()> {
        let (spaces, chunks, last) = loop {
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
            // A switch that failed after its chunk list may have replaced
            // `CHUNKS` fails the store under the chunk's exclusive lock: a
            // writer that checked before and waited must not append to the
            // old chunk (`rebalance::switch`).
            if let Some(e) = &*self.failed.lock() {
                return Err(Error::Background(Box::new(e.clone())));
            }
            // `None`: a keyspace drop retired a chunk meanwhile.
            let Some((_, last)) = self.append(batch, &spaces, &groups, &chunks)? else {
                continue;
            };
            drop(shared);
            break (spaces, chunks, last);
        };
        if !self.is_async() {
            // Before returning, every write numbered below this one must
            // be in a log too (`append_order.rs`); asynchronous puts are
            // kept only up to a checkpoint anyway.
            self.append_order.wait_through(last);
        }
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
        if opts.sync && self.is_async() {
            self.wait_checkpointed(last)?;
        }
        for (space, chunk) in chunks.iter().rev() {
            let space = &spaces[*space];
            // After the put withdrew: a munk rebalance stops the chunk's
            // puts only, never a reader or another chunk's put.
            self.rebalance_munk_if_grown(chunk);
            if self.munks.touch(chunk, 1, true) {
                self.admit_munk(chunk, false)?;
            }
            let limit = space.log_limit(chunk, self.munks.write_share(chunk));
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
    pub(super) fn rebalance_past_limit(
        &self,
        space: &Arc<ChunkSpace>,
        chunk: &Arc<Chunk>,
        limit: u64,
    ) -> Result<()> {
        use super::rebalance::IfBuilding;
        let grown = chunk.log.len().saturating_sub(chunk.tail_bytes);
        let built = if !self.builds.is_running() {
            super::rebalance::rebalance(self, space, chunk, IfBuilding::Skip)
        } else if grown <= limit {
            Ok(false)
        } else if grown > limit.saturating_mul(super::build_queue::BACKLOG_FACTOR) {
            Counters::add(&self.counters.chunk_puts_waited_for_build, 1);
            super::rebalance::rebalance(self, space, chunk, IfBuilding::Wait)
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

    /// Rebuilds `chunk`'s munk once it grew past its rebalance size
    /// (`munk.rs`), under the chunk's shared `rebalance_lock` and
    /// `append_lock` (the munk misses no put; no switch runs meanwhile).
    /// REQUIRES: no lock of the chunk held.
    pub(super) fn rebalance_munk_if_grown(&self, chunk: &Chunk) {
        if !chunk.munk().is_some_and(|m| m.needs_rebalance()) {
            return;
        }
        let _shared = self.lock_shared(chunk);
        let _appending = chunk.append_lock.lock();
        if !chunk.is_retired() {
            self.munks.rebalance_if_grown(self, chunk);
        }
    }

    /// Takes `chunk`'s `rebalance_lock` shared, counting a put that found
    /// the chunk immutable (a rebalance switching it).
    pub(super) fn lock_shared<'a>(&self, chunk: &'a Chunk) -> parking_lot::RwLockReadGuard<'a, ()> {
        chunk.rebalance_lock.try_read().unwrap_or_else(|| {
            Counters::add(&self.counters.chunk_puts_waited_for_switch, 1);
            chunk.rebalance_lock.read()
        })
    }

    /// Appends the batch's groups to their chunks (`chunks`, in group
    /// order, current while their `rebalance_lock`s are held shared) and
    /// the caches; returns the sequence numbers it took, or `None` (and
    /// takes none) when a keyspace drop retired one of the chunks.
    pub(super) fn append(
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
        // Announced before the numbers are taken, withdrawn (dropped)
        // before the append locks: a reader waits for this put only if it
        // may hold a number at or below the reader's (`pending.rs`).
        let announced = Announced::new(
            chunks.iter().map(|(_, c)| &c.pending).collect(),
            self.last_sequence.load(Ordering::SeqCst),
        );
        let first = self.last_sequence.fetch_add(count, Ordering::SeqCst) + 1;
        // The synchronous mode's puts return in number order; an
        // asynchronous crash returns to a checkpoint, which waits for
        // every write below its point anyway, so its puts skip the
        // store-wide record (a mutex and a map entry per put).
        let _taken = (!self.is_async()).then(|| self.append_order.taken(first, first + count - 1));
        #[cfg(test)]
        {
            let hook = self.after_numbers_taken.lock().clone();
            if let Some(hook) = hook {
                hook();
            }
        }
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
        let group_bytes = self.log_group_bytes(spaces);
        let mut sequence = first;
        for ((space, chunk), sub) in chunks.iter().zip(groups.values()) {
            let space = &spaces[*space];
            let mut sub = sub.clone();
            let count = sub.len() as u64;
            let record = sub.encode(sequence);
            // The asynchronous mode's puts are durable at a checkpoint
            // only: their chunk log takes them in groups (one `write`
            // per group, `ChunkLog::append_grouped`).
            logged += match self.is_async() {
                true => chunk.log.append_grouped(record, group_bytes)?,
                false => chunk.log.append(record, false)?,
            };
            // The munk and the row cache take the writes before the put
            // withdraws: a reader that waited for it finds them there.
            let munk = chunk.munk();
            let before = munk.as_ref().map_or(0, |m| m.bytes());
            let decoded =
                crate::db::batch::DecodedBatch::parse(record).map_err(Error::invariant)?;
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
            sequence += count;
        }
        drop(announced);
        drop(appending);
        let c = &self.counters;
        Counters::add(&c.user_bytes_written, batch.user_bytes());
        Counters::add(&c.user_writes, batch.len() as u64);
        Counters::add(&c.write_groups, 1);
        Counters::add(&c.log_bytes_written, logged);
        Ok(Some((first, sequence - 1)))
    }

    /// The bytes a chunk log's write buffer holds before it is written
    /// out: `chunk_log_buffer_bytes` over twice the chunks of `spaces` (a
    /// buffer grows by doubling, so it takes up to twice what it holds),
    /// keeping every log's buffer together within the budget.
    pub(super) fn log_group_bytes(&self, spaces: &[Arc<ChunkSpace>]) -> u64 {
        let chunks: usize = spaces.iter().map(|s| s.chunk_set().chunks.len()).sum();
        self.options.chunk_log_buffer_bytes / (2 * chunks.max(1) as u64)
    }

    /// Applies one update at `seq` to the row cache and the chunk's munk.
    pub(super) fn apply_to_caches(
        &self,
        space: &ChunkSpace,
        munk: Option<&super::munk::Munk>,
        op: &crate::db::batch::BatchOp<'_>,
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
    pub(super) fn sync_dirty_logs(&self) -> Result<()> {
        self.with_logs_synced(|_| Ok(()))
    }

    /// Runs `f` with the metadata lock's content once every dirty log is
    /// synced (`sync_dirty_logs`), holding every append lock throughout:
    /// no write comes between the sync and `f`.
    /// REQUIRES: no `append_lock` held by the caller.
    pub(super) fn with_logs_synced<T>(
        &self,
        f: impl FnOnce(Option<&mut Writer>) -> Result<T>,
    ) -> Result<T> {
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
            let allocated = self.last_sequence.load(Ordering::SeqCst);
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
    let decoded = crate::db::batch::DecodedBatch::parse(encoded).map_err(Error::invariant)?;
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
                        let clipped = crate::db::batch::BatchOp {
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
