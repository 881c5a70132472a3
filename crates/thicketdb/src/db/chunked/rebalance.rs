//! Funk rebalance: a chunk's table and log merged into a new funk (a new
//! table and an empty log), keeping every version a snapshot may read and
//! dropping the rest; a chunk holding more than `chunk_size` bytes is split
//! into chunks filled to `chunk_fill_factor` of it.
//!
//! Only the short switch stops the chunk's puts (YoDB §3.4). It runs in a
//! build thread (`build_queue.rs`), in a writer (backpressure, or
//! `chunk_rebalance_threads=0`) or in `compact_range`. The one thread
//! holding the chunk's `funk_change_lock` builds the new funks
//! (and, for a chunk with a munk, the children's munks) while the chunk
//! stays active: it reads the log's records up to the first one not yet
//! published (those are complete in every chunk: the chunk list written
//! at the switch may name a table holding them). Then it takes the
//! chunk's `rebalance_lock` exclusively (the switch): copies the records
//! appended since (the tail) into the new chunks' logs, syncs, writes the
//! chunk list naming the new funks, retires the old chunk and installs
//! the new set. A split's children are built in the background the same
//! way, while the old chunk takes their puts: the paper's *baby* and
//! *child* states (children sharing the old funk) are not needed, as the
//! children appear only at the switch, with their funks complete.

use std::sync::Arc;

use super::chunk::{Chunk, ChunkLog, Entry};
use super::files::funk_table_path;
use super::funk_tables::FunkTable;
use super::munk::Munk;
use super::open::{filters, write_list_staged, ListWriteError};
use super::{ChunkSet, ChunkSpace, ChunkStore, Writer};
use crate::db::batch::WriteBatch;
use crate::db::batch::{BatchOp, DecodedBatch, OpKind};
use crate::error::{Error, Result};
use crate::format::internal_key::{user_key, InternalKey, ParsedKey, ValueKind};
use crate::format::range_tombstone::{Fragments, RangeTombstone};
use crate::stats::Counters;
use crate::table::TableBuilder;

/// Whether a rebalance waits for another thread building a funk for the
/// same chunk (then does nothing: the chunk is replaced) or goes on.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum IfBuilding {
    Wait,
    Skip,
}

/// Rebalances `chunk` of `space` unless it is retired; whether this call
/// replaced it.
pub(super) fn rebalance(
    store: &ChunkStore,
    space: &ChunkSpace,
    chunk: &Arc<Chunk>,
    if_building: IfBuilding,
) -> Result<bool> {
    let _building = match if_building {
        IfBuilding::Wait => chunk.funk_change_lock.lock(),
        IfBuilding::Skip => match chunk.funk_change_lock.try_lock() {
            Some(guard) => guard,
            None => {
                Counters::add(&store.counters.chunk_funk_builds_skipped, 1);
                return Ok(false);
            }
        },
    };
    if chunk.is_retired() {
        return Ok(false);
    }
    #[cfg(test)]
    {
        let hook = store.before_build.lock().clone();
        if let Some(hook) = hook {
            hook(chunk);
        }
    }
    let built = build(store, space, chunk)?;
    #[cfg(test)]
    {
        // Not under the lock: other rebalances run the hook meanwhile.
        let hook = store.before_switch.lock().clone();
        if let Some(hook) = hook {
            hook(chunk);
        }
    }
    switch(store, space, chunk, built)
}

/// The new chunks a build made, and how many of the old log's records
/// they hold.
struct Built {
    chunks: Vec<Chunk>,
    records: usize,
    bytes_written: u64,
}

