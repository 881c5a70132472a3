//! An iterator over one level read piece by piece (LSbM Algorithm 4, see
//! `version::buffer_range`): each piece of the level's key space reads
//! either the level's own run or a merge of its buffer runs, clipped to
//! the piece; a piece's tables are opened only when the cursor reaches it.

use std::ops::Bound;
use std::sync::Arc;

use super::buffer_range::{ends_after_start, start_after, starts_before_end, PieceSource};
use super::run_iter::RunIterator;
use super::table_cache::TableCache;
use super::{TableMeta, Version};
use crate::error::{Error, Result};
use crate::format::internal_key::{user_key, InternalKey, ValueKind, MAX_SEQUENCE};
use crate::iterator::{EntryLocation, InternalIterator, MergingIterator};
use crate::stats::Counters;

pub struct PieceIterator {
    version: Arc<Version>,
    level: usize,
    cache: Arc<TableCache>,
    fill_cache: bool,
    counters: Arc<Counters>,
    /// Index of the piece `inner` reads.
    index: usize,
    inner: Option<Box<dyn InternalIterator>>,
    /// The first error met: it stays, as a run iterator's does, so that a
    /// later seek cannot hide it by opening another piece.
    error: Option<Error>,
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
        PieceIterator {
            version,
            level,
            cache,
            fill_cache,
            counters,
            index: 0,
            inner: None,
            error: None,
        }
    }

    fn pieces(&self) -> &[super::buffer_range::Piece] {
        self.version
            .range_plan(self.level)
            .map_or(&[], |p| p.as_slice())
    }

    /// Piece `i`'s bounds.
    fn bounds(&self, i: usize) -> (Bound<&[u8]>, Bound<&[u8]>) {
        let pieces = self.pieces();
        let start = match i.checked_sub(1) {
            Some(p) => start_after(&pieces[p].end),
            None => Bound::Unbounded,
        };
        (start, pieces[i].end.as_ref().map(Vec::as_slice))
    }

    /// Opens piece `i`: the tables of its source overlapping it.
    fn open(&mut self, i: usize) {
        if self.error.is_some() {
            self.inner = None;
            return;
        }
        let source = self.pieces()[i].source;
        self.index = i;
        let (start, end) = self.bounds(i);
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
        self.inner = Some(inner);
    }

    /// Positions the open piece's cursor on its first entry.
    fn seek_piece_start(&mut self) {
        if self.inner.is_none() {
            return;
        }
        let target = match self.bounds(self.index).0 {
            Bound::Unbounded => None,
            Bound::Included(k) => Some((InternalKey::new(k, MAX_SEQUENCE, ValueKind::SEEK), false)),
            // Sequence 0 of the lowest kind sorts after every entry of `k`.
            Bound::Excluded(k) => Some((InternalKey::new(k, 0, ValueKind::Deletion), true)),
        };
        let inner = self.inner.as_mut().expect("piece is open");
        match target {
            None => inner.seek_to_first(),
            Some((key, skip_equal)) => {
                inner.seek(key.encoded());
                if skip_equal {
                    let k = user_key(key.encoded()).to_vec();
                    while inner.valid() && self.version.order.le(user_key(inner.key()), &k) {
                        inner.next();
                    }
                }
            }
        }
    }

    /// Positions the open piece's cursor on its last entry.
    fn seek_piece_end(&mut self) {
        if self.inner.is_none() {
            return;
        }
        let end = self.bounds(self.index).1.map(<[u8]>::to_vec);
        let inner = self.inner.as_mut().expect("piece is open");
        let after = match &end {
            Bound::Unbounded => None,
            Bound::Included(k) => Some(InternalKey::new(k, 0, ValueKind::Deletion)),
            Bound::Excluded(k) => Some(InternalKey::new(k, MAX_SEQUENCE, ValueKind::SEEK)),
        };
        match after {
            None => inner.seek_to_last(),
            Some(after) => {
                inner.seek(after.encoded());
                if let Bound::Included(k) = &end {
                    while inner.valid() && self.version.order.le(user_key(inner.key()), k) {
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
    }

    fn inner_valid(&self) -> bool {
        self.inner.as_ref().is_some_and(|i| i.valid())
    }

    /// Moves the open piece's error, if any, into `self.error`.
    fn inner_failed(&mut self) -> bool {
        if let Some(Err(e)) = self.inner.as_ref().map(|i| i.status()) {
            self.error = Some(e);
            self.inner = None;
        }
        self.error.is_some()
    }

    /// Whether the cursor is past the open piece's end.
    fn past_end(&self) -> bool {
        let key = user_key(self.inner.as_ref().expect("piece is open").key());
        !starts_before_end(key, self.bounds(self.index).1, &self.version.order)
    }

    /// Whether the cursor is before the open piece's start.
    fn before_start(&self) -> bool {
        let key = user_key(self.inner.as_ref().expect("piece is open").key());
        !ends_after_start(key, self.bounds(self.index).0, &self.version.order)
    }

    /// Moves forward to the next piece with an entry while the cursor is
    /// off the open piece (or stops on an error).
    fn skip_forward(&mut self) {
        loop {
            if self.inner_failed() {
                return;
            }
            if self.inner_valid() && !self.past_end() {
                return;
            }
            if self.index + 1 >= self.pieces().len() {
                self.inner = None;
                return;
            }
            self.open(self.index + 1);
            self.seek_piece_start();
        }
    }

    fn skip_backward(&mut self) {
        loop {
            if self.inner_failed() {
                return;
            }
            if self.inner_valid() && !self.before_start() {
                return;
            }
            if self.index == 0 {
                self.inner = None;
                return;
            }
            self.open(self.index - 1);
            self.seek_piece_end();
        }
    }

    fn inner(&self) -> &dyn InternalIterator {
        self.inner
            .as_deref()
            .expect("piece iterator used while invalid")
    }
}

impl InternalIterator for PieceIterator {
    fn valid(&self) -> bool {
        // An inner cursor that failed is not valid either.
        self.error.is_none() && self.inner_valid()
    }

    fn seek_to_first(&mut self) {
        self.open(0);
        self.seek_piece_start();
        self.skip_forward();
    }

    fn seek_to_last(&mut self) {
        self.open(self.pieces().len() - 1);
        self.seek_piece_end();
        self.skip_backward();
    }

    fn seek(&mut self, target: &[u8]) {
        let key = user_key(target);
        let order = &self.version.order;
        let i = self
            .pieces()
            .partition_point(|p| !starts_before_end(key, p.end.as_ref().map(Vec::as_slice), order));
        self.open(i.min(self.pieces().len() - 1));
        if let Some(inner) = self.inner.as_mut() {
            inner.seek(target);
        }
        self.skip_forward();
    }

    fn next(&mut self) {
        if let Some(inner) = &mut self.inner {
            inner.next();
        }
        self.skip_forward();
    }

    fn prev(&mut self) {
        if let Some(inner) = &mut self.inner {
            inner.prev();
        }
        self.skip_backward();
    }

    fn key(&self) -> &[u8] {
        self.inner().key()
    }

    fn value(&self) -> &[u8] {
        self.inner().value()
    }

    fn status(&self) -> Result<()> {
        if let Some(e) = &self.error {
            return Err(e.clone());
        }
        self.inner.as_ref().map_or(Ok(()), |i| i.status())
    }

    fn location(&self) -> Option<EntryLocation> {
        self.inner.as_ref()?.location()
    }
}
