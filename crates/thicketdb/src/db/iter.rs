//! The user-facing iterator: a merge of every memtable and run, filtered to
//! one sequence number, collapsed to the newest version of each user key,
//! with deletions hidden, within optional bounds, in both directions. A
//! value a newer range tombstone covers reads as a deletion
//! (`version::range_del_view`).
//!
//! It follows LevelDB's `DBIter`: going forward the merged cursor sits on the
//! entry being returned; going backward it sits just before all entries of
//! the returned key, whose value is copied aside.

use std::sync::Arc;

use super::call_options::ReadOptions;
use super::snapshot::Snapshot;
use crate::error::{Error, Result};
use crate::format::internal_key::{user_key, InternalKey, ParsedKey, ValueKind, MAX_SEQUENCE};
use crate::format::KeyOrder;
use crate::iterator::{InternalIterator, MergingIterator};
use crate::version::range_del_view::{Cover, RangeDelView};

/// Seeks a merge's children side by side (SifrDB's parallel seek: the
/// LSM's search pool); an iterator without one seeks them in turn.
pub(crate) trait ParallelSeek: Send + Sync {
    /// `children`, each sought to `target`.
    fn seek(
        &self,
        children: Vec<Box<dyn InternalIterator>>,
        target: &[u8],
    ) -> Vec<Box<dyn InternalIterator>>;
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Direction {
    Forward,
    Reverse,
}

/// A cursor over user keys. Call `seek_to_first`, `seek_to_last` or `seek`
/// before reading. It sees one consistent state and never blocks writers.
/// For plain range scans, [`Db::range`](crate::Db::range) is simpler.
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// let db = thicketdb::Db::open(dir.path(), thicketdb::Options::default())?;
/// for k in ["a", "c", "e"] {
///     db.put(k, k.to_uppercase())?;
/// }
/// let mut it = db.iter(thicketdb::ReadOptions::default())?;
/// it.seek(b"b");
/// assert_eq!((it.key(), it.value()), (&b"c"[..], &b"C"[..]));
/// it.next();
/// assert_eq!(it.key(), b"e");
/// it.prev();
/// it.prev();
/// assert_eq!(it.key(), b"a");
/// it.status()?; // an I/O error or corruption ends iteration early
/// # Ok::<(), thicketdb::Error>(())
/// ```
pub struct DbIterator {
    iter: MergingIterator,
    snapshot: Snapshot,
    direction: Direction,
    valid: bool,
    /// Forward: the user key being skipped; reverse: the current key.
    saved_key: Vec<u8>,
    saved_value: Vec<u8>,
    lower: Option<Vec<u8>>,
    upper: Option<Vec<u8>>,
    error: Option<Error>,
    /// Keeps what this iterator reads alive (the LSM's memtables and
    /// version, or the chunks of a chunked store).
    _sources: Box<dyn std::any::Any + Send + Sync>,
    /// Seeks its sources in parallel when it reads enough runs (SifrDB).
    parallel_seek: Option<Arc<dyn ParallelSeek>>,
    /// The store's key order.
    order: KeyOrder,
    /// The range tombstones of the merged sources (`None`: a layout
    /// without range deletes).
    range_dels: Option<RangeDelView>,
}

impl DbIterator {
    /// An iterator over the merge of `sources` (disjoint or not, sorted by
    /// internal key in `order`) at `snapshot`, within the bounds of
    /// `opts`, without range deletes (`with_range_dels` adds them) or
    /// parallel seeks; `keep` holds what the sources read.
    pub(crate) fn over_sources(
        sources: Vec<Box<dyn InternalIterator>>,
        snapshot: Snapshot,
        opts: ReadOptions,
        order: KeyOrder,
        keep: Box<dyn std::any::Any + Send + Sync>,
    ) -> DbIterator {
        DbIterator {
            iter: MergingIterator::new(sources, order.clone()),
            snapshot,
            direction: Direction::Forward,
            valid: false,
            saved_key: Vec::new(),
            saved_value: Vec::new(),
            lower: opts.lower_bound,
            upper: opts.upper_bound,
            error: None,
            _sources: keep,
            parallel_seek: None,
            order,
            range_dels: None,
        }
    }

    /// The iterator with its seeks run by `seeker`.
    pub(crate) fn with_parallel_seek(mut self, seeker: Arc<dyn ParallelSeek>) -> DbIterator {
        self.parallel_seek = Some(seeker);
        self
    }

