//! An iterator over one level read piece by piece (LSbM Algorithm 4, see
//! `version::buffer_range`): each piece of the level's key space reads
//! either the level's own run or a merge of its buffer runs, clipped to
//! the piece. The pieces are the parts of a `ConcatIterator`
//! (`iterator/concat.rs`), which opens each only when the cursor reaches
//! it; a piece's cursor (`PieceCursor`) keeps to the piece's bounds.
//!
//! Where the buffer may serve a piece, the choice is made once per query
//! (an iterator; a range read is one), where the query first reaches the
//! piece, and kept for the iterator's life: the level must look to the
//! merge above it like one sorted sequence (a child found empty past a key
//! may not show a later entry when asked for its last one). The choice:
//! with `lsbm_range_by_cache`, the level's own run serves it when its table
//! there holds at least `lsbm_trim_threshold` of its blocks in the block
//! cache (the paper's mark of frequently visited data, §IV-B), or more
//! than a buffer table the query starts in: a range read of the buffer
//! merges up to r runs, each with its own seek, where the level's run is
//! one sorted table, so the buffer serves a query only where it may save
//! block reads. Otherwise (and on ties, as when nothing is cached yet) the
//! buffer serves it, as in the paper, whose blocks compactions leave
//! cached.

use std::ops::Bound;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

use super::buffer_range::{ends_after_start, start_after, starts_before_end, Piece, PieceSource};
use super::run_iter::RunIterator;
use super::table_cache::TableCache;
use super::{TableMeta, Version};
use crate::error::Result;
use crate::format::internal_key::{user_key, InternalKey, ValueKind, MAX_SEQUENCE};
use crate::format::KeyOrder;
use crate::iterator::{ConcatIterator, EntryLocation, InternalIterator, MergingIterator, Parts};
use crate::stats::Counters;

/// A cursor over one level of a version, piece by piece.
pub type PieceIterator = ConcatIterator<LevelPieces>;

/// The pieces of one level's range-read plan.
pub struct LevelPieces {
    read: Arc<PieceRead>,
}

/// What every piece of a level's read shares.
struct PieceRead {
    version: Arc<Version>,
    level: usize,
    cache: Arc<TableCache>,
    fill_cache: bool,
    counters: Arc<Counters>,
    /// `lsbm_range_by_cache`'s threshold: `None` reads the buffer wherever
    /// it may serve (Algorithm 4 as the paper gives it).
    by_cache: Option<f64>,
    /// Each piece's source once chosen (`UNCHOSEN`, or a `PieceSource` as
    /// `source_code` encodes it).
    chosen: Vec<AtomicU8>,
}

const UNCHOSEN: u8 = 0;

/// How old a table's share of cached blocks a choice may go by: counting
/// it walks every shard of the block cache (12% of `lsbm`'s range reads'
/// time when counted per choice, 2026-11-28).
pub(crate) const SHARE_MAX_AGE: std::time::Duration = std::time::Duration::from_millis(100);

fn source_code(source: PieceSource) -> u8 {
    match source {
        PieceSource::Level => 1,
        PieceSource::Buffer => 2,
    }
}

impl PieceIterator {
    /// A cursor over `level` of `version`, which must have a range plan
    /// (`Version::range_plan`).
    /// (`Version::range_plan`). With `by_cache` (a cached-block share),
    /// a query reads the buffer only where the level's table holds a
    /// smaller share than that and the buffer's tables a larger one than
    /// the level's.
    pub fn new(
        version: Arc<Version>,
        level: usize,
        cache: Arc<TableCache>,
        fill_cache: bool,
        counters: Arc<Counters>,
        by_cache: Option<f64>,
    ) -> PieceIterator {
        debug_assert!(version.range_plan(level).is_some());
        let chosen = pieces(&version, level)
            .iter()
            .map(|_| AtomicU8::new(UNCHOSEN))
            .collect();
        ConcatIterator::over(LevelPieces {
            read: Arc::new(PieceRead {
                chosen,
                version,
                level,
                cache,
                fill_cache,
                counters,
                by_cache,
            }),
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
        pieces(&self.read.version, self.read.level).len()
    }

    fn part_of(&self, target: &[u8]) -> usize {
        let key = user_key(target);
        let order = &self.read.version.order;
        let pieces = pieces(&self.read.version, self.read.level);
        let i = pieces
            .partition_point(|p| !starts_before_end(key, p.end.as_ref().map(Vec::as_slice), order));
        i.min(pieces.len().saturating_sub(1))
    }

    /// Piece `index`, its source chosen when it is first positioned.
    fn open(&self, index: usize) -> Result<PieceCursor> {
        Ok(PieceCursor {
            inner: None,
            read: self.read.clone(),
            index,
            within: false,
        })
    }
}

impl PieceRead {
    fn pieces(&self) -> &[Piece] {
        pieces(&self.version, self.level)
    }

    /// The tables of `tables` (sorted, disjoint) overlapping piece `index`
    /// from `from` on: a contiguous slice.
    fn overlapping<'a, T>(
        &self,
        index: usize,
        from: Bound<&[u8]>,
        tables: &'a [T],
        meta: impl Fn(&T) -> &TableMeta,
    ) -> &'a [T] {
        let (start, end) = bounds(self.pieces(), index);
        let order = &self.version.order;
        let start = later_start(start, from, order);
        let first =
            tables.partition_point(|t| !ends_after_start(meta(t).largest_user_key(), start, order));
        let rest = &tables[first..];
        let n = rest
            .iter()
            .take_while(|t| starts_before_end(meta(t).smallest_user_key(), end, order))
            .count();
        &rest[..n]
    }