/// Builds the new funks of `chunk` from its table and its log's
/// published records.
/// REQUIRES: the chunk's `funk_change_lock`.
fn build(store: &ChunkStore, space: &ChunkSpace, chunk: &Chunk) -> Result<Built> {
    use std::sync::atomic::Ordering;
    // Every record of the chunk up to it is in the log once settled.
    let settled = store.last_sequence.load(Ordering::SeqCst);
    chunk.settle(settled);
    // Read before the records: every record up to it is in the log. In
    // the asynchronous mode every one goes to the table, as in the
    // paper's funks: a crash starts the next incarnation, whose recovery
    // table ignores the writes past the checkpoint in every read of a
    // table too (`table_filter.rs`). In the last incarnation (a crash
    // then cuts the logs instead, and leaves no row to ignore them by)
    // and in the synchronous mode only durable writes go to a table: the
    // checkpointed ones, or those up to the durable sequence (a power
    // loss keeps a prefix of the writes: a table holding a write past an
    // unsynced one in another chunk's log would break it). The rest is
    // the tail the switch copies into the new log.
    let unchecked = store.is_async() && store.tables.incarnations().can_advance();
    let durable = match store.is_async() {
        true => &store.checkpointed,
        false => &store.durable_sequence,
    };
    let durable_point = || match unchecked {
        true => settled,
        false => settled.min(durable.load(Ordering::Acquire)),
    };
    let mut published = durable_point();
    // The last checkpoint is a snapshot a crash may return to: each key
    // keeps its newest version at or below it (and the tombstones past
    // it) beside the later ones a crash takes back. Those are for a
    // crash only: the running incarnation reads from `live` on.
    let live = store.snapshots.oldest(&store.last_sequence);
    let oldest = match unchecked {
        true => live.min(store.checkpointed.load(Ordering::Acquire)),
        false => live,
    };
    let log = chunk.log.records_from(0)?;
    let mut merged = first_past(&log, published)?;
    // In the synchronous mode nothing else moves the durable point unless
    // writers sync: a build leaving half a log behind it syncs, or every
    // other build would merge nothing.
    let limit = space.log_limit(chunk, store.munks.write_share(chunk));
    let tail_limit = match store.is_async() {
        true => limit,
        false => limit / 2,
    };
    if !unchecked && past_bytes(&log[merged..]) > tail_limit {
        // A build makes the store's writes durable (one sync of every
        // dirty log: a checkpoint, or a sync round) only when the writes
        // past the last durable point would leave the new log past its
        // limit (half of it, synchronous). Each such sync costs one fsync
        // per dirty chunk, but comes once a chunk gathered that many bytes
        // past it: with N chunks written alike, once per N times that, so
        // its cost per byte written does not grow with N. Syncing every
        // dirty log at every switch cost N fsyncs per rebalance.
        match store.is_async() {
            true => store.take_checkpoint().map(|_| ())?,
            false => store.sync_dirty_logs()?,
        }
        published = durable_point();
        merged = first_past(&log, published)?;
    }
    let mut entries = chunk.table_entries()?;
    Counters::add(&store.counters.compaction_bytes_read, chunk.table_length());
    let mut tombstones: Vec<RangeTombstone> = match chunk.table_range_deletions()? {
        Some(table) => table.tombstones().collect(),
        None => Vec::new(),
    };
    for record in &log[..merged] {
        let batch = DecodedBatch::parse(record).map_err(Error::invariant)?;
        let mut seq = batch.first_sequence;
        batch
            .for_each(|op| {
                match op.kind {
                    OpKind::Point(kind) => entries.push((
                        InternalKey::new(op.key, seq, kind).into_vec(),
                        op.value.to_vec(),
                    )),
                    OpKind::RangeDeletion => tombstones.push(RangeTombstone {
                        start: op.key.to_vec(),
                        end: op.value.to_vec(),
                        seq,
                    }),
                }
                seq += 1;
            })
            .map_err(Error::invariant)?;
    }
    let records = merged;
    let order = &store.options.comparator;
    entries.sort_by(|a, b| order.internal(&a.0, &b.0));
    let tombstones = Fragments::fragment(&tombstones);
    let kept = drop_unneeded(entries, oldest, &tombstones);
    let tombstones = needed_tombstones(tombstones, oldest);
    let pieces = split(kept, live, &space.options);
    let had_munk = chunk.munk().is_some();
    let munk_array_list = store.options.munk_array_list;
    let mut chunks = Vec::with_capacity(pieces.len());
    let mut bytes_written = 0;
    let starts: Vec<Vec<u8>> = pieces
        .iter()
        .enumerate()
        .map(|(i, piece)| match i {
            0 => chunk.start.clone(),
            _ => user_key(&piece[0].0).to_vec(),
        })
        .collect();
    for (i, piece) in pieces.into_iter().enumerate() {
        if store.closed.load(std::sync::atomic::Ordering::Acquire) {
            // `close` stops the builds: what this one wrote goes.
            discard(chunks.iter());
            return Err(Error::Closed);
        }
        // Piece `i` owns the keys from its start up to the next one's (the
        // last: up to the next chunk's, unknown here, and of no matter:
        // the chunk's tombstones are clipped to it already).
        let end = starts.get(i + 1).map(Vec::as_slice);
        let piece_tombstones = tombstones.clip(Some(&starts[i]), end);
        let table = match piece.is_empty() && piece_tombstones.is_empty() {
            true => None,
            false => {
                let number = store.next_file_number();
                let length = write_table(store, space, number, &piece, piece_tombstones.clone())?;
                bytes_written += length;
                Some(FunkTable { number, length })
            }
        };
        let log = ChunkLog::create(
            store.fs.as_ref(),
            &store.dir,
            store.next_file_number(),
            filters(&space.options),
        )?;
        let child = Chunk::new(starts[i].clone(), table, log, store.tables.clone());
        if had_munk {
            // The munk splits with the chunk; counted in the budget at the
            // switch (`MunkCache::hand_down`). It serves the running
            // incarnation only: without the checkpoint's versions.
            let entries = drop_unneeded(piece, live, &piece_tombstones);
            let tombstones = needed_tombstones(piece_tombstones, live);
            child.set_munk(Some(Arc::new(Munk::build(
                entries,
                &tombstones,
                munk_array_list,
            ))));
        }
        chunks.push(child);
    }
    Ok(Built {
        chunks,
        records,
        bytes_written,
    })
}