    /// The iterator with `view` for the range tombstones of its sources.
    pub(crate) fn with_range_dels(mut self, view: RangeDelView) -> DbIterator {
        self.range_dels = Some(view);
        self
    }

    /// Whether the cursor is on a key. When it turns false, check `status`.
    pub fn valid(&self) -> bool {
        self.valid
    }

    /// The current key; requires `valid()`.
    pub fn key(&self) -> &[u8] {
        assert!(self.valid, "DbIterator::key on an invalid iterator");
        match self.direction {
            Direction::Forward => user_key(self.iter.key()),
            Direction::Reverse => &self.saved_key,
        }
    }

    /// The current value; requires `valid()`.
    pub fn value(&self) -> &[u8] {
        assert!(self.valid, "DbIterator::value on an invalid iterator");
        match self.direction {
            Direction::Forward => self.iter.value(),
            Direction::Reverse => &self.saved_value,
        }
    }

    /// The first error met (I/O or corruption), if any.
    pub fn status(&self) -> Result<()> {
        if let Some(e) = &self.error {
            return Err(e.clone());
        }
        self.iter.status()
    }

    /// Positions on the first key at or above the lower bound.
    pub fn seek_to_first(&mut self) {
        match self.lower.clone() {
            Some(lower) => self.seek(&lower),
            None => {
                self.direction = Direction::Forward;
                self.iter.seek_to_first();
                self.find_next_user_entry(false);
            }
        }
    }

    /// Positions on the last key below the upper bound.
    pub fn seek_to_last(&mut self) {
        self.direction = Direction::Reverse;
        self.saved_key.clear();
        match &self.upper {
            Some(upper) => {
                let target = InternalKey::new(upper, MAX_SEQUENCE, ValueKind::SEEK);
                self.iter.seek(target.encoded());
                if self.iter.valid() {
                    self.iter.prev();
                } else if self.iter.status().is_ok() {
                    // Every key is below the bound. After a failed seek the
                    // last key could lie above it: stay invalid instead.
                    self.iter.seek_to_last();
                }
            }
            None => self.iter.seek_to_last(),
        }
        self.find_prev_user_entry();
    }

    /// Positions on the first key `>= target` (and within bounds).
    pub fn seek(&mut self, target: &[u8]) {
        let target = match &self.lower {
            Some(lower) if self.order.lt(target, lower) => lower.clone(),
            _ => target.to_vec(),
        };
        self.direction = Direction::Forward;
        self.saved_key.clear();
        let ikey = InternalKey::new(&target, self.snapshot.sequence(), ValueKind::SEEK);
        match &self.parallel_seek {
            Some(pool) => self.iter.seek_with(ikey.encoded(), |children, target| {
                pool.seek(children, target)
            }),
            None => self.iter.seek(ikey.encoded()),
        }
        self.find_next_user_entry(false);
    }

    /// Moves to the next key; requires `valid()`.
    pub fn next(&mut self) {
        assert!(self.valid, "DbIterator::next on an invalid iterator");
        if self.direction == Direction::Reverse {
            self.direction = Direction::Forward;
            // The cursor is below the current key's entries, though not
            // always just below: older sources may have been moved back
            // past a covering tombstone's start. Seek to the current key.
            let target = InternalKey::new(&self.saved_key, MAX_SEQUENCE, ValueKind::SEEK);
            self.iter.seek(target.encoded());
        } else {
            self.saved_key.clear();
            self.saved_key.extend_from_slice(user_key(self.iter.key()));
            self.iter.next();
        }
        self.find_next_user_entry(true);
    }

    /// Moves to the previous key; requires `valid()`.
    pub fn prev(&mut self) {
        assert!(self.valid, "DbIterator::prev on an invalid iterator");
        if self.direction == Direction::Forward {
            self.saved_key.clear();
            self.saved_key.extend_from_slice(user_key(self.iter.key()));
            loop {
                self.iter.prev();
                if !self.iter.valid() {
                    self.valid = false;
                    self.saved_key.clear();
                    self.saved_value.clear();
                    return;
                }
                if self.order.lt(user_key(self.iter.key()), &self.saved_key) {
                    break;
                }
            }
            self.direction = Direction::Reverse;
        }
        self.find_prev_user_entry();
    }

