//! The memtable: a concurrent skiplist of internal keys.
//!
//! One writer at a time (the write-group leader) inserts; any number of
//! readers and iterators proceed concurrently without locks. Short keys live
//! inside their skiplist node; see `skiplist.rs`.
//!
//! With in-place updates (TRIAD's C_m, `triad_in_place`), a write over a key
//! whose newest version is a value of the same length overwrites it (one
//! entry per key) instead of adding a version, unless the writer says a
//! snapshot may read the older version or an iterator is open on the
//! memtable ([`InPlaceWrites`]). Readers of values are then kept out of a
//! value being written: lookups take a read lock of their key's stripe,
//! which the writer holds exclusively until its group is published;
//! iterators register, and while one is open nothing is updated in place.

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

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering as AtomicOrdering};
use std::sync::Arc;

use parking_lot::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use crate::format::internal_key::{pack_trailer, trailer, user_key, ParsedKey, ValueKind};
use crate::format::range_tombstone::Fragments;
use crate::format::KeyOrder;
use crate::io::FilePin;

use filter::MemtableFilter;
pub use iter::MemtableIterator;
pub use range_dels::RangeDels;
use skiplist::{Placed, SkipList, NIL};

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
    /// Present when entries are updated in place.
    in_place: Option<InPlace>,
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
            in_place: None,
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

    /// Makes writes through [`add_in_place`](Self::add_in_place) update a
    /// key's newest value in place when they can, when `on` (bytewise
    /// order only: a lookup and the write it waits for must lock the same
    /// stripe, so equal keys must be equal bytes).
    pub fn updating_in_place(mut self, on: bool) -> Memtable {
        if on && self.list.order().is_bytewise() {
            self.in_place = Some(InPlace {
                stripes: (0..STRIPES).map(|_| RwLock::new(())).collect(),
                iterators: AtomicUsize::new(0),
            });
        }
        self
    }

    /// Whether writes may update entries in place.
    pub fn updates_in_place(&self) -> bool {
        self.in_place.is_some()
    }

    /// Starts a group of writes through [`add_in_place`](Self::add_in_place);
    /// `newest_pin`: the newest sequence a snapshot or iterator of the
    /// store reads at, if any (a version at or below it stays, as a new
    /// version is added beside it). Values written in place stay hidden
    /// from lookups until the group drops: drop it after the group's
    /// sequence is published, and let no snapshot be taken meanwhile.
    pub fn in_place_writes(&self, newest_pin: Option<u64>) -> InPlaceWrites<'_> {
        InPlaceWrites {
            mem: self,
            newest_pin,
            held: 0,
            guards: Vec::new(),
            updated: 0,
            kept: 0,
        }
    }

    /// As [`add_at`](Self::add_at), but a value over a key whose newest
    /// version here is a value of the same length replaces that version's
    /// value and location in place (Algorithm 1's `e.val = v;
    /// e.updates++`), keeping its key and sequence, when no snapshot reads
    /// at or above that sequence (`writes`), no iterator is open and the
    /// memtable holds no range tombstone (one between the two versions
    /// would then cover the new value).
    pub fn add_in_place<'a>(
        &'a self,
        seq: u64,
        kind: ValueKind,
        user_key: &[u8],
        value: &[u8],
        location: LogLocation,
        writes: &mut InPlaceWrites<'a>,
    ) {
        let Some(in_place) = &self.in_place else {
            return self.add_at(seq, kind, user_key, value, location);
        };
        debug_assert!(std::ptr::eq(writes.mem, self), "the group of this memtable");
        let packed = PackedLocation::pack(location);
        self.count_unlocated(packed);
        if let Some(filter) = &self.filter {
            // Before the insert, as `add_at`'s (an update finds them set).
            filter.add(user_key);
        }
        let packed_trailer = pack_trailer(seq, kind).to_le_bytes();
        let may_update = |node: u32| {
            if !self.range_dels.is_empty() {
                return false;
            }
            let sequence = trailer(self.list.node(node).key()) >> 8;
            if writes.newest_pin.is_some_and(|pin| pin >= sequence) {
                writes.kept += 1;
                return false;
            }
            let stripe = stripe_of(user_key);
            if writes.held & (1 << stripe) == 0 {
                writes.held |= 1 << stripe;
                writes.guards.push(in_place.stripes[stripe].write());
            }
            // Read with the stripe held: an iterator that registered
            // before is seen, and one registering later waits for the
            // stripe (`MemtableIterator::new`).
            let open = in_place.iterators.load(AtomicOrdering::SeqCst) > 0;
            writes.kept += u64::from(open);
            !open
        };
        // SAFETY: `may_update` allows an overwrite only holding the key's
        // stripe lock exclusively (every lookup of the key takes it shared
        // around its read of the value, `get`), kept by `writes` until the
        // caller drops it, and with no iterator registered; an iterator
        // registering later passes every stripe lock first, so it waits
        // for `writes` to drop. Nothing else reads values of a memtable
        // that updates in place.
        let placed = unsafe {
            self.list
                .insert_or_update(user_key, packed_trailer, value, packed, may_update)
        };
        match placed {
            Placed::Inserted { charge, .. } => {
                self.size.fetch_add(charge as u64, AtomicOrdering::Relaxed);
            }
            Placed::Updated => writes.updated += 1,
        }
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
        self.count_unlocated(location);
        if let Some(filter) = &self.filter {
            // Before the insert: a reader that finds the entry's sequence
            // published finds its bits.
            filter.add(user_key);
        }
        let trailer = pack_trailer(seq, kind).to_le_bytes();
        let charge = self.list.insert(user_key, trailer, value, location);
        self.size.fetch_add(charge as u64, AtomicOrdering::Relaxed);
    }

    fn count_unlocated(&self, location: PackedLocation) {
        if location == PackedLocation::UNKNOWN && self.list.tracks_locations() {
            self.unlocated.fetch_add(1, AtomicOrdering::Relaxed);
        }
    }

    /// Shared hold of `user_key`'s stripe, when values are updated in
    /// place: an update of the key waits, and waits for, the holder.
    fn read_stripe(&self, user_key: &[u8]) -> Option<RwLockReadGuard<'_, ()>> {
        let in_place = self.in_place.as_ref()?;
        Some(in_place.stripes[stripe_of(user_key)].read())
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
        let _stripe = self.read_stripe(user_key(lookup));
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

