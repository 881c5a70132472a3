//! An iterator over one level read piece by piece (LSbM Algorithm 4, see
//! `version::buffer_range`): each piece of the level's key space reads
//! either the level's own run or a merge of its buffer runs, clipped to
//! the piece. The pieces are the parts of a `ConcatIterator`
//! (`iterator/concat.rs`), which opens each only when the cursor reaches
//! it; a piece's cursor (`PieceCursor`) keeps to the piece's bounds.

use std::ops::Bound;
use std::sync::Arc;

use super::buffer_range::{ends_after_start, start_after, starts_before_end, Piece, PieceSource};
use super::run_iter::RunIterator;
use super::table_cache::TableCache;
use super::{TableMeta, Version};
use crate::error::Result;
use crate::format::internal_key::{user_key, InternalKey, ValueKind, MAX_SEQUENCE};
use crate::iterator::{ConcatIterator, EntryLocation, InternalIterator, MergingIterator, Parts};
use crate::stats::Counters;

/// A cursor over one level of a version, piece by piece.
pub type PieceIterator = ConcatIterator<LevelPieces>;

/// The pieces of one level's range-read plan.
pub struct LevelPieces {
    version: Arc<Version>,
    level: usize,
    cache: Arc<TableCache>,
    fill_cache: bool,
    counters: Arc<Counters>,
}

impl PieceIterator {
    /// A cursor over `level` of `version`, which must have a range plan
    /// (`Version::range_plan`).
    pub fn new(
        version: Arc<Version>,
        level: usize,
        cache: Arc<TableCache>,
        fill_cache: bool,
        counters: Arc<Counters>,
    ) -> PieceIterator {
        debug_assert!(version.range_plan(level).is_some());
        ConcatIterator::over(LevelPieces {
            version,
            level,
            cache,
            fill_cache,
            counters,
        })
    }
}

/// The plan's pieces of `level` in `version`.
fn pieces(version: &Version, level: usize) -> &[Piece] {
    version.range_plan(level).map_or(&[], |p| p.as_slice())
}

/// Piece `i`'s bounds.
fn bounds(pieces: &[Piece], i: usize) -> (Bound<&[u8]>, Bound<&[u8]>) {
    let start = match i.checked_sub(1) {
        Some(p) => start_after(&pieces[p].end),
        None => Bound::Unbounded,
    };
    (start, pieces[i].end.as_ref().map(Vec::as_slice))
}

impl Parts for LevelPieces {
    type Cursor = PieceCursor;

    fn count(&self) -> usize {
        pieces(&self.version, self.level).len()
    }

    fn part_of(&self, target: &[u8]) -> usize {
        let key = user_key(target);
        let order = &self.version.order;
        let pieces = pieces(&self.version, self.level);
        let i = pieces
            .partition_point(|p| !starts_before_end(key, p.end.as_ref().map(Vec::as_slice), order));
        i.min(pieces.len().saturating_sub(1))
    }

    /// Piece `index`: the tables of its source overlapping it.
    fn open(&self, index: usize) -> Result<PieceCursor> {
        let pieces = pieces(&self.version, self.level);
        let source = pieces[index].source;
        let (start, end) = bounds(pieces, index);
        let order = &self.version.order;
        // Tables of a run (or entries of a buffer run) are sorted and
        // disjoint: those overlapping the piece are a contiguous slice.
        let overlapping = |tables: &[Arc<TableMeta>]| -> Vec<Arc<TableMeta>> {
            let first =
                tables.partition_point(|t| !ends_after_start(t.largest_user_key(), start, order));
            tables[first..]
                .iter()
                .take_while(|t| starts_before_end(t.smallest_user_key(), end, order))
                .cloned()
                .collect()
        };
        let level = &self.version.levels[self.level];
        let run = |tables| RunIterator::new(tables, self.cache.clone(), self.fill_cache);
        let inner: Box<dyn InternalIterator> = match source {
            PieceSource::Level => Box::new(run(level
                .runs
                .iter()
                .flat_map(|r| overlapping(&r.tables))
                .collect())),
            PieceSource::Buffer => {
                Counters::add(&self.counters.buffer_range_pieces, 1);
                Box::new(MergingIterator::new(
                    level
                        .buffer
                        .iter()
                        .filter_map(|r| {
                            let first = r.entries.partition_point(|e| {
                                !ends_after_start(e.meta.largest_user_key(), start, order)
                            });
                            // Every entry overlapping a buffer piece is
                            // present (`version::buffer_range`).
                            let tables: Vec<Arc<TableMeta>> = r.entries[first..]
                                .iter()
                                .take_while(|e| {
                                    starts_before_end(e.meta.smallest_user_key(), end, order)
                                })
                                .filter(|e| !e.removed)
                                .map(|e| e.meta.clone())
                                .collect();
                            // A run with nothing here would only slow
                            // every step of the merge.
                            (!tables.is_empty())
                                .then(|| Box::new(run(tables)) as Box<dyn InternalIterator>)
                        })
                        .collect(),
                    order.clone(),
                ))
            }
        };
        Ok(PieceCursor {
            inner,
            version: self.version.clone(),
            level: self.level,
            index,
            within: false,
        })
    }
}

