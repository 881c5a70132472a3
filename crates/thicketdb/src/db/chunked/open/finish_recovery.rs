//! The last phase of a chunked store's read-write recovery: torn logs
//! rewritten, logged batches completed in the chunk logs they are missing
//! from, the logs synced, a new batch log, the chunk list and the
//! checkpoint mark written, files no chunk names deleted.

use std::sync::Arc;

use super::cut_plan::CutPlan;
use super::filters;
use super::open_chunks::OpenedLogs;
use crate::db::batch::WriteBatch;
use crate::db::chunked::batch_log::{self, BatchLog};
use crate::db::chunked::checkpoint_mark::CheckpointMark;
use crate::db::chunked::chunk::{Chunk, ChunkLog};
use crate::db::chunked::closed::ClosedLogs;
use crate::db::chunked::files::parse_numbered;
use crate::db::chunked::manifest::ChunkList;
use crate::db::chunked::{ChunkSet, ChunkStore, Writer};
use crate::error::{Error, Result};

/// A read-write open's last phase: torn logs rewritten, logged batches
/// completed, every log read synced, a new batch log, the chunk list and
/// the checkpoint mark written, unnamed files deleted.
pub(super) fn finish_recovery(
    store: &ChunkStore,
    list: &ChunkList,
    logs: &OpenedLogs,
    plan: &CutPlan,
    missing: Vec<MissingPart>,
    is_async: bool,
) -> Result<()> {
    let fs = store.fs.as_ref();
    let dir = store.dir.as_path();
    let (torn, cut, last_sequence) = (&logs.torn, plan.cut, plan.last_sequence);
    // Before the first append: the lengths it records stop being true.
    ClosedLogs::remove(fs, dir)?;
    let mut next_file_number = list.next_file_number;
    rewrite_logs(store, torn, cut, &mut next_file_number)?;
    for chunk in store.every_chunk() {
        chunk.log.reopen_for_append(fs)?;
    }
    complete_batches(store, missing)?;
    // What a crash left in the page cache is durable before the list
    // counts it so (a rewritten or completed log is synced already).
    let spaces = store.spaces();
    for (s, ranges) in logs.log_ranges.iter().enumerate() {
        let set = spaces[s].chunk_set();
        for (i, r) in ranges.iter().enumerate() {
            if !r.is_empty() && !torn.contains(&(s, i)) {
                set.chunks[i].log.sync()?;
            }
        }
    }
    store
        .durable_sequence
        .fetch_max(last_sequence, std::sync::atomic::Ordering::AcqRel);
    // The old batch log's batches are now whole in the chunk logs.
    let batch_log = BatchLog::create(fs, dir, next_file_number)?;
    next_file_number += 1;
    *store.writer.lock() = Some(Writer {
        batch_log,
        next_file_number,
        next_keyspace_id: list.next_keyspace_id,
    });
    store.write_chunk_list(store.writer.lock().as_ref().expect("just set"))?;
    // The mark says how this run's crash is recovered: from a checkpoint
    // (the first: everything recovered), or by reading the logs.
    match is_async {
        true => CheckpointMark {
            incarnation: store.incarnation,
            sequence: last_sequence,
        }
        .write(fs, dir)?,
        false => CheckpointMark::remove(fs, dir)?,
    }
    sweep(store)
}

/// Copies each listed log's (keyspace index, chunk index) complete
/// records numbered below `cut` to a new log: appends do not follow a
/// torn tail, and the writes past a lost one are gone
/// (`durable_prefix.rs`).
fn rewrite_logs(
    store: &ChunkStore,
    torn: &[(usize, usize)],
    cut: u64,
    next: &mut u64,
) -> Result<()> {
    if torn.is_empty() {
        return Ok(());
    }
    let spaces = store.spaces();
    for &(s, i) in torn {
        let space = &spaces[s];
        let set = space.chunk_set();
        let old = &set.chunks[i];
        let log = ChunkLog::create(
            store.fs.as_ref(),
            &store.dir,
            *next,
            filters(&space.options),
        )?;
        *next += 1;
        for record in old.log.records()? {
            let first = crate::db::batch::DecodedBatch::parse(&record)
                .map_err(Error::invariant)?
                .first_sequence;
            if first < cut {
                log.append(&record, false)?;
            }
        }
        log.sync()?;
        let mut chunks = set.chunks.clone();
        chunks[i] = Arc::new(Chunk::new(
            old.start.clone(),
            old.table,
            log,
            store.tables.clone(),
        ));
        space.install(ChunkSet { chunks });
    }
    store.fs.sync_dir(&store.dir)?;
    // The chunk list naming the new logs is written by the caller; the
    // old logs are swept once it is.
    Ok(())
}

