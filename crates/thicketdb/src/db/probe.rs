//! The table probe both layouts' lookups end in: one table's newest entry
//! for a key, its range tombstones applied (the LSM's serial and parallel
//! searches, a chunk's funk table).

use crate::error::Result;
use crate::table::Table;

/// One candidate's answer; `R` is what was made of the value found.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Probe<R = Vec<u8>> {
    /// The candidate holds a live value for the key.
    Found(R),
    /// The candidate holds a deletion of the key.
    Deleted,
    /// The candidate holds nothing for the key.
    Absent,
}

/// Probes one table for the newest entry of the lookup key, handing a
/// value found to `on_value` where it lies (in the cached block). A range
/// tombstone of the table covering the key (visible at the lookup's
/// snapshot) deletes its older entries, and answers `Deleted` without
/// reading a block when nothing newer is there: every older table holds
/// only older versions.
pub(crate) fn probe_table<R>(
    table: &Table,
    lookup: &[u8],
    fill_cache: bool,
    on_value: impl FnOnce(&[u8]) -> R,
) -> Result<Probe<R>> {
    let read = |covered, on_value| {
        Some(table.get_with(lookup, fill_cache, |key, value| {
            interpret(key, value, covered, on_value)
        }))
    };
    probe_with(table, lookup, on_value, read).unwrap_or(Ok(Probe::Absent))
}

/// [`probe_table`] when it needs no device read (the block is in the
/// block cache or the page cache): `None`, nothing read, when it would
/// wait on the device.
pub(crate) fn probe_table_resident<R>(
    table: &Table,
    lookup: &[u8],
    fill_cache: bool,
    on_value: impl FnOnce(&[u8]) -> R,
) -> Option<Result<Probe<R>>> {
    let read = |covered, on_value| {
        table.get_resident_with(lookup, fill_cache, |key, value| {
            interpret(key, value, covered, on_value)
        })
    };
    probe_with(table, lookup, on_value, read)
}

/// The entry `key` the table holds for the lookup, as a probe's answer;
/// `None` for a malformed key.
fn interpret<R>(
    key: &[u8],
    value: &[u8],
    covered: u64,
    on_value: impl FnOnce(&[u8]) -> R,
) -> Option<Probe<R>> {
    use crate::format::internal_key::{ParsedKey, ValueKind};
    ParsedKey::parse(key).map(|p| match p.kind {
        _ if p.sequence < covered => Probe::Deleted,
        ValueKind::Value => Probe::Found(on_value(value)),
        ValueKind::Deletion => Probe::Deleted,
    })
}

/// What a table read answers: the entry's probe, if the table holds one
/// (`Some(None)`: a malformed key).
type Entry<R> = Result<Option<Option<Probe<R>>>>;

/// The probe both variants share: range tombstones first, then `read`
/// (given the covering tombstone's sequence and `on_value`) for the entry;
/// `None` when `read` declined to read.
fn probe_with<R, F: FnOnce(&[u8]) -> R>(
    table: &Table,
    lookup: &[u8],
    on_value: F,
    read: impl FnOnce(u64, F) -> Option<Entry<R>>,
) -> Option<Result<Probe<R>>> {
    use crate::format::internal_key::{trailer, user_key};
    let range_dels = table.range_deletions();
    let covered = match range_dels.is_empty() {
        true => 0,
        false => range_dels.covering_seq(user_key(lookup), trailer(lookup) >> 8),
    };
    // A table of tombstones alone (a flushed range delete) has no entry
    // to look up.
    if table.properties().entries == 0 {
        return Some(Ok(match covered {
            0 => Probe::Absent,
            _ => Probe::Deleted,
        }));
    }
    let found = match read(covered, on_value)? {
        Ok(found) => found,
        Err(e) => return Some(Err(e)),
    };
    Some(match found {
        None if covered > 0 => Ok(Probe::Deleted),
        None => Ok(Probe::Absent),
        Some(Some(probe)) => Ok(probe),
        Some(None) => Err(crate::error::Error::corruption(
            table.path(),
            table.offset(),
            "malformed internal key in a table",
        )),
    })
}
