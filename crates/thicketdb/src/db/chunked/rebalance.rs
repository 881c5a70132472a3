//! Funk rebalance: a chunk's table and log merged into a new funk (a new
//! table and an empty log), keeping every version a snapshot may read and
//! dropping the rest; a chunk holding more than `chunk_size` bytes is split
//! into chunks filled to `chunk_fill_factor` of it. The new funks are
//! written and synced, the chunk list naming them is written, then the new
//! chunk set is installed; the old chunk's files go with its last reader.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::chunk::{open_table, Chunk, ChunkLog, Entry};
use super::files::funk_table_path;
use super::munk::Munk;
use super::open::{filters, write_list};
use super::{ChunkSet, ChunkSpace, ChunkStore, Writer};
use crate::error::Result;
use crate::format::internal_key::{user_key, ParsedKey, ValueKind};
use crate::format::range_tombstone::Fragments;
use crate::stats::Counters;
use crate::table::TableBuilder;

/// Rebalances chunk `index` of `set` (the current set).
/// REQUIRES: the write lock (`writer` is its content).
pub(super) fn rebalance(
    store: &ChunkStore,
    writer: &mut Writer,
    space: &ChunkSpace,
    set: &Arc<ChunkSet>,
    index: usize,
) -> Result<()> {
    let chunk = &set.chunks[index];
    // The new funk makes this chunk's writes durable: the other chunks'
    // earlier writes must be too, so that a power loss keeps a prefix.
    store.sync_dirty_logs(writer)?;
    let oldest = store.snapshots.oldest(&store.last_sequence);
    let (mut entries, tombstones) = chunk.contents()?;
    if let Some(table) = &chunk.table {
        Counters::add(&store.counters.compaction_bytes_read, table.length());
    }
    let order = &store.options.comparator;
    entries.sort_by(|a, b| order.internal(&a.0, &b.0));
    let kept = drop_unneeded(entries, oldest, &tombstones);
    let tombstones = needed_tombstones(tombstones, oldest);
    let pieces = split(kept, &space.options);
    // Piece `i` owns the keys from its start up to the next one's (the
    // last up to the next chunk's): its share of the tombstones.
    let mut starts: Vec<Vec<u8>> = pieces
        .iter()
        .enumerate()
        .map(|(i, piece)| match i {
            0 => chunk.start.clone(),
            _ => user_key(&piece[0].0).to_vec(),
        })
        .collect();
    let chunk_end = set.chunks.get(index + 1).map(|c| c.start.clone());
    let ends: Vec<Option<Vec<u8>>> = starts
        .iter()
        .skip(1)
        .cloned()
        .map(Some)
        .chain([chunk_end])
        .collect();
    let had_munk = chunk.munk().is_some();
    let munk_array_list = store.options.munk_array_list;
    let mut new_chunks = Vec::with_capacity(pieces.len());
    let mut written = 0;
    for ((piece, start), end) in pieces.into_iter().zip(starts.drain(..)).zip(ends) {
        let piece_tombstones = tombstones.clip(Some(&start), end.as_deref());
        let table = match piece.is_empty() && piece_tombstones.is_empty() {
            true => None,
            false => {
                let number = next_number(writer);
                written += write_table(store, space, number, &piece, piece_tombstones.clone())?;
                let table =
                    open_table(store.fs.as_ref(), &store.dir, number, store.context.clone())?;
                Some((number, table))
            }
        };
        let log = ChunkLog::create(
            store.fs.as_ref(),
            &store.dir,
            next_number(writer),
            filters(&space.options),
        )?;
        let child = Chunk::new(start, table, log, store.fs.clone(), store.dir.clone());
        child
            .heat
            .store(chunk.heat.load(Ordering::Relaxed), Ordering::Relaxed);
        if had_munk {
            // The munk splits with the chunk.
            store.munks.install(
                &child,
                Munk::build(piece, &piece_tombstones, munk_array_list),
            );
        }
        new_chunks.push(Arc::new(child));
    }
    store.fs.sync_dir(&store.dir)?;
    let c = &store.counters;
    Counters::add(&c.chunk_funk_rebalances, 1);
    Counters::add(&c.chunk_splits, u64::from(new_chunks.len() > 1));
    Counters::add(&c.compaction_bytes_written, written);
    Counters::add(&c.fsyncs_compaction, new_chunks.len() as u64);
    let mut chunks = set.chunks[..index].to_vec();
    chunks.extend(new_chunks);
    chunks.extend_from_slice(&set.chunks[index + 1..]);
    let next = ChunkSet { chunks };
    store.write_chunk_list_of(writer, Some((space.id, &next)))?;
    space.install(next);
    chunk.retire();
    store.munks.release(chunk);
    Ok(())
}

fn next_number(writer: &mut Writer) -> u64 {
    writer.next_file_number += 1;
    writer.next_file_number - 1
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

/// One piece, or more when the entries exceed `chunk_size`: each filled
/// to `chunk_fill_factor` of it, cut between user keys.
fn split(entries: Vec<Entry>, options: &crate::options::Options) -> Vec<Vec<Entry>> {
    let bytes: u64 = entries
        .iter()
        .map(|(k, v)| (k.len() + v.len()) as u64)
        .sum();
    if bytes <= options.chunk_size {
        return vec![entries];
    }
    let target = ((options.chunk_size as f64 * options.chunk_fill_factor) as u64).max(1);
    let mut pieces = vec![Vec::new()];
    let mut filled = 0;
    let mut last_key: Option<Vec<u8>> = None;
    for (key, value) in entries {
        let ukey = user_key(&key).to_vec();
        let new_key = last_key.as_deref() != Some(ukey.as_slice());
        if new_key && filled >= target {
            pieces.push(Vec::new());
            filled = 0;
        }
        filled += (key.len() + value.len()) as u64;
        last_key = Some(ukey);
        pieces
            .last_mut()
            .expect("one piece at least")
            .push((key, value));
    }
    pieces
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
    /// REQUIRES: the write lock (`writer` is its content).
    pub(super) fn write_chunk_list(&self, writer: &Writer) -> Result<()> {
        self.write_chunk_list_of(writer, None)
    }

    /// Writes the chunk list, with `replaced`'s set for its keyspace
    /// (id) instead of the current one.
    /// REQUIRES: the write lock (`writer` is its content).
    pub(super) fn write_chunk_list_of(
        &self,
        writer: &Writer,
        replaced: Option<(u32, &ChunkSet)>,
    ) -> Result<()> {
        let list = self.chunk_list(writer, replaced);
        let bytes = list.encode().len() as u64;
        write_list(self.fs.as_ref(), &self.dir, &list)?;
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
        let pieces = split(entries, &options);
        assert!(pieces.len() > 1);
        for w in pieces.windows(2) {
            let last = user_key(&w[0].last().unwrap().0);
            let first = user_key(&w[1][0].0);
            assert!(last < first, "{last:?} / {first:?}");
        }
        assert_eq!(pieces.iter().map(Vec::len).sum::<usize>(), 15);
    }
}