/// The index of the first of a chunk's `log` records numbered past
/// `published` (they are in sequence order: the rest is newer).
fn first_past(log: &[Vec<u8>], published: u64) -> Result<usize> {
    for (i, record) in log.iter().enumerate() {
        let batch = DecodedBatch::parse(record).map_err(Error::invariant)?;
        if batch.first_sequence > published {
            return Ok(i);
        }
    }
    Ok(log.len())
}

/// The bytes of `records`.
fn past_bytes(records: &[Vec<u8>]) -> u64 {
    records.iter().map(|r| r.len() as u64).sum()
}

/// The switch: the tail copied, everything synced, the chunk list
/// written, the new chunks installed in place of `chunk`.
/// REQUIRES: the chunk's `funk_change_lock`.
fn switch(
    store: &ChunkStore,
    space: &ChunkSpace,
    chunk: &Arc<Chunk>,
    built: Built,
) -> Result<bool> {
    let Built {
        chunks: mut new_chunks,
        records,
        bytes_written,
    } = built;
    // A switch that does not happen deletes the new chunks' files (and
    // drops their munks).
    let retire_all = |chunks: &[Chunk]| discard(chunks.iter());
    // The new funks' names made durable before the chunk turns immutable
    // (the build created their files): each fsync under the exclusive
    // lock stops the chunk's puts.
    if let Err(e) = store.fs.sync_dir(&store.dir) {
        retire_all(&new_chunks);
        return Err(e);
    }
    let _immutable = chunk.rebalance_lock.write();
    let copied = copy_tail(store, chunk, records, &new_chunks);
    if let Err(e) = copied {
        retire_all(&new_chunks);
        return Err(e);
    }
    for child in &mut new_chunks {
        child.tail_bytes = child.log.len();
    }
    // The new tables hold durable writes only (`build`), and the tail in
    // the new logs is cut by recovery like any log's writes past the
    // durable point: the other chunks' logs need no sync. The batch log
    // does, first: a batch spanning chunks whose part in the tail became
    // durable is completed from it by recovery (`complete_batches`), not
    // kept in part.
    let batches_synced = match (store.is_async(), store.writer.lock().as_mut()) {
        (false, Some(meta)) => meta.batch_log.sync_if_dirty().map(|synced| {
            Counters::add(&store.counters.fsyncs_log, u64::from(synced));
        }),
        _ => Ok(()),
    };
    // A new log the tail left empty has nothing to sync (its name is
    // durable already).
    let synced = batches_synced.and_then(|()| {
        new_chunks
            .iter()
            .try_for_each(|c| c.log.sync_if_dirty().map(|_| ()))
    });
    if let Err(e) = synced {
        retire_all(&new_chunks);
        return Err(e);
    }
    let mut meta = store.writer.lock();
    let Some(meta) = meta.as_mut() else {
        retire_all(&new_chunks);
        return Err(Error::ReadOnly("rebalance".into()));
    };
    if store.closed.load(std::sync::atomic::Ordering::Acquire) {
        // `close` recorded the logs it found: the old chunk stays.
        retire_all(&new_chunks);
        return Err(Error::Closed);
    }
    let set = space.chunk_set();
    let Some(index) = set.chunks.iter().position(|c| Arc::ptr_eq(c, chunk)) else {
        // The keyspace was dropped meanwhile.
        retire_all(&new_chunks);
        return Ok(false);
    };
    let new_chunks: Vec<Arc<Chunk>> = new_chunks.into_iter().map(Arc::new).collect();
    let splits = u64::from(new_chunks.len() > 1);
    let count = new_chunks.len() as u64;
    for child in &new_chunks {
        child.heat.inherit(&chunk.heat);
        child.write_heat.inherit(&chunk.write_heat);
    }
    let mut chunks = set.chunks[..index].to_vec();
    chunks.extend(new_chunks.iter().cloned());
    chunks.extend_from_slice(&set.chunks[index + 1..]);
    let next = ChunkSet { chunks };
    if let Err(e) = store.write_chunk_list_of(meta, Some((space.id, &next))) {
        // The list may be in place already (the rename done, the
        // directory sync failed): then `CHUNKS` names the new chunks'
        // files, and after a crash either list may be the one on disk.
        // Both sets' files stay (the next open's sweep removes the files
        // its list does not name), and the store fails here, before the
        // old chunk's `rebalance_lock` is released: no write may be
        // appended to the old chunk's log, which the new list does not
        // name (`write_batch` checks under its shared lock).
        store.fail(&e);
        return Err(e);
    }
    // Retired before the new set is seen: a reader that took the old
    // chunk and finds it not retired after reading its sequence number
    // knows no write it sees went to a new chunk (`ChunkStore::get`).
    chunk.retire();
    // Before the new chunks are seen: no put has grown their munks yet.
    store.munks.hand_down(chunk, &new_chunks);
    space.install(next);
    let c = &store.counters;
    Counters::add(&c.chunk_funk_rebalances, 1);
    Counters::add(&c.chunk_splits, splits);
    Counters::add(&c.compaction_bytes_written, bytes_written);
    Counters::add(&c.fsyncs_compaction, count);
    Ok(true)
}