    /// Which source serves piece `index`: the one chosen before, or chosen
    /// now for a query reaching it at `from` (counted per level).
    fn choose(&self, index: usize, from: Bound<&[u8]>) -> PieceSource {
        match self.chosen[index].load(Ordering::Relaxed) {
            UNCHOSEN => {}
            code if code == source_code(PieceSource::Level) => return PieceSource::Level,
            _ => return PieceSource::Buffer,
        }
        let source = match self.pieces()[index].source {
            PieceSource::Level => {
                self.chosen[index].store(source_code(PieceSource::Level), Ordering::Relaxed);
                return PieceSource::Level;
            }
            PieceSource::Buffer => match self.by_cache {
                None => PieceSource::Buffer,
                Some(threshold) => self.by_cached_share(index, from, threshold),
            },
        };
        let c = &self.counters;
        match source {
            PieceSource::Buffer => {
                Counters::add(&c.buffer_range_pieces, 1);
                Counters::add_at(&c.buffer_range_reads_per_level, self.level, 1);
            }
            PieceSource::Level => Counters::add_at(&c.level_range_reads_per_level, self.level, 1),
        }
        self.chosen[index].store(source_code(source), Ordering::Relaxed);
        source
    }

    /// The level when its table where the query starts has a share of
    /// cached blocks of `threshold` or more, or more than a buffer run's
    /// table there; else the buffer.
    fn by_cached_share(&self, index: usize, from: Bound<&[u8]>, threshold: f64) -> PieceSource {
        let share = |meta: &Arc<TableMeta>| {
            self.cache
                .table(meta)
                .map_or(0.0, |t| t.cached_block_ratio_recent(SHARE_MAX_AGE))
        };
        let level = &self.version.levels[self.level];
        let own = level
            .runs
            .iter()
            .filter_map(|r| self.overlapping(index, from, &r.tables, |t| t).first())
            .map(share)
            .fold(None, |low: Option<f64>, s| Some(low.map_or(s, |l| l.min(s))));
        let Some(own) = own.filter(|&s| s < threshold) else {
            return PieceSource::Level;
        };
        let mut any = false;
        for run in &level.buffer {
            let Some(first) = self.overlapping(index, from, &run.entries, |e| &e.meta).first() else {
                continue;
            };
            any = true;
            if share(&first.meta) < own {
                return PieceSource::Level;
            }
        }
        if any {
            PieceSource::Buffer
        } else {
            PieceSource::Level
        }
    }

    /// The cursor reading piece `index` from `source`.
    fn cursor(&self, index: usize, source: PieceSource) -> Box<dyn InternalIterator> {
        let level = &self.version.levels[self.level];
        let all = Bound::Unbounded;
        let run = |tables| RunIterator::new(tables, self.cache.clone(), self.fill_cache);
        match source {
            PieceSource::Level => Box::new(run(level
                .runs
                .iter()
                .flat_map(|r| self.overlapping(index, all, &r.tables, |t| t).iter().cloned())
                .collect())),
            PieceSource::Buffer => Box::new(MergingIterator::new(
                level
                    .buffer
                    .iter()
                    .filter_map(|r| {
                        // Every entry overlapping a buffer piece is
                        // present (`version::buffer_range`).
                        let tables: Vec<Arc<TableMeta>> = self
                            .overlapping(index, all, &r.entries, |e| &e.meta)
                            .iter()
                            .filter(|e| !e.removed)
                            .map(|e| e.meta.clone())
                            .collect();
                        // A run with nothing here would only slow
                        // every step of the merge.
                        (!tables.is_empty())
                            .then(|| Box::new(run(tables)) as Box<dyn InternalIterator>)
                    })
                    .collect(),
                self.version.order.clone(),
            )),
        }
    }
}

/// The later of two starts.
fn later_start<'a>(a: Bound<&'a [u8]>, b: Bound<&'a [u8]>, order: &KeyOrder) -> Bound<&'a [u8]> {
    match (a, b) {
        (Bound::Unbounded, other) | (other, Bound::Unbounded) => other,
        (Bound::Included(x), Bound::Included(y)) => Bound::Included(if order.lt(x, y) { y } else { x }),
        (Bound::Excluded(x), Bound::Excluded(y)) => Bound::Excluded(if order.lt(x, y) { y } else { x }),
        (Bound::Included(i), Bound::Excluded(e)) | (Bound::Excluded(e), Bound::Included(i)) => {
            if order.le(i, e) {
                Bound::Excluded(e)
            } else {
                Bound::Included(i)
            }
        }
    }
}