/// Stripes of locks over user keys (a power of two up to 64: `held` is a
/// bit mask).
const STRIPES: usize = 64;

fn stripe_of(user_key: &[u8]) -> usize {
    // FNV-1a.
    let hash = user_key.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    (hash >> (64 - STRIPES.trailing_zeros())) as usize
}

/// What a memtable that updates in place needs to keep readers out of a
/// value being written.
struct InPlace {
    /// Lookups hold their key's stripe shared; a write group updating a
    /// key in place holds it exclusively until the group is published.
    stripes: Box<[RwLock<()>]>,
    /// Iterators open on the memtable: while any is, nothing is updated
    /// in place (an iterator borrows values without locks).
    iterators: AtomicUsize,
}

impl InPlace {
    /// Registers an iterator: from here on no write updates in place, and
    /// every update already under way has finished (each stripe was free
    /// once after the registration).
    fn open_iterator(&self) {
        self.iterators.fetch_add(1, AtomicOrdering::SeqCst);
        for stripe in self.stripes.iter() {
            drop(stripe.read());
        }
    }

    fn close_iterator(&self) {
        self.iterators.fetch_sub(1, AtomicOrdering::SeqCst);
    }
}

/// One write group's in-place updates of one memtable: the stripes it
/// holds (released when it drops, after the group is published) and what
/// it did.
pub struct InPlaceWrites<'a> {
    mem: &'a Memtable,
    newest_pin: Option<u64>,
    /// Stripes held, one bit each.
    held: u64,
    guards: Vec<RwLockWriteGuard<'a, ()>>,
    /// Values updated in place.
    pub updated: u64,
    /// Writes that added a version instead, which they could have updated
    /// in place but for a snapshot (`newest_pin`) or an open iterator.
    pub kept: u64,
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

    fn put_in_place(m: &Memtable, seq: u64, key: &[u8], value: &[u8], pin: Option<u64>) -> (u64, u64) {
        let mut writes = m.in_place_writes(pin);
        let at = LogLocation {
            record: seq * 10,
            offset: 3,
        };
        m.add_in_place(seq, ValueKind::Value, key, value, at, &mut writes);
        (writes.updated, writes.kept)
    }

    /// Algorithm 1's C_m: one entry per key, its value, location and update
    /// count replaced; the memtable's size stays; a different length, a
    /// deletion or a range tombstone add a version instead.
    #[test]
    fn a_value_of_the_same_length_updates_the_newest_entry_in_place() {
        let m = Memtable::new(1, KeyOrder::Bytewise)
            .tracking_locations(true)
            .updating_in_place(true)
            .with_filter(1024);
        assert_eq!(put_in_place(&m, 1, b"k", b"v1", None), (0, 0));
        assert_eq!(get(&m, b"k", 9), Some(Lookup::Value(b"v1".to_vec())));
        let size = m.approximate_size();
        assert_eq!(put_in_place(&m, 2, b"k", b"v2", None), (1, 0));
        assert_eq!(put_in_place(&m, 3, b"k", b"v3", None), (1, 0));
        assert_eq!((m.len(), m.approximate_size()), (1, size));
        assert_eq!(get(&m, b"k", 9), Some(Lookup::Value(b"v3".to_vec())));
        let mut it = MemtableIterator::new(Arc::new(m));
        it.seek_to_first();
        assert_eq!(it.updates(), 3);
        assert_eq!(it.location().map(|at| at.record), Some(30));
        assert_eq!(ParsedKey::parse(it.key()).map(|p| p.sequence), Some(1));
        drop(it);

        let m = Memtable::new(1, KeyOrder::Bytewise).updating_in_place(true);
        put_in_place(&m, 1, b"k", b"v1", None);
        assert_eq!(put_in_place(&m, 2, b"k", b"longer", None), (0, 0));
        let mut writes = m.in_place_writes(None);
        m.add_in_place(3, ValueKind::Deletion, b"k", b"", LogLocation::UNKNOWN, &mut writes);
        drop(writes);
        assert_eq!(put_in_place(&m, 4, b"k", b"v4", None), (0, 0), "over a deletion");
        assert_eq!(m.len(), 4);
        m.add_range_deletion(5, b"a", b"z");
        assert_eq!(put_in_place(&m, 6, b"j", b"v6", None), (0, 0));
        assert_eq!(put_in_place(&m, 7, b"j", b"v7", None), (0, 0), "a range tombstone");
        assert_eq!(get(&m, b"j", 9), Some(Lookup::Value(b"v7".to_vec())));
        assert_eq!(get(&m, b"k", 5), Some(Lookup::Deleted));
    }

    /// A version a snapshot reads (pinned at or above its sequence), or
    /// one an open iterator may read, stays: the write adds a version.
    #[test]
    fn versions_a_snapshot_or_an_iterator_reads_stay() {
        let m = Arc::new(Memtable::new(1, KeyOrder::Bytewise).updating_in_place(true));
        put_in_place(&m, 1, b"k", b"v1", None);
        assert_eq!(put_in_place(&m, 2, b"k", b"v2", Some(1)), (0, 1));
        assert_eq!(get(&m, b"k", 1), Some(Lookup::Value(b"v1".to_vec())));
        // A pin older than the newest version does not hold it.
        assert_eq!(put_in_place(&m, 3, b"k", b"v3", Some(1)), (1, 0));
        assert_eq!(get(&m, b"k", 1), Some(Lookup::Value(b"v1".to_vec())));
        assert_eq!(get(&m, b"k", 9), Some(Lookup::Value(b"v3".to_vec())));
        let it = MemtableIterator::new(m.clone());
        assert_eq!(put_in_place(&m, 4, b"k", b"v4", None), (0, 1));
        drop(it);
        assert_eq!(put_in_place(&m, 5, b"k", b"v5", None), (1, 0));
        assert_eq!(m.len(), 3);
        assert_eq!(get(&m, b"k", 3), Some(Lookup::Value(b"v3".to_vec())));
        assert_eq!(get(&m, b"k", 9), Some(Lookup::Value(b"v5".to_vec())));
    }

    /// Without the option (or with a custom order), writes add versions.
    #[test]
    fn no_update_in_place_unless_asked() {
        let m = Memtable::new(1, KeyOrder::Bytewise);
        put_in_place(&m, 1, b"k", b"v1", None);
        assert_eq!(put_in_place(&m, 2, b"k", b"v2", None), (0, 0));
        assert_eq!(m.len(), 2);
        assert!(!m.updates_in_place());
    }
}