/// Retires new chunks that are not installed (their files go when they
/// are dropped, their munks, not counted in the budget yet, with them).
fn discard<'a>(chunks: impl Iterator<Item = &'a Chunk>) {
    for c in chunks {
        c.retire();
    }
}

/// Copies the old log's records from the `skip`-th on (appended since the
/// build read it, in sequence order) to the new chunk owning each update;
/// a record whose updates all go to one chunk is copied whole, others
/// one update per record (each keeps its sequence number). The new
/// chunks' munks take the updates too.
/// REQUIRES: `old`'s `rebalance_lock` exclusively (no append under way).
fn copy_tail(store: &ChunkStore, old: &Chunk, skip: usize, new: &[Chunk]) -> Result<()> {
    let owner = |key: &[u8]| new.partition_point(|c| c.start.as_slice() <= key).max(1) - 1;
    for record in old.log.records_from(skip)? {
        let batch = DecodedBatch::parse(&record).map_err(Error::invariant)?;
        let ops = batch.ops().map_err(Error::invariant)?;
        let first = batch.first_sequence;
        let single = ops.iter().all(|op| {
            let (start, end) = (op.key, op.value);
            let o = owner(start);
            match op.kind {
                OpKind::Point(_) => o == owner(ops[0].key),
                OpKind::RangeDeletion => {
                    o == owner(ops[0].key)
                        && new.get(o + 1).is_none_or(|n| end <= n.start.as_slice())
                }
            }
        });
        if single {
            append(store, &new[owner(ops[0].key)], &record, first)?;
            continue;
        }
        for (i, op) in ops.iter().enumerate() {
            let seq = first + i as u64;
            let pieces: Vec<(usize, BatchOp<'_>)> = match op.kind {
                OpKind::Point(_) => vec![(owner(op.key), *op)],
                OpKind::RangeDeletion => (owner(op.key)..new.len())
                    .map_while(|c| {
                        let from = op.key.max(new[c].start.as_slice());
                        let to = match new.get(c + 1) {
                            Some(n) => op.value.min(n.start.as_slice()),
                            None => op.value,
                        };
                        (from < op.value).then_some((
                            c,
                            BatchOp {
                                key: from,
                                value: to,
                                ..*op
                            },
                        ))
                    })
                    .filter(|(_, piece)| piece.key < piece.value)
                    .collect(),
            };
            for (c, piece) in pieces {
                let mut one = WriteBatch::new();
                one.push_op(&piece)?;
                append(store, &new[c], one.encode(seq), seq)?;
            }
        }
    }
    Ok(())
}

