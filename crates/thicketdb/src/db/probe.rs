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
    use crate::format::internal_key::{trailer, user_key, ParsedKey, ValueKind};
    let range_dels = table.range_deletions();
    let covered = match range_dels.is_empty() {
        true => 0,
        false => range_dels.covering_seq(user_key(lookup), trailer(lookup) >> 8),
    };
    // A table of tombstones alone (a flushed range delete) has no entry
    // to look up.
    if table.properties().entries == 0 {
        return Ok(match covered {
            0 => Probe::Absent,
            _ => Probe::Deleted,
        });
    }
    let found = table.get_with(lookup, fill_cache, |key, value| {
        ParsedKey::parse(key).map(|p| match p.kind {
            _ if p.sequence < covered => Probe::Deleted,
            ValueKind::Value => Probe::Found(on_value(value)),
            ValueKind::Deletion => Probe::Deleted,
        })
    })?;
    match found {
        None if covered > 0 => Ok(Probe::Deleted),
        None => Ok(Probe::Absent),
        Some(Some(probe)) => Ok(probe),
        Some(None) => Err(crate::error::Error::corruption(
            table.path(),
            table.offset(),
            "malformed internal key in a table",
        )),
    }
}