/// The cursor over one piece: its source's tables, kept to the piece's
/// bounds (a step past either end leaves it invalid, and the
/// concatenating iterator moves to the next or previous piece).
pub struct PieceCursor {
    inner: Box<dyn InternalIterator>,
    version: Arc<Version>,
    level: usize,
    index: usize,
    /// Whether `inner` is valid and on a key of the piece (set after every
    /// move, so `valid` compares nothing).
    within: bool,
}

impl PieceCursor {
    fn bounds(&self) -> (Bound<&[u8]>, Bound<&[u8]>) {
        bounds(pieces(&self.version, self.level), self.index)
    }

    /// Records whether the cursor is on a key of the piece.
    fn settle(&mut self) {
        self.within = self.inner.valid() && {
            let key = user_key(self.inner.key());
            let (start, end) = self.bounds();
            let order = &self.version.order;
            ends_after_start(key, start, order) && starts_before_end(key, end, order)
        };
    }
}

impl InternalIterator for PieceCursor {
    fn valid(&self) -> bool {
        self.within
    }

    /// The piece's first entry.
    fn seek_to_first(&mut self) {
        let target = match self.bounds().0 {
            Bound::Unbounded => None,
            Bound::Included(k) => Some((InternalKey::new(k, MAX_SEQUENCE, ValueKind::SEEK), false)),
            // Sequence 0 of the lowest kind sorts after every entry of `k`.
            Bound::Excluded(k) => Some((InternalKey::new(k, 0, ValueKind::Deletion), true)),
        };
        match target {
            None => self.inner.seek_to_first(),
            Some((key, skip_equal)) => {
                self.inner.seek(key.encoded());
                if skip_equal {
                    let k = user_key(key.encoded()).to_vec();
                    while self.inner.valid()
                        && self.version.order.le(user_key(self.inner.key()), &k)
                    {
                        self.inner.next();
                    }
                }
            }
        }
        self.settle();
    }

    /// The piece's last entry.
    fn seek_to_last(&mut self) {
        let end = self.bounds().1.map(<[u8]>::to_vec);
        let after = match &end {
            Bound::Unbounded => None,
            Bound::Included(k) => Some(InternalKey::new(k, 0, ValueKind::Deletion)),
            Bound::Excluded(k) => Some(InternalKey::new(k, MAX_SEQUENCE, ValueKind::SEEK)),
        };
        match after {
            None => self.inner.seek_to_last(),
            Some(after) => {
                self.inner.seek(after.encoded());
                if let Bound::Included(k) = &end {
                    while self.inner.valid() && self.version.order.le(user_key(self.inner.key()), k)
                    {
                        self.inner.next();
                    }
                }
                if self.inner.valid() {
                    self.inner.prev();
                } else if self.inner.status().is_ok() {
                    self.inner.seek_to_last();
                }
            }
        }
        self.settle();
    }

    fn seek(&mut self, target: &[u8]) {
        self.inner.seek(target);
        self.settle();
    }

    fn next(&mut self) {
        self.inner.next();
        self.settle();
    }

    fn prev(&mut self) {
        self.inner.prev();
        self.settle();
    }

    fn key(&self) -> &[u8] {
        self.inner.key()
    }

    fn value(&self) -> &[u8] {
        self.inner.value()
    }

    fn status(&self) -> Result<()> {
        self.inner.status()
    }

    fn location(&self) -> Option<EntryLocation> {
        self.inner.location()
    }
}