/// Appends `record` (first sequence `first`) to `chunk`'s log and munk
/// (counted in the munk budget whole at the switch).
fn append(store: &ChunkStore, chunk: &Chunk, record: &[u8], first: u64) -> Result<()> {
    let logged = chunk.log.append(record, false)?;
    Counters::add(&store.counters.log_bytes_written, logged);
    if let Some(munk) = chunk.munk() {
        let batch = DecodedBatch::parse(record).map_err(Error::invariant)?;
        let mut seq = first;
        batch
            .for_each(|op| {
                match op.kind {
                    OpKind::Point(kind) => munk.add(seq, kind, op.key, op.value),
                    OpKind::RangeDeletion => munk.add_range_deletion(seq, op.key, op.value),
                }
                seq += 1;
            })
            .map_err(Error::invariant)?;
    }
    Ok(())
}

/// Keeps, per user key, every version newer than `oldest` (a snapshot
/// may read it) and the newest at or below it unless that is a deletion
/// or a tombstone of `tombstones` visible at `oldest` covers it (nothing
/// older is left for it to hide; every snapshot sees the deletion).
/// `entries` are sorted.
pub(super) fn drop_unneeded(
    entries: Vec<Entry>,
    oldest: u64,
    tombstones: &Fragments,
) -> Vec<Entry> {
    let mut kept = Vec::with_capacity(entries.len());
    let mut current: Option<Vec<u8>> = None;
    let mut settled = false;
    for (key, value) in entries {
        let Some(parsed) = ParsedKey::parse(&key) else {
            kept.push((key, value));
            continue;
        };
        if current.as_deref() != Some(parsed.user_key) {
            current = Some(parsed.user_key.to_vec());
            settled = false;
        }
        if settled {
            continue;
        }
        if parsed.sequence <= oldest {
            settled = true;
            if parsed.kind == ValueKind::Deletion
                || tombstones.covering_seq(parsed.user_key, oldest) > parsed.sequence
            {
                continue;
            }
        }
        kept.push((key, value));
    }
    kept
}

