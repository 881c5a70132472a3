//! What a version knows about each table, and how tables form runs and
//! runs form levels.

use std::cmp::Ordering;
use std::sync::{Arc, OnceLock};

use super::lsbm_buffer::{BufferRecording, BufferRound, BufferRun};
use crate::format::internal_key::user_key;
use crate::format::KeyOrder;
use crate::io::{Backing, Extent};
use crate::table::HyperLogLog;

/// A logical table: where it lives and what it covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableMeta {
    /// Unique table number (from the store's file-number counter).
    pub id: u64,
    /// Segment file holding the table.
    pub segment: u64,
    /// Byte offset of the table inside the segment.
    pub offset: u64,
    /// Byte length of the table.
    pub length: u64,
    /// Smallest internal key.
    pub smallest: Vec<u8>,
    /// Largest internal key.
    pub largest: Vec<u8>,
    /// Number of entries.
    pub entries: u64,
    /// Smallest sequence number inside.
    pub min_seq: u64,
    /// Largest sequence number inside.
    pub max_seq: u64,
    /// The table's HyperLogLog sketch of its user keys, for policies that
    /// estimate key overlap without reading tables (TRIAD-DISK).
    pub sketch: Sketch,
    /// The logs a log table's values are in (TRIAD-LOG); empty for a
    /// regular table. A version holding the table keeps these logs.
    pub logs: Vec<u64>,
}

/// A table's key sketch when it is in memory: set for tables this process
/// wrote (the builder has it at hand), loaded from the table's properties
/// at open for the levels TRIAD-DISK reads (`Sketch::load`). It is a copy
/// of what the table holds, so it takes no part in equality. In memory it
/// is folded to `Sketch::PRECISION` index bits: 1 KiB of registers per
/// table instead of the stored 4 KiB (the overlap estimate only compares
/// sums of a few tables; its standard error grows from 1.6% to 3.3%).
#[derive(Debug, Clone, Default)]
pub struct Sketch(OnceLock<Arc<HyperLogLog>>);

impl Sketch {
    /// Index bits of a sketch kept in memory.
    pub const PRECISION: u8 = 10;

    /// A sketch holding `hll`, folded to the in-memory precision.
    pub fn of(hll: &HyperLogLog) -> Sketch {
        let sketch = Sketch::default();
        sketch.load(hll);
        sketch
    }

    /// The sketch, when it is in memory.
    pub fn get(&self) -> Option<&Arc<HyperLogLog>> {
        self.0.get()
    }

    /// Keeps `hll` (folded) unless a sketch is already in memory.
    pub fn load(&self, hll: &HyperLogLog) {
        self.0.get_or_init(|| Arc::new(hll.fold(Sketch::PRECISION)));
    }
}

impl PartialEq for Sketch {
    fn eq(&self, _: &Sketch) -> bool {
        true
    }
}

impl Eq for Sketch {}

impl TableMeta {
    /// The file the table lives in.
    pub fn backing(&self) -> Backing {
        Backing::segment(self.segment)
    }

    /// The table's byte range, as the file backings count it.
    pub fn extent(&self) -> Extent {
        Extent {
            id: self.id,
            backing: self.backing(),
            offset: self.offset,
            length: self.length,
        }
    }

    /// Whether the table is a log table (TRIAD-LOG).
    pub fn is_log_table(&self) -> bool {
        !self.logs.is_empty()
    }

    pub fn smallest_user_key(&self) -> &[u8] {
        user_key(&self.smallest)
    }

    pub fn largest_user_key(&self) -> &[u8] {
        user_key(&self.largest)
    }

    /// Whether the table's user-key range intersects `[lo, hi]` (inclusive;
    /// `None` is unbounded).
    pub fn overlaps(&self, lo: Option<&[u8]>, hi: Option<&[u8]>, order: &KeyOrder) -> bool {
        let before = hi.is_some_and(|hi| order.lt(hi, self.smallest_user_key()));
        let after = lo.is_some_and(|lo| order.lt(self.largest_user_key(), lo));
        !before && !after
    }
}

/// A sorted sequence of tables with disjoint user-key ranges.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Run {
    /// Unique run number; larger numbers hold newer data within a level.
    pub id: u64,
    /// Tables ordered by key.
    pub tables: Vec<Arc<TableMeta>>,
}

impl Run {
    /// Index of the only table that may contain `user_key`.
    pub fn find(&self, user_key: &[u8], order: &KeyOrder) -> Option<usize> {
        // Runs of one level often cover disjoint ranges (L0 runs of a
        // sequential load, tiered runs): two comparisons rule most out
        // before a binary search.
        let (first, last) = (self.tables.first()?, self.tables.last()?);
        if order.user(user_key, first.smallest_user_key()) == Ordering::Less
            || order.user(user_key, last.largest_user_key()) == Ordering::Greater
        {
            return None;
        }
        let i = self
            .tables
            .partition_point(|t| order.user(t.largest_user_key(), user_key) == Ordering::Less);
        (i < self.tables.len()
            && order.user(self.tables[i].smallest_user_key(), user_key) != Ordering::Greater)
            .then_some(i)
    }

