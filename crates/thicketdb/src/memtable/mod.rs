//! The memtable: a concurrent skiplist of internal keys.
//!
//! One writer at a time (the write-group leader) inserts; any number of
//! readers and iterators proceed concurrently without locks. Short keys live
//! inside their skiplist node; see `skiplist.rs`.

mod byte_arena;
mod filter;
pub mod hot;
mod iter;
mod mapped_vec;
#[cfg(test)]
mod miri_tests;
pub mod newest;
mod range_dels;
mod skiplist;

use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};
use std::sync::Arc;

use crate::format::internal_key::{pack_trailer, trailer, user_key, ParsedKey, ValueKind};
use crate::format::range_tombstone::Fragments;
use crate::format::KeyOrder;
use crate::io::FilePin;

use filter::MemtableFilter;
pub use iter::MemtableIterator;
pub use range_dels::RangeDels;
use skiplist::{SkipList, NIL};

/// What a memtable knows about a user key at a snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup {
    Value(Vec<u8>),
    Deleted,
}

/// Where an entry's value is in its memtable's log: the offset of the
/// record (its first fragment) and of the value in the record's payload.
/// TRIAD-LOG's flush writes these instead of the values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogLocation {
    pub record: u64,
    pub offset: u64,
}

impl LogLocation {
    /// An entry whose place in the log is not known (not written through
    /// the memtable's log).
    pub const UNKNOWN: LogLocation = LogLocation {
        record: u64::MAX,
        offset: u64::MAX,
    };
}

/// A [`LogLocation`] in the 8 bytes per entry the paper budgets: 40 bits
/// of record offset (logs up to 1 TiB), 24 bits of offset in the record
/// (16 MiB: a write group is at most 1 MiB unless one batch is larger). A
/// location beyond either is kept as unknown, and its memtable is flushed
/// as a regular table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PackedLocation(u64);

impl PackedLocation {
    const OFFSET_BITS: u32 = 24;
    pub(crate) const UNKNOWN: PackedLocation = PackedLocation(u64::MAX);

    pub(crate) fn pack(at: LogLocation) -> PackedLocation {
        let fits = at.record < 1 << (64 - Self::OFFSET_BITS) && at.offset < 1 << Self::OFFSET_BITS;
        match fits {
            // The one location whose bits are all ones reads as unknown.
            true => PackedLocation(at.record << Self::OFFSET_BITS | at.offset),
            false => Self::UNKNOWN,
        }
    }

    pub(crate) fn unpack(self) -> Option<LogLocation> {
        (self != Self::UNKNOWN).then_some(LogLocation {
            record: self.0 >> Self::OFFSET_BITS,
            offset: self.0 & ((1 << Self::OFFSET_BITS) - 1),
        })
    }
}

/// An in-memory sorted buffer of recent writes, tied to one log file.
pub struct Memtable {
    list: SkipList,
    size: AtomicU64,
    /// Entries added without a known location while locations are tracked:
    /// such a memtable cannot be flushed as a log table.
    unlocated: AtomicU64,
    /// Range tombstones beside the point entries.
    range_dels: RangeDels,
    /// Rules out most user keys the memtable does not hold, before a get
    /// searches the skiplist (`memtable_bloom_size_ratio`).
    filter: Option<MemtableFilter>,
    log_number: u64,
    /// Keeps the log file while the memtable's writes may still be needed
    /// (until it is flushed and no reader holds it).
    _log: Option<FilePin>,
}

impl Memtable {
    /// A memtable whose writes are recorded in log `log_number`, its keys
    /// sorted by `order`.
    pub fn new(log_number: u64, order: KeyOrder) -> Memtable {
        Memtable {
            list: SkipList::new(order),
            size: AtomicU64::new(0),
            unlocated: AtomicU64::new(0),
            range_dels: RangeDels::default(),
            filter: None,
            log_number,
            _log: None,
        }
    }

    /// A memtable whose writes go to the log `pin` references; the log is
    /// released when the memtable drops.
    pub fn with_log(pin: FilePin, order: KeyOrder) -> Memtable {
        Memtable {
            log_number: pin.backing().number,
            _log: Some(pin),
            ..Memtable::new(0, order)
        }
    }

    /// Makes the memtable remember where each entry's value is in its log
    /// (TRIAD-LOG), when `on`.
    pub fn tracking_locations(mut self, on: bool) -> Memtable {
        if on {
            self.list.track_locations();
        }
        self
    }

    /// Gives the memtable a Bloom filter of about `bytes` over its user
    /// keys (none when 0), charged to its size as the skiplist is.
    pub fn with_filter(mut self, bytes: usize) -> Memtable {
        if bytes > 0 {
            let filter = MemtableFilter::new(bytes);
            self.size
                .fetch_add(filter.bytes() as u64, AtomicOrdering::Relaxed);
            self.filter = Some(filter);
        }
        self
    }

    /// The log holding this memtable's writes.
    pub fn log_number(&self) -> u64 {
        self.log_number
    }

