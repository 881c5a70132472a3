//! TRIAD-MEM's re-logged records: hot keys carried from a flushed
//! memtable into the active log and memtable, and their replay.

use std::sync::Arc;

use super::background_state::set_background_error;
use super::flush_sync::sync_logs_released;
use super::tree::Tree;
use super::DbInner;
use crate::error::{Error, Result};
use crate::format::internal_key::{InternalKey, ValueKind, MAX_SEQUENCE};
use crate::log::{encode_relogged, for_each_relogged, RelogEntry, RelogSource};
use crate::memtable::{LogLocation, Memtable};
use crate::stats::Counters;

/// TRIAD-MEM: carries `entries` (hot keys of the immutable memtable `from`
/// of `tree`) into the tree's active memtable: appends them to the active log as one
/// re-logged record, inserts them with their own sequence numbers, and
/// syncs the log outside `log` (`flush_sync.rs`). Returns the entries
/// carried.
///
/// Readers search the active memtable before the immutable ones, so a
/// carried version must be newer than anything an immutable memtable newer
/// than `from` holds for its key: keys such a memtable holds are not
/// carried (they stay cold). Under `log` the set of memtables is fixed,
/// the active memtable is the one whose log takes the record, and no write
/// group inserts meanwhile; a newer write of the key in the active memtable
/// shadows the carried version (higher sequence).
/// Takes `log`, then `super_version` (read).
pub(crate) fn relog(
    inner: &DbInner,
    tree: &Tree,
    from: &Arc<Memtable>,
    entries: Vec<RelogEntry>,
) -> Result<Vec<RelogEntry>> {
    let mut log = inner.log.lock();
    inner.check_background_error()?;
    let sv = tree.super_version();
    let newer: Vec<&Arc<Memtable>> = sv
        .imms
        .iter()
        .take_while(|m| !Arc::ptr_eq(m, from))
        .collect();
    let entries: Vec<RelogEntry> = entries
        .into_iter()
        .filter(|e| {
            let lookup = InternalKey::new(&e.key, MAX_SEQUENCE, ValueKind::SEEK);
            newer.iter().all(|m| m.get(lookup.encoded()).is_none())
        })
        .collect();
    if entries.is_empty() {
        return Ok(entries);
    }
    let source = RelogSource {
        log: from.log_number(),
        keyspace: tree.id,
    };
    let record = encode_relogged(source, &entries);
    let offset = match log.writer.add_record(&record) {
        Ok(offset) => offset,
        Err(e) => {
            set_background_error(inner, e.clone());
            return Err(e);
        }
    };
    Counters::add(&inner.counters.log_bytes_written, record.len() as u64 + 7);
    insert_relogged(&sv.mem, &record, offset).map_err(|why| {
        Error::invariant(format!(
            "a record this process encoded failed to decode: {why}"
        ))
    })?;
    // Durable before the flush's edit lets the old log go; the writers
    // append on meanwhile (a reader may see the carried versions first,
    // as it sees any write before its sync).
    drop(log);
    sync_logs_released(inner, true)?;
    Ok(entries)
}

/// Applies the entries of a re-logged record, the log record at
/// `record_offset` of the memtable's log, to the memtable; returns the
/// largest sequence number applied (0 for none). A malformed record is
/// rejected before anything is inserted.
pub(crate) fn insert_relogged(
    mem: &Memtable,
    record: &[u8],
    record_offset: u64,
) -> std::result::Result<u64, &'static str> {
    for_each_relogged(record, |_, _, _, _| ())?;
    let mut last = 0;
    for_each_relogged(record, |seq, kind, key, value| {
        mem.add_at(
            seq,
            kind,
            key,
            value,
            location_in(record, record_offset, value),
        );
        last = last.max(seq);
    })?;
    Ok(last)
}

/// Where `value`, a slice of `record`, lies in the log (TRIAD-LOG). A
/// deletion's empty value is no slice of the record: offset 0 (unused).
pub(crate) fn location_in(record: &[u8], record_offset: u64, value: &[u8]) -> LogLocation {
    let offset = (value.as_ptr() as usize)
        .checked_sub(record.as_ptr() as usize)
        .filter(|&at| at <= record.len())
        .unwrap_or(0);
    LogLocation {
        record: record_offset,
        offset: offset as u64,
    }
}