/// The part of a logged batch a chunk log lacks.
pub(super) struct MissingPart {
    /// The batch's first sequence number.
    pub(super) batch_first: u64,
    /// Keyspace index and chunk index.
    pub(super) chunk: (usize, usize),
    /// The part's first sequence number.
    pub(super) first: u64,
    pub(super) part: WriteBatch,
}

/// The parts of logged batches each chunk's log ends before
/// (`log_ends[s][i]`: the last sequence number chunk `i` of keyspace `s`
/// holds). Updates of a keyspace dropped since are left out.
pub(super) fn missing_parts(
    store: &ChunkStore,
    batches: &[batch_log::LoggedBatch],
    log_ends: &[Vec<u64>],
    batch_log_number: u64,
) -> Result<Vec<MissingPart>> {
    let spaces = store.spaces();
    let sets: Vec<_> = spaces.iter().map(|s| s.chunk_set()).collect();
    let mut missing = Vec::new();
    for (first, record) in batches {
        let ops = crate::db::batch::DecodedBatch::parse(record)
            .and_then(|b| b.ops())
            .map_err(Error::invariant)?;
        let mut parts: std::collections::BTreeMap<(usize, usize), (u64, WriteBatch)> =
            Default::default();
        for (i, op) in ops.iter().enumerate() {
            let sequence = first + i as u64;
            let Some(s) = spaces.iter().position(|s| s.id == op.keyspace) else {
                continue;
            };
            // A range deletion was cut to its chunk: its start locates it.
            let chunk = (s, sets[s].locate(op.key));
            if sequence <= log_ends[chunk.0][chunk.1] {
                continue;
            }
            let (start, part) = parts.entry(chunk).or_insert((sequence, WriteBatch::new()));
            // A batch's part for one chunk is consecutive in it: the
            // writer groups updates by chunk before numbering them.
            if *start + part.len() as u64 != sequence {
                return Err(Error::corruption(
                    crate::db::chunked::files::batch_log_path(&store.dir, batch_log_number),
                    0,
                    format!("batch at sequence {first} does not group its updates by chunk"),
                ));
            }
            part.push_op(op)?;
        }
        missing.extend(parts.into_iter().map(|(chunk, (start, part))| MissingPart {
            batch_first: *first,
            chunk,
            first: start,
            part,
        }));
    }
    Ok(missing)
}

/// Appends the missing parts to their chunk logs and syncs those.
fn complete_batches(store: &ChunkStore, missing: Vec<MissingPart>) -> Result<()> {
    let spaces = store.spaces();
    let mut touched = Vec::new();
    for MissingPart {
        chunk: (s, i),
        first,
        mut part,
        ..
    } in missing
    {
        let chunk = spaces[s].chunk_set().chunks[i].clone();
        chunk.log.append(part.encode(first), false)?;
        touched.push(chunk);
    }
    for chunk in touched {
        chunk.log.sync()?;
    }
    Ok(())
}

/// Deletes funk tables, chunk logs and batch logs the chunk list does not
/// name (left by a crash mid-rebalance, or replaced at this open).
fn sweep(store: &ChunkStore) -> Result<()> {
    let mut live: Vec<u64> = store
        .every_chunk()
        .iter()
        .flat_map(|c| [c.table_number(), c.log.number])
        .collect();
    if let Some(w) = store.writer.lock().as_ref() {
        live.push(w.batch_log.number);
    }
    for name in store.fs.list(&store.dir)? {
        if let Some(number) = parse_numbered(&name) {
            if !live.contains(&number) {
                store.fs.remove(&store.dir.join(&name))?;
            }
        }
    }
    Ok(())
}