    /// Tables overlapping `[lo, hi]`: a contiguous slice of the sorted,
    /// disjoint tables, found by binary search (pickers ask once per table
    /// of the level above).
    pub fn overlapping(
        &self,
        lo: Option<&[u8]>,
        hi: Option<&[u8]>,
        order: &KeyOrder,
    ) -> Vec<Arc<TableMeta>> {
        let tables = &self.tables;
        let first = lo.map_or(0, |lo| {
            tables.partition_point(|t| order.lt(t.largest_user_key(), lo))
        });
        let end = hi.map_or(tables.len(), |hi| {
            tables.partition_point(|t| order.le(t.smallest_user_key(), hi))
        });
        tables[first..end.max(first)].to_vec()
    }

    pub fn bytes(&self) -> u64 {
        self.tables.iter().map(|t| t.length).sum()
    }
}

/// Runs of one level, newest first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Level {
    pub runs: Vec<Run>,
    /// Read-only buffer runs beside the level's own, newest first (LSbM's
    /// compaction buffer, `version::buffer`). Their present tables are the
    /// version's like any other: an installed version pins them
    /// (`Version::tables`); removed entries pin nothing.
    pub buffer: Vec<BufferRun>,
    /// LSbM freeze: the level receives repeated data, so its buffer takes
    /// no more tables (arrivals become removed entries) until it drains.
    pub frozen: bool,
    /// LSbM freeze accounting of the level's merge round.
    pub round: BufferRound,
    /// Which of the level's data its buffer is known to hold (LSbM range
    /// reads).
    pub recording: BufferRecording,
    /// Largest internal key of the last round-robin victim (LevelDB's
    /// compaction pointer); empty: start from the first table.
    pub compact_pointer: Vec<u8>,
}

impl Level {
    pub fn bytes(&self) -> u64 {
        self.runs.iter().map(Run::bytes).sum()
    }

    pub fn table_count(&self) -> usize {
        self.runs.iter().map(|r| r.tables.len()).sum()
    }

    /// Tables of the buffer whose data are still there.
    pub fn buffer_tables(&self) -> impl Iterator<Item = &Arc<TableMeta>> {
        self.buffer.iter().flat_map(BufferRun::present)
    }

    /// Bytes of the buffer's present tables.
    pub fn buffer_bytes(&self) -> u64 {
        self.buffer_tables().map(|t| t.length).sum()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::format::internal_key::{InternalKey, ValueKind};

    /// A version of `(level, run, smallest, largest)` tables, numbered
    /// from 100 in the order given.
    pub(crate) fn version(shape: &[(usize, u64, &str, &str)]) -> crate::version::Version {
        let mut edit = crate::version::VersionEdit::default();
        for (i, &(level, run, lo, hi)) in shape.iter().enumerate() {
            edit.add_table(level, run, table(100 + i as u64, lo, hi));
        }
        crate::version::Version::default().apply(&edit).unwrap()
    }

    pub(crate) fn table(id: u64, lo: &str, hi: &str) -> Arc<TableMeta> {
        Arc::new(TableMeta {
            id,
            segment: 1,
            offset: 16,
            length: 100,
            smallest: InternalKey::new(lo.as_bytes(), 9, ValueKind::Value).into_vec(),
            largest: InternalKey::new(hi.as_bytes(), 1, ValueKind::Value).into_vec(),
            entries: 2,
            min_seq: 1,
            max_seq: 9,
            sketch: Sketch::default(),
            logs: Vec::new(),
        })
    }

    #[test]
    fn run_find_and_overlap() {
        let run = Run {
            id: 1,
            tables: vec![table(1, "a", "c"), table(2, "e", "g"), table(3, "h", "k")],
        };
        assert_eq!(run.find(b"b", &KeyOrder::Bytewise), Some(0));
        assert_eq!(run.find(b"d", &KeyOrder::Bytewise), None);
        assert_eq!(run.find(b"g", &KeyOrder::Bytewise), Some(1));
        assert_eq!(run.find(b"z", &KeyOrder::Bytewise), None);
        assert_eq!(run.find(b"0", &KeyOrder::Bytewise), None);
        assert_eq!(run.find(b"a", &KeyOrder::Bytewise), Some(0));
        assert_eq!(run.find(b"k", &KeyOrder::Bytewise), Some(2));
        assert_eq!(
            Run {
                id: 2,
                tables: vec![]
            }
            .find(b"a", &KeyOrder::Bytewise),
            None
        );
        let ids: Vec<u64> = run
            .overlapping(Some(b"c"), Some(b"f"), &KeyOrder::Bytewise)
            .iter()
            .map(|t| t.id)
            .collect();
        assert_eq!(ids, vec![1, 2]);
        assert_eq!(run.overlapping(None, None, &KeyOrder::Bytewise).len(), 3);
    }
}
