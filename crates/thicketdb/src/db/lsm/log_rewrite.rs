//! TRIAD's FLUSH_TH: a full memtable whose distinct data is small is not
//! flushed. Its newest versions go to a fresh log as one re-logged record
//! (synced), a new memtable holding just them takes the old one's place,
//! and the old log, unpinned with the old memtable, is deleted.
//!
//! The paper triggers this when the commit log is full while the memtable
//! is not (its memtable updates in place). With `triad_in_place` and
//! `triad_log_limit` so does this store (`write.rs::make_room`); without
//! them the memtable keeps every version, so log and memtable fill
//! together and the memtable-full trigger is the log-size trigger.
//!
//! Crash safety: the old log stays pinned (and listed by the MANIFEST)
//! until the new log is synced and installed. Recovery that still finds
//! the old log replays it and skips the record (whose source it is);
//! otherwise the record restores the newest version of every key, which is
//! the state after every write acknowledged before the rewrite.

use std::sync::Arc;

use super::background_state::set_background_error;
use super::log_state::create_log;
use super::relog::insert_relogged;
use super::tree::Tree;
use super::{DbInner, SuperVersion};
use crate::db::batch::WriteBatch;
use crate::error::{Error, Result};
use crate::log::{encode_relogged, LogWriter, RelogSource, HEADER_SIZE};
use crate::memtable::newest::newest_entries;
use crate::stats::Counters;
use crate::version::files::log_path;

/// Rewrites the log when the newest versions of every keyspace's memtable
/// (`svs`: each keyspace and its super version) fit under that keyspace's
/// `triad_flush_threshold` (all keyspaces share the log, so all are
/// carried or none); returns whether it did (then the memtables have room
/// again). One re-logged record per non-empty memtable.
/// REQUIRES: `inner.write` held by the queue's front (no write group is
/// mid-commit). Takes `log`, then `versions`, then `super_version`.
pub(crate) fn rewrite_small_log(
    inner: &Arc<DbInner>,
    svs: &[(Arc<Tree>, Arc<SuperVersion>)],
) -> Result<bool> {
    let limit = |tree: &Tree| {
        let opts = &tree.options;
        (opts.triad_flush_threshold * opts.write_buffer_size as f64) as u64
    };
    if svs.iter().any(|(tree, _)| limit(tree) == 0) {
        return Ok(false);
    }
    // Under `log` no re-logged record of a flush can land in a memtable
    // after it was read here.
    let mut log = inner.log.lock();
    let visible_to_all = inner.snapshots.oldest(&inner.last_sequence);
    let mut records = Vec::with_capacity(svs.len());
    for (tree, sv) in svs {
        let Some(entries) = newest_entries(&sv.mem, limit(tree), visible_to_all) else {
            return Ok(false);
        };
        let source = RelogSource {
            log: sv.mem.log_number(),
            keyspace: tree.id,
        };
        records.push((!entries.is_empty()).then(|| encode_relogged(source, &entries)));
    }
    // Entries updated in place keep their first sequence number, older
    // than the writes that updated them: after a power loss that leaves
    // this log alone, replay would restart the sequence below numbers
    // already issued. An empty batch after the records carries the last
    // one (replay takes a batch's first sequence - 1 + its count).
    let last_sequence = inner
        .last_sequence
        .load(std::sync::atomic::Ordering::Acquire);
    let mut marker = WriteBatch::new();
    let marker = marker.encode(last_sequence + 1).to_vec();
    // The record (synced below) holds writes newer than what the logs of
    // the immutable memtables hold, which switches left unsynced
    // (`flush_sync.rs`): they go first, so what survives stays a prefix.
    match log.sync_all_but_current(inner.fs.as_ref(), &inner.dir) {
        Ok(syncs) => Counters::add(&inner.counters.fsyncs_log, syncs),
        Err(e) => {
            set_background_error(inner, e.clone());
            return Err(e);
        }
    }
    let number = inner.versions.lock().new_file_number();
    let written = create_log(
        inner.fs.as_ref(),
        &inner.options,
        &log_path(&inner.dir, number),
    )
    .and_then(|f| {
        inner.fs.sync_dir(&inner.dir)?;
        let mut writer = LogWriter::new(f);
        let mut offsets = Vec::with_capacity(records.len());
        for record in &records {
            offsets.push(match record {
                Some(record) => Some(writer.add_record(record)?),
                None => None,
            });
        }
        writer.add_record(&marker)?;
        writer.flush()?;
        writer.sync()?;
        Ok((writer, offsets))
    });
    let (writer, offsets) = match written {
        Ok(w) => w,
        Err(e) => {
            set_background_error(inner, e.clone());
            return Err(e);
        }
    };
    let c = &inner.counters;
    Counters::add(&c.fsyncs_log, 2);
    Counters::add(&c.log_rewrites, 1);
    Counters::add(&c.log_bytes_written, (marker.len() + HEADER_SIZE) as u64);
    let mut mems = Vec::with_capacity(svs.len());
    for ((tree, _), (record, offset)) in svs.iter().zip(records.iter().zip(offsets)) {
        let mem = tree.memtable_on_log(&inner.backings, number);
        if let (Some(record), Some(offset)) = (record, offset) {
            Counters::add(&c.log_bytes_written, record.len() as u64 + 7);
            insert_relogged(&mem, record, offset).map_err(|why| {
                Error::invariant(format!(
                    "a record this process encoded failed to decode: {why}"
                ))
            })?;
        }
        mems.push(mem);
    }
    log.writer = writer;
    log.number = number;
    for ((tree, _), mem) in svs.iter().zip(mems) {
        let mut current = tree.super_version.write();
        let next = SuperVersion {
            mem: Arc::new(mem),
            imms: current.imms.clone(),
            version: current.version.clone(),
            pending_compaction_bytes: current.pending_compaction_bytes,
        };
        *current = Arc::new(next);
    }
    Ok(true)
}
