//! LSbM's compaction buffer inside a level: read-only buffer runs of
//! tables that were merged out of the level above, kept unchanged so their
//! cached blocks stay valid, and "removed" entries that keep only the key
//! range of a table whose data was dropped.
//!
//! Why a buffer lookup never returns a stale version: every table that
//! brings data into a level with a buffer is appended to that buffer, as
//! a present table or as a removed entry (see
//! `compaction::lsbm_buffer_edits`; L0's overlapping runs join the buffer
//! of the level they compact into, L1 or a dynamic base level, oldest
//! first, and a flush placed below L0, which would bring data in past a
//! level's buffer, is refused by `Options::validate`). Data that pass a
//! level by on their way below it (L0 compacting into a dynamic base
//! level further down) remove the buffer's present entries overlapping
//! them, so no copy they supersede stays to answer. A run
//! is sorted with disjoint key ranges, so a later arrival covering a key
//! lands in a newer run than an earlier one covering it. Searching the
//! runs newest first, the first entry covering the key is therefore the
//! latest arrival that may hold it: present, it holds the newest version
//! in this level and below; removed, the search stops and the level's own
//! run answers.

use std::sync::Arc;

use super::meta::TableMeta;
use crate::format::KeyOrder;

/// One table of a buffer run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BufferEntry {
    pub meta: Arc<TableMeta>,
    /// Its data were dropped (trim, drain, the space bound or a freeze):
    /// only its key range is used, to stop lookups.
    pub removed: bool,
}

/// A level's freeze accounting for its current merge round (LSbM §IV-A):
/// kept in the version and persisted with the buffer's edits, so a reopened
/// store freezes and unfreezes exactly as the running one would have.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BufferRound {
    /// The level's bytes when the round began.
    pub start_bytes: u64,
    /// Bytes merged or moved into the level since.
    pub arrived: u64,
    /// Bytes of the level's data that left it since: merged down, or
    /// (estimated) superseded by arrivals in the data it held when the
    /// round began, which the paper keeps apart in C'ᵢ (see
    /// `compaction::lsbm_buffer_edits`).
    pub departed: u64,
}

/// Which of a level's data its compaction buffer is known to hold. A range
/// read may use a level's buffer instead of its own run only where the
/// buffer holds everything the run does (see `version::buffer_range`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum BufferRecording {
    /// Nothing (a store never opened with `lsbm_buffer`, or last opened
    /// without it): range reads never use the buffer.
    #[default]
    Off,
    /// Every table that brought data newer than this sequence number into
    /// the level is an entry of its buffer, present or removed. It starts
    /// at the store's last sequence when the buffer is turned on, and
    /// moves up when entries the run may still hold data of are dropped
    /// (`compaction::buffer`'s clean-up).
    Since(u64),
}

/// A sorted run of the compaction buffer; larger ids are newer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BufferRun {
    pub id: u64,
    /// Entries ordered by key, with disjoint user-key ranges.
    pub entries: Vec<BufferEntry>,
}

/// What a buffer search found for one key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BufferProbe<'a> {
    /// The newest entry covering the key is present: look the key up in
    /// this table, then (if absent there) in the next candidate.
    Table(&'a Arc<TableMeta>),
    /// A removed entry covers the key: the buffer must not answer.
    Stop,
}

impl BufferRun {
    /// The entry whose key range holds `user_key`, if any.
    pub fn find(&self, user_key: &[u8], order: &KeyOrder) -> Option<&BufferEntry> {
        let i = self
            .entries
            .partition_point(|e| order.lt(e.meta.largest_user_key(), user_key));
        self.entries
            .get(i)
            .filter(|e| order.le(e.meta.smallest_user_key(), user_key))
    }

    /// Whether `meta` can be appended after the last entry (runs fill in
    /// key order, one merge round at a time).
    pub fn fits_after(&self, meta: &TableMeta, order: &KeyOrder) -> bool {
        self.entries
            .last()
            .is_none_or(|last| order.lt(last.meta.largest_user_key(), meta.smallest_user_key()))
    }

    pub fn present(&self) -> impl Iterator<Item = &Arc<TableMeta>> {
        self.entries.iter().filter(|e| !e.removed).map(|e| &e.meta)
    }
}

/// The candidate buffer tables for `user_key` in `runs` (newest first), in
/// search order; the search stops at the first removed entry covering it.
pub fn probe<'a>(
    runs: &'a [BufferRun],
    user_key: &'a [u8],
    order: &'a KeyOrder,
) -> impl Iterator<Item = BufferProbe<'a>> {
    runs.iter().filter_map(move |run| {
        run.find(user_key, order).map(|e| {
            if e.removed {
                BufferProbe::Stop
            } else {
                BufferProbe::Table(&e.meta)
            }
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::version::meta::tests::table;

    fn run(id: u64, entries: &[(u64, &str, &str, bool)]) -> BufferRun {
        BufferRun {
            id,
            entries: entries
                .iter()
                .map(|&(t, lo, hi, removed)| BufferEntry {
                    meta: table(t, lo, hi),
                    removed,
                })
                .collect(),
        }
    }

    fn search(runs: &[BufferRun], key: &str) -> Vec<String> {
        let mut out = Vec::new();
        for p in probe(runs, key.as_bytes(), &KeyOrder::Bytewise) {
            match p {
                BufferProbe::Table(t) => out.push(t.id.to_string()),
                BufferProbe::Stop => {
                    out.push("stop".into());
                    break;
                }
            }
        }
        out
    }

    #[test]
    fn newest_first_and_a_removed_entry_stops() {
        let runs = [
            run(9, &[(1, "a", "c", false), (2, "m", "p", true)]),
            run(8, &[(3, "a", "z", false)]),
        ];
        assert_eq!(search(&runs, "b"), ["1", "3"]);
        assert_eq!(search(&runs, "n"), ["stop"]);
        assert_eq!(search(&runs, "x"), ["3"]);
        assert!(search(&runs, "0").is_empty());
    }

    #[test]
    fn fits_after_requires_key_order() {
        let r = run(1, &[(1, "c", "f", false)]);
        assert!(r.fits_after(&table(2, "g", "h"), &KeyOrder::Bytewise));
        assert!(!r.fits_after(&table(3, "f", "h"), &KeyOrder::Bytewise));
        assert!(!r.fits_after(&table(4, "a", "b"), &KeyOrder::Bytewise));
        assert_eq!(r.present().count(), 1);
    }
}