    fn parse(&mut self) -> Option<(u64, ValueKind)> {
        match ParsedKey::parse(self.iter.key()) {
            Some(p) => Some((p.sequence, p.kind)),
            None => {
                let what = "malformed internal key";
                self.error = Some(match self.iter.location() {
                    Some(at) => at.corruption(what),
                    None => Error::invariant(format!("{what} in a memtable")),
                });
                None
            }
        }
    }

    /// What covers the current entry, a value at `seq`, if a newer range
    /// tombstone does. An error reading a table's tombstones is kept in
    /// `error`, which ends the scan.
    fn cover(&mut self, seq: u64) -> Option<Cover> {
        let range_dels = self.range_dels.as_mut().filter(|r| !r.is_empty())?;
        match range_dels.covering(user_key(self.iter.key())) {
            Ok(cover) => cover.filter(|c| c.seq > seq),
            Err(e) => {
                self.error = Some(e);
                None
            }
        }
    }

    fn find_next_user_entry(&mut self, mut skipping: bool) {
        self.valid = false;
        while self.iter.valid() && self.error.is_none() {
            if let Some((seq, kind)) = self.parse() {
                if seq <= self.snapshot.sequence() {
                    let ukey = user_key(self.iter.key());
                    if self
                        .upper
                        .as_deref()
                        .is_some_and(|u| self.order.le(u, ukey))
                    {
                        break;
                    }
                    let hidden = skipping && self.order.le(ukey, &self.saved_key);
                    let cover = match (hidden, kind) {
                        (false, ValueKind::Value) => self.cover(seq),
                        _ => None,
                    };
                    let kind = if cover.is_some() || self.error.is_some() {
                        ValueKind::Deletion
                    } else {
                        kind
                    };
                    let ukey = user_key(self.iter.key());
                    match kind {
                        ValueKind::Deletion => {
                            self.saved_key.clear();
                            self.saved_key.extend_from_slice(ukey);
                            skipping = true;
                            // Older sources hold only what the tombstone
                            // covers up to its end: seek them past it.
                            if let Some(c) = cover.filter(|c| c.skippable) {
                                let seq = self.snapshot.sequence();
                                let end = InternalKey::new(&c.end, seq, ValueKind::SEEK);
                                if self.iter.seek_older(c.source + 1, end.encoded()) {
                                    continue;
                                }
                            }
                        }
                        ValueKind::Value => {
                            if !hidden {
                                self.valid = true;
                                self.saved_key.clear();
                                return;
                            }
                        }
                    }
                }
            }
            self.iter.next();
        }
        self.saved_key.clear();
    }

    fn find_prev_user_entry(&mut self) {
        let mut kind = ValueKind::Deletion;
        while self.iter.valid() && self.error.is_none() {
            if let Some((seq, this_kind)) = self.parse() {
                if seq <= self.snapshot.sequence() {
                    let ukey = user_key(self.iter.key());
                    if kind != ValueKind::Deletion && self.order.lt(ukey, &self.saved_key) {
                        break;
                    }
                    if self
                        .lower
                        .as_deref()
                        .is_some_and(|l| self.order.lt(ukey, l))
                    {
                        break;
                    }
                    let cover = match this_kind {
                        ValueKind::Value => self.cover(seq),
                        ValueKind::Deletion => None,
                    };
                    kind = if cover.is_some() {
                        ValueKind::Deletion
                    } else {
                        this_kind
                    };
                    // Older sources hold only what the tombstone covers
                    // from its start up to here: move them before it.
                    if let Some(c) = cover.filter(|c| c.skippable) {
                        self.saved_key.clear();
                        self.saved_value.clear();
                        let start = InternalKey::new(&c.start, MAX_SEQUENCE, ValueKind::SEEK);
                        if self.iter.seek_older_before(c.source + 1, start.encoded()) {
                            continue;
                        }
                    }
                    let ukey = user_key(self.iter.key());
                    match kind {
                        ValueKind::Deletion => {
                            self.saved_key.clear();
                            self.saved_value.clear();
                        }
                        ValueKind::Value => {
                            self.saved_key.clear();
                            self.saved_key.extend_from_slice(ukey);
                            self.saved_value.clear();
                            self.saved_value.extend_from_slice(self.iter.value());
                        }
                    }
                }
            }
            self.iter.prev();
        }
        if kind == ValueKind::Deletion || self.error.is_some() {
            self.valid = false;
            self.saved_key.clear();
            self.saved_value.clear();
            self.direction = Direction::Forward;
        } else {
            self.valid = true;
        }
    }
}