    /// Whether every entry's value can be found in the memtable's log (the
    /// memtable tracks locations and was given one for every entry).
    pub fn values_located(&self) -> bool {
        self.list.tracks_locations() && self.unlocated.load(AtomicOrdering::Relaxed) == 0
    }

    /// Inserts an entry. Sequence numbers are unique, so entries never collide.
    pub fn add(&self, seq: u64, kind: ValueKind, user_key: &[u8], value: &[u8]) {
        self.add_at(seq, kind, user_key, value, LogLocation::UNKNOWN);
    }

    /// Inserts an entry whose value is at `location` in the memtable's log.
    pub fn add_at(
        &self,
        seq: u64,
        kind: ValueKind,
        user_key: &[u8],
        value: &[u8],
        location: LogLocation,
    ) {
        let location = PackedLocation::pack(location);
        if location == PackedLocation::UNKNOWN && self.list.tracks_locations() {
            self.unlocated.fetch_add(1, AtomicOrdering::Relaxed);
        }
        if let Some(filter) = &self.filter {
            // Before the insert: a reader that finds the entry's sequence
            // published finds its bits.
            filter.add(user_key);
        }
        let trailer = pack_trailer(seq, kind).to_le_bytes();
        let charge = self.list.insert(user_key, trailer, value, location);
        self.size.fetch_add(charge as u64, AtomicOrdering::Relaxed);
    }

    /// Records a range deletion of `[start, end)` at `seq`. Only the write
    /// leader (or recovery) adds, one at a time.
    pub fn add_range_deletion(&self, seq: u64, start: &[u8], end: &[u8]) {
        self.range_dels.insert(seq, start, end);
        let charge = start.len() + end.len() + 32;
        self.size.fetch_add(charge as u64, AtomicOrdering::Relaxed);
    }

    /// The range tombstones written so far, fragmented (readers filter them
    /// by their snapshot).
    pub fn range_deletions(&self) -> Arc<Fragments> {
        self.range_dels.fragments()
    }

    /// The newest range tombstone sequence covering `user_key` visible at
    /// `snapshot` (0: none).
    pub fn covering_seq(&self, user_key: &[u8], snapshot: u64) -> u64 {
        self.range_dels.covering_seq(user_key, snapshot)
    }

    /// The newest version of the user key of `lookup` (an internal key
    /// built with `ValueKind::SEEK` at the reader's snapshot) visible to it;
    /// `Deleted` also when a range tombstone here covers it. Sources older
    /// than this memtable hold only older versions, so a covering tombstone
    /// ends the lookup.
    pub fn get(&self, lookup: &[u8]) -> Option<Lookup> {
        let covered = self.covering_seq(user_key(lookup), trailer(lookup) >> 8);
        let deleted = (covered > 0).then_some(Lookup::Deleted);
        if self
            .filter
            .as_ref()
            .is_some_and(|f| !f.may_contain(user_key(lookup)))
        {
            return deleted;
        }
        let found = self.list.seek(lookup);
        if found == NIL {
            return deleted;
        }
        let node = self.list.node(found);
        let Some(parsed) = ParsedKey::parse(node.key()) else {
            return deleted;
        };
        if self.list.order().user(parsed.user_key, user_key(lookup)) != std::cmp::Ordering::Equal
            || parsed.sequence < covered
        {
            return deleted;
        }
        Some(match parsed.kind {
            ValueKind::Value => Lookup::Value(node.value().to_vec()),
            ValueKind::Deletion => Lookup::Deleted,
        })
    }

