//! LSbM's range reads (Algorithm 4): which runs a range read feeds for a
//! level with a compaction buffer, key interval by key interval.
//!
//! A range read may take a level's data from its buffer runs instead of
//! its own run where the buffer holds everything the run does there:
//!
//! - no removed entry overlaps (its data left the buffer; lines 11–13);
//! - no run table there may hold data older than the level's recording
//!   (`BufferRecording`: a store that turned the buffer on late, or
//!   entries dropped while the run may hold their data).
//!
//! Every table that brings data into the level joins its buffer, and an
//! entry leaves it only once the run holds none of its data any more, or
//! with the recording moved past its data (`compaction::buffer`). So
//! where neither holds, the buffer's present
//! tables hold every version the run holds; they may hold older versions
//! too (of keys merged down or overwritten since), which the read's merge
//! orders behind the newer ones every run yields, as their deletions stop
//! them (a newer version arrived in a newer buffer run, see
//! `version::buffer`).
//!
//! The paper decides once per query range. An iterator has no end, so the
//! plan cuts a level's whole key space into pieces instead: the blocked
//! ranges above read the level's run, the gaps between them read the
//! buffer when it has tables there. Each piece is one decision of
//! Algorithm 4; `PieceIterator` (`version::piece_iter`) reads them.

use std::ops::Bound;

use super::lsbm_buffer::BufferRecording;
use super::Version;
use crate::format::KeyOrder;

/// Which runs a piece of a level's key space reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PieceSource {
    /// The level's own run.
    Level,
    /// The level's buffer runs (all present there).
    Buffer,
}

/// One piece of a level's key space: it starts where the previous one
/// ends (after an included end, at an excluded one) and ends at `end`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Piece {
    pub end: Bound<Vec<u8>>,
    pub source: PieceSource,
}

/// A level's pieces in key order, covering every key; at least one reads
/// the buffer.
pub type LevelPlan = Vec<Piece>;

/// The plan of range reads for `level` of `version`, or `None` when they
/// read only its own run: the buffer is not recorded, has no present
/// table outside removed ranges, or a journaled merge is in progress (its
/// interim outputs are not in any buffer).
pub fn plan(version: &Version, level: usize) -> Option<LevelPlan> {
    let l = &version.levels[level];
    let BufferRecording::Since(since) = l.recording else {
        return None;
    };
    if version.merge_journal.is_some() || l.runs.len() != 1 || l.buffer_tables().next().is_none() {
        return None;
    }
    let order = &version.order;
    let mut blocked: Vec<(&[u8], &[u8])> = l
        .buffer
        .iter()
        .flat_map(|r| r.entries.iter().filter(|e| e.removed).map(|e| &e.meta))
        .chain(l.runs[0].tables.iter().filter(|t| t.min_seq <= since))
        .map(|t| (t.smallest_user_key(), t.largest_user_key()))
        .collect();
    blocked.sort_by(|a, b| order.user(a.0, b.0));
    let mut merged: Vec<(&[u8], &[u8])> = Vec::new();
    for (lo, hi) in blocked {
        match merged.last_mut() {
            Some(last) if order.le(lo, last.1) => {
                if order.lt(last.1, hi) {
                    last.1 = hi;
                }
            }
            _ => merged.push((lo, hi)),
        }
    }
    let mut pieces: LevelPlan = Vec::new();
    let mut push = |end: Bound<&[u8]>, source: PieceSource| match pieces.last_mut() {
        Some(last) if last.source == source => last.end = end.map(<[u8]>::to_vec),
        _ => pieces.push(Piece {
            end: end.map(<[u8]>::to_vec),
            source,
        }),
    };
    let mut after: Option<&[u8]> = None;
    for &(lo, hi) in &merged {
        push(
            Bound::Excluded(lo),
            gap_source(version, level, after, Some(lo)),
        );
        push(Bound::Included(hi), PieceSource::Level);
        after = Some(hi);
    }
    push(Bound::Unbounded, gap_source(version, level, after, None));
    pieces
        .iter()
        .any(|p| p.source == PieceSource::Buffer)
        .then_some(pieces)
}

/// What the open key interval `(after, before)` between blocked ranges
/// reads: the buffer when a present table of it overlaps the interval.
fn gap_source(
    version: &Version,
    level: usize,
    after: Option<&[u8]>,
    before: Option<&[u8]>,
) -> PieceSource {
    let order = &version.order;
    let start = after.map_or(Bound::Unbounded, Bound::Excluded);
    let end = before.map_or(Bound::Unbounded, Bound::Excluded);
    let any = version.levels[level].buffer.iter().any(|run| {
        let i = run
            .entries
            .partition_point(|e| !ends_after_start(e.meta.largest_user_key(), start, order));
        run.entries
            .get(i)
            .is_some_and(|e| starts_before_end(e.meta.smallest_user_key(), end, order))
    });
    if any {
        PieceSource::Buffer
    } else {
        PieceSource::Level
    }
}

/// Whether a table ending at `largest` reaches into a piece starting at
/// `start`.
pub fn ends_after_start(largest: &[u8], start: Bound<&[u8]>, order: &KeyOrder) -> bool {
    match start {
        Bound::Unbounded => true,
        Bound::Included(k) => order.le(k, largest),
        Bound::Excluded(k) => order.lt(k, largest),
    }
}

/// Whether a table starting at `smallest` reaches into a piece ending at
/// `end`.
pub fn starts_before_end(smallest: &[u8], end: Bound<&[u8]>, order: &KeyOrder) -> bool {
    match end {
        Bound::Unbounded => true,
        Bound::Included(k) => order.le(smallest, k),
        Bound::Excluded(k) => order.lt(smallest, k),
    }
}

/// The start of the piece after one ending at `end`.
pub fn start_after(end: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match end {
        Bound::Included(k) => Bound::Excluded(k),
        Bound::Excluded(k) => Bound::Included(k),
        Bound::Unbounded => Bound::Unbounded,
    }
}

#[cfg(test)]
mod tests;