/// The tombstones a snapshot may still need: those newer than `oldest`.
/// One at or below it covers nothing `drop_unneeded` kept (the funk is
/// the chunk's only level: nothing older lies below it).
pub(super) fn needed_tombstones(mut tombstones: Fragments, oldest: u64) -> Fragments {
    tombstones.retain_seqs(|_, seq| seq > oldest);
    tombstones
}

/// One piece, or more when the entries a reader of the running
/// incarnation may read (`read_bytes`) exceed `chunk_size`: each filled to
/// `chunk_fill_factor` of it, cut between user keys. The versions kept
/// for a crash only (a key's checkpointed version below a newer one) are
/// not counted: counted, they doubled the chunks under puts (170 splits
/// against 23, space amplification 1.49 -> 2.66, `docs/reproduction.md`,
/// *YoDB put path, session 24*), and the next build after the next
/// checkpoint drops them.
fn split(entries: Vec<Entry>, live: u64, options: &crate::options::Options) -> Vec<Vec<Entry>> {
    let sizes = read_bytes(&entries, live);
    if sizes.iter().sum::<u64>() <= options.chunk_size {
        return vec![entries];
    }
    let target = ((options.chunk_size as f64 * options.chunk_fill_factor) as u64).max(1);
    let mut pieces = vec![Vec::new()];
    let mut filled = 0;
    let mut last_key: Option<Vec<u8>> = None;
    for ((key, value), size) in entries.into_iter().zip(sizes) {
        let ukey = user_key(&key).to_vec();
        let new_key = last_key.as_deref() != Some(ukey.as_slice());
        if new_key && filled >= target {
            pieces.push(Vec::new());
            filled = 0;
        }
        filled += size;
        last_key = Some(ukey);
        pieces
            .last_mut()
            .expect("one piece at least")
            .push((key, value));
    }
    pieces
}

/// The bytes of each of the sorted `entries` that a reader of the running
/// incarnation may read: every version newer than `live` (the oldest
/// snapshot) and a key's newest at or below it; 0 for the older ones.
fn read_bytes(entries: &[Entry], live: u64) -> Vec<u64> {
    let mut sizes = Vec::with_capacity(entries.len());
    let mut last: Option<&[u8]> = None;
    let mut settled = false;
    for (key, value) in entries {
        let parsed = ParsedKey::parse(key);
        let ukey = parsed.as_ref().map_or(key.as_slice(), |p| p.user_key);
        if last != Some(ukey) {
            last = Some(ukey);
            settled = false;
        }
        sizes.push(match settled {
            true => 0,
            false => (key.len() + value.len()) as u64,
        });
        settled |= parsed.is_some_and(|p| p.sequence <= live);
    }
    sizes
}

/// Writes `entries` and `tombstones` as funk table `number`, synced;
/// returns its bytes.
fn write_table(
    store: &ChunkStore,
    space: &ChunkSpace,
    number: u64,
    entries: &[Entry],
    tombstones: Fragments,
) -> Result<u64> {
    let mut file = store.fs.create(&funk_table_path(&store.dir, number))?;
    let mut builder = TableBuilder::new(&space.options.table_options(), file.as_mut());
    builder.set_range_deletions(tombstones)?;
    for (key, value) in entries {
        builder.add(key, value)?;
    }
    let summary = builder.finish()?;
    file.sync()?;
    Ok(summary.length)
}

impl ChunkStore {
    /// Writes the chunk list of the current sets.
    /// REQUIRES: the metadata lock (`writer` is its content).
    pub(super) fn write_chunk_list(&self, writer: &Writer) -> Result<()> {
        self.write_chunk_list_of(writer, None)
    }

    /// A new file number.
    fn next_file_number(&self) -> u64 {
        let mut meta = self.writer.lock();
        match meta.as_mut() {
            Some(meta) => {
                meta.next_file_number += 1;
                meta.next_file_number - 1
            }
            // A read-only store rebalances nothing.
            None => 0,
        }
    }