    /// Approximate bytes used, compared against `write_buffer_size`.
    pub fn approximate_size(&self) -> u64 {
        self.size.load(AtomicOrdering::Relaxed)
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// True when nothing was written.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty() && self.range_dels.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::format::internal_key::InternalKey;
    use crate::iterator::InternalIterator;

    fn get(m: &Memtable, key: &[u8], seq: u64) -> Option<Lookup> {
        m.get(InternalKey::new(key, seq, ValueKind::SEEK).encoded())
    }

    #[test]
    fn get_respects_snapshot_and_deletes() {
        let m = Memtable::new(1, KeyOrder::Bytewise);
        m.add(1, ValueKind::Value, b"a", b"v1");
        m.add(2, ValueKind::Value, b"a", b"v2");
        m.add(3, ValueKind::Deletion, b"a", b"");
        m.add(4, ValueKind::Value, b"b", b"x");
        assert_eq!(get(&m, b"a", 1), Some(Lookup::Value(b"v1".to_vec())));
        assert_eq!(get(&m, b"a", 2), Some(Lookup::Value(b"v2".to_vec())));
        assert_eq!(get(&m, b"a", 3), Some(Lookup::Deleted));
        assert_eq!(get(&m, b"a", 0), None);
        assert_eq!(get(&m, b"b", 3), None);
        assert_eq!(get(&m, b"c", 9), None);
        assert_eq!(m.len(), 4);
        assert!(m.approximate_size() > 4 * 64);
    }

    /// With a filter, every lookup answers as without one: values,
    /// deletions, range tombstones over keys the memtable never held, and
    /// keys it never held; the filter is charged to the size.
    #[test]
    fn a_filtered_memtable_answers_as_an_unfiltered_one() {
        let plain = Memtable::new(1, KeyOrder::Bytewise);
        let filtered = Memtable::new(1, KeyOrder::Bytewise).with_filter(1024);
        assert_eq!(filtered.approximate_size(), 1024);
        for m in [&plain, &filtered] {
            for i in 0..500u32 {
                let kind = match i % 7 {
                    0 => ValueKind::Deletion,
                    _ => ValueKind::Value,
                };
                m.add(u64::from(i) + 1, kind, format!("k{i}").as_bytes(), b"v");
            }
            m.add_range_deletion(600, b"r0", b"r5");
        }
        for seq in [0, 250, 700] {
            for key in ["k0", "k3", "k499", "k500", "absent", "r1", "r9", ""] {
                let key = key.as_bytes();
                assert_eq!(
                    get(&filtered, key, seq),
                    get(&plain, key, seq),
                    "{key:?}@{seq}"
                );
            }
        }
        assert_eq!(get(&filtered, b"r2", 700), Some(Lookup::Deleted));
    }

    #[test]
    fn keys_on_both_sides_of_the_inline_limit() {
        let m = std::sync::Arc::new(Memtable::new(1, KeyOrder::Bytewise));
        let user_len = skiplist::INLINE_KEY - 8;
        let short = vec![b's'; user_len];
        let long = vec![b's'; user_len + 1];
        m.add(1, ValueKind::Value, &short, b"short");
        m.add(2, ValueKind::Value, &long, b"long");
        m.add(3, ValueKind::Value, b"", b"empty key");
        m.add(4, ValueKind::Deletion, b"gone", b"");
        assert_eq!(get(&m, &short, 9), Some(Lookup::Value(b"short".to_vec())));
        assert_eq!(get(&m, &long, 9), Some(Lookup::Value(b"long".to_vec())));
        assert_eq!(get(&m, b"", 9), Some(Lookup::Value(b"empty key".to_vec())));
        assert_eq!(get(&m, b"gone", 9), Some(Lookup::Deleted));
        let mut it = MemtableIterator::new(m.clone());
        it.seek_to_first();
        let mut seen = Vec::new();
        while it.valid() {
            seen.push((user_key(it.key()).to_vec(), it.value().to_vec()));
            it.next();
        }
        assert_eq!(
            seen,
            [
                (b"".to_vec(), b"empty key".to_vec()),
                (b"gone".to_vec(), b"".to_vec()),
                (short, b"short".to_vec()),
                (long, b"long".to_vec()),
            ]
        );
    }

    #[test]
    fn locations_pack_into_eight_bytes_or_stay_unknown() {
        let at = |record, offset| LogLocation { record, offset };
        for fits in [at(0, 0), at((1 << 40) - 2, (1 << 24) - 1), at(32_761, 12)] {
            assert_eq!(PackedLocation::pack(fits).unpack(), Some(fits));
        }
        for too_far in [at(1 << 40, 0), at(0, 1 << 24), LogLocation::UNKNOWN] {
            assert_eq!(PackedLocation::pack(too_far).unpack(), None);
        }
        let m = Memtable::new(1, KeyOrder::Bytewise).tracking_locations(true);
        m.add_at(1, ValueKind::Value, b"a", b"v", at(7, 12));
        assert!(m.values_located());
        m.add_at(2, ValueKind::Value, b"b", b"v", at(7, 1 << 24));
        assert!(!m.values_located(), "a memtable with an unknown location");
    }

    #[test]
    fn range_tombstones_hide_older_versions_at_their_snapshot() {
        let m = Memtable::new(1, KeyOrder::Bytewise);
        m.add(1, ValueKind::Value, b"b", b"old");
        m.add_range_deletion(2, b"a", b"c");
        m.add(3, ValueKind::Value, b"a", b"new");
        assert_eq!(get(&m, b"b", 1), Some(Lookup::Value(b"old".to_vec())));
        assert_eq!(get(&m, b"b", 2), Some(Lookup::Deleted));
        assert_eq!(
            get(&m, b"bb", 9),
            Some(Lookup::Deleted),
            "no entry, covered"
        );
        assert_eq!(get(&m, b"a", 9), Some(Lookup::Value(b"new".to_vec())));
        assert_eq!(get(&m, b"a", 2), Some(Lookup::Deleted));
        assert_eq!(get(&m, b"c", 9), None, "end is exclusive");
        assert!(!m.is_empty());
        let only = Memtable::new(1, KeyOrder::Bytewise);
        only.add_range_deletion(1, b"x", b"y");
        assert!(!only.is_empty(), "a range tombstone alone is content");
        assert_eq!(only.len(), 0, "no point entries");
    }

    #[test]
    fn prefix_keys_do_not_collide() {
        let m = Memtable::new(1, KeyOrder::Bytewise);
        m.add(1, ValueKind::Value, b"ab", b"1");
        assert_eq!(get(&m, b"a", 9), None);
        assert_eq!(get(&m, b"abc", 9), None);
    }
}