/// The cursor over one piece: its source's tables, kept to the piece's
/// bounds (a step past either end leaves it invalid, and the
/// concatenating iterator moves to the next or previous piece).
pub struct PieceCursor {
    /// The chosen source's tables, once a query positioned the cursor.
    inner: Option<(PieceSource, Box<dyn InternalIterator>)>,
    read: Arc<PieceRead>,
    index: usize,
    /// Whether `inner` is valid and on a key of the piece (set after every
    /// move, so `valid` compares nothing).
    within: bool,
}

impl PieceCursor {
    fn bounds(&self) -> (Bound<&[u8]>, Bound<&[u8]>) {
        bounds(self.read.pieces(), self.index)
    }

    /// The piece's source, chosen for a query reaching it at `from` if it
    /// was not yet, positioned by the caller.
    fn start_query(&mut self, from: Bound<&[u8]>) -> &mut dyn InternalIterator {
        let source = self.read.choose(self.index, from);
        if self.inner.as_ref().is_none_or(|(s, _)| *s != source) {
            self.inner = Some((source, self.read.cursor(self.index, source)));
        }
        &mut *self.inner.as_mut().expect("just chosen").1
    }

    /// The source's cursor (a move before any positioning, a misuse,
    /// chooses as a query from the piece's start would).
    fn inner(&mut self) -> &mut dyn InternalIterator {
        if self.inner.is_none() {
            let start = self.bounds().0.map(<[u8]>::to_vec);
            self.start_query(start.as_ref().map(Vec::as_slice));
        }
        &mut *self.inner.as_mut().expect("just made").1
    }

    fn current(&self) -> &dyn InternalIterator {
        &*self.inner.as_ref().expect("a valid piece cursor was positioned").1
    }

    /// Records whether the cursor is on a key of the piece.
    fn settle(&mut self) {
        let Some((_, inner)) = &self.inner else {
            self.within = false;
            return;
        };
        self.within = inner.valid() && {
            let key = user_key(inner.key());
            let (start, end) = self.bounds();
            let order = &self.read.version.order;
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
        let start = self.bounds().0.map(<[u8]>::to_vec);
        let target = match &start {
            Bound::Unbounded => None,
            Bound::Included(k) => Some((InternalKey::new(k, MAX_SEQUENCE, ValueKind::SEEK), false)),
            // Sequence 0 of the lowest kind sorts after every entry of `k`.
            Bound::Excluded(k) => Some((InternalKey::new(k, 0, ValueKind::Deletion), true)),
        };
        let read = self.read.clone();
        let inner = self.start_query(start.as_ref().map(Vec::as_slice));
        match target {
            None => inner.seek_to_first(),
            Some((key, skip_equal)) => {
                inner.seek(key.encoded());
                if skip_equal {
                    let k = user_key(key.encoded());
                    while inner.valid() && read.version.order.le(user_key(inner.key()), k) {
                        inner.next();
                    }
                }
            }
        }
        self.settle();
    }

    /// The piece's last entry. A backward query starts at the piece's
    /// start for the choice (the source serves the whole piece).
    fn seek_to_last(&mut self) {
        let end = self.bounds().1.map(<[u8]>::to_vec);
        let after = match &end {
            Bound::Unbounded => None,
            Bound::Included(k) => Some(InternalKey::new(k, 0, ValueKind::Deletion)),
            Bound::Excluded(k) => Some(InternalKey::new(k, MAX_SEQUENCE, ValueKind::SEEK)),
        };
        let read = self.read.clone();
        let start = self.bounds().0.map(<[u8]>::to_vec);
        let inner = self.start_query(start.as_ref().map(Vec::as_slice));
        match after {
            None => inner.seek_to_last(),
            Some(after) => {
                inner.seek(after.encoded());
                if let Bound::Included(k) = &end {
                    while inner.valid() && read.version.order.le(user_key(inner.key()), k) {
                        inner.next();
                    }
                }
                if inner.valid() {
                    inner.prev();
                } else if inner.status().is_ok() {
                    inner.seek_to_last();
                }
            }
        }
        self.settle();
    }

    fn seek(&mut self, target: &[u8]) {
        let from = user_key(target).to_vec();
        self.start_query(Bound::Included(&from)).seek(target);
        self.settle();
    }

    fn next(&mut self) {
        self.inner().next();
        self.settle();
    }

    fn prev(&mut self) {
        self.inner().prev();
        self.settle();
    }

    fn key(&self) -> &[u8] {
        self.current().key()
    }

    fn value(&self) -> &[u8] {
        self.current().value()
    }

    fn status(&self) -> Result<()> {
        self.inner.as_ref().map_or(Ok(()), |(_, i)| i.status())
    }

    fn location(&self) -> Option<EntryLocation> {
        self.inner.as_ref().and_then(|(_, i)| i.location())
    }
}