    /// Writes the chunk list, with `replaced`'s set for its keyspace
    /// (id) instead of the current one.
    /// REQUIRES: the metadata lock (`writer` is its content).
    pub(super) fn write_chunk_list_of(
        &self,
        writer: &Writer,
        replaced: Option<(u32, &ChunkSet)>,
    ) -> Result<()> {
        self.write_chunk_list_staged(writer, replaced)
            .map_err(ListWriteError::into_error)
    }

    /// [`write_chunk_list_of`](Self::write_chunk_list_of), telling whether
    /// the old list is still the one on disk when it fails.
    /// REQUIRES: the metadata lock (`writer` is its content).
    pub(super) fn write_chunk_list_staged(
        &self,
        writer: &Writer,
        replaced: Option<(u32, &ChunkSet)>,
    ) -> std::result::Result<(), ListWriteError> {
        let list = self.chunk_list(writer, replaced);
        let bytes = list.encode().len() as u64;
        write_list_staged(self.fs.as_ref(), &self.dir, &list)?;
        Counters::add(&self.counters.manifest_bytes_written, bytes);
        Counters::add(&self.counters.fsyncs_manifest, 2);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::internal_key::InternalKey;

    fn entry(key: &str, seq: u64, kind: ValueKind) -> Entry {
        (
            InternalKey::new(key.as_bytes(), seq, kind).into_vec(),
            b"v".to_vec(),
        )
    }

    #[test]
    fn keeps_what_snapshots_read_and_drops_the_rest() {
        let entries = vec![
            entry("a", 9, ValueKind::Value),
            entry("a", 5, ValueKind::Value),
            entry("a", 3, ValueKind::Value),
            entry("b", 4, ValueKind::Deletion),
            entry("b", 2, ValueKind::Value),
            entry("c", 8, ValueKind::Deletion),
        ];
        let kept: Vec<(Vec<u8>, u64)> = drop_unneeded(entries, 5, &Fragments::default())
            .iter()
            .map(|(k, _)| {
                let p = ParsedKey::parse(k).unwrap();
                (p.user_key.to_vec(), p.sequence)
            })
            .collect();
        assert_eq!(
            kept,
            vec![(b"a".to_vec(), 9), (b"a".to_vec(), 5), (b"c".to_vec(), 8)]
        );
    }

    #[test]
    fn split_never_cuts_between_versions_of_a_key() {
        let options = crate::options::Options {
            chunk_size: 40,
            chunk_fill_factor: 0.5,
            ..Default::default()
        };
        let mut entries = Vec::new();
        for k in ["a", "b", "c", "d", "e"] {
            for seq in [3, 2, 1] {
                entries.push(entry(k, seq, ValueKind::Value));
            }
        }
        let pieces = split(entries, 0, &options);
        assert!(pieces.len() > 1);
        for w in pieces.windows(2) {
            let last = user_key(&w[0].last().unwrap().0);
            let first = user_key(&w[1][0].0);
            assert!(last < first, "{last:?} / {first:?}");
        }
        assert_eq!(pieces.iter().map(Vec::len).sum::<usize>(), 15);
    }

    /// A key's versions below its newest at or below the oldest snapshot
    /// (kept for a crash's sake, the last checkpoint's) count for nothing
    /// in the split decision; newer ones count.
    #[test]
    fn split_counts_the_versions_the_running_incarnation_reads() {
        let options = crate::options::Options {
            chunk_size: 60,
            chunk_fill_factor: 0.5,
            ..Default::default()
        };
        let mut entries = Vec::new();
        for k in ["a", "b", "c", "d", "e"] {
            for seq in [3, 2, 1] {
                entries.push(entry(k, seq, ValueKind::Value));
            }
        }
        // 150 bytes in all, 50 of them the newest versions.
        assert_eq!(split(entries.clone(), 3, &options).len(), 1);
        assert_eq!(split(entries.clone(), 2, &options).len(), 3);
        assert!(split(entries, 0, &options).len() > 1);
    }
}
