//! A skiplist of memtable entries for one writer and many lock-free readers.
//!
//! Nodes live in an append-only vector of memory maps (`mapped_vec.rs`)
//! and link to each other by index, so readers need no locks: a node is
//! fully built before it is pushed, and becomes reachable only when a
//! predecessor's `next` is stored with `Release` after the push. Nodes are never removed;
//! the whole list is dropped with its memtable.
//!
//! A node holds its links at the lowest [`LOW_LEVELS`] levels; the rarer
//! node taller than that (1 in 16) keeps the rest in a tower of its own
//! (`towers`). A node is then one 64-byte cache line, not the 104 bytes
//! of a full tower in every node, so a memtable of 100-byte values holds
//! about a fifth more entries, as RocksDB's variable-height nodes do.
//!
//! Inserts remember the predecessors of the last insert at every level, so
//! a key above the previous one (a sequential load) is placed by walking
//! forward from those nodes instead of searching from the head.
//!
//! A short key (up to [`INLINE_KEY`] bytes, a user key of up to 24) lives in
//! its node, so a search compares it on the line it reads the links from;
//! only the value is copied into the list's byte arena (`byte_arena.rs`).
//! Longer keys are copied there with their value.
//!
//! TRIAD's C_m (Algorithm 1) updates an entry in place: an insert whose
//! key's newest version has a value of the same length may, when its
//! caller allows (`insert_or_update`), overwrite that value and log
//! location instead of linking a new node. Keys never change, so searches
//! stay lock-free; only value bytes do, under the caller's exclusion of
//! their readers. Each node counts the versions of its key the list has
//! taken (`updates`: Algorithm 1's `e.updates`), carried from a key's
//! newest node to the node that supersedes it.

use std::cmp::Ordering;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering as AtomicOrdering};

use parking_lot::Mutex;

use crate::format::internal_key::{ValueKind, TRAILER_LEN};
use crate::format::KeyOrder;

use super::byte_arena::{ArenaBytes, ByteArena};
use super::mapped_vec::MappedVec;
use super::PackedLocation;

pub const MAX_HEIGHT: usize = 12;
/// Levels whose links live in the node itself: with two, a node is 64
/// bytes, so (nodes being laid out from page-aligned maps) a search reads
/// a node's key and lowest links from one cache line.
const LOW_LEVELS: usize = 2;
/// The links of a tall node above `LOW_LEVELS`.
type Tower = [AtomicU32; MAX_HEIGHT - LOW_LEVELS];
/// Longest internal key kept inside its node.
pub const INLINE_KEY: usize = 32;
/// "No node": the end of a level, or the head as a predecessor.
pub const NIL: u32 = u32::MAX;

#[repr(C)]
pub struct Node {
    /// The key, when it is at most `INLINE_KEY` bytes.
    inline: [u8; INLINE_KEY],
    key_len: u32,
    /// Links at levels below `LOW_LEVELS`.
    next: [AtomicU32; LOW_LEVELS],
    /// Index of the node's tower in the list's `towers`, or `NIL` when the
    /// node is at most `LOW_LEVELS` high.
    tower: u32,
    /// Versions of this key the list has taken up to this node, in place
    /// or as nodes (Algorithm 1's `e.updates`; TRIAD-MEM's hotness).
    updates: AtomicU32,
    /// The value, preceded by the key when the key is not inline, in the
    /// list's arena.
    buf: ArenaBytes,
}

// A search step reads a node's key and low links from one cache line.
const _: () = assert!(std::mem::size_of::<Node>() == 64);

impl Node {
    /// A node for the internal key `user_key ++ trailer` and `value`, not
    /// yet linked.
    fn new(
        user_key: &[u8],
        trailer: [u8; TRAILER_LEN],
        value: &[u8],
        updates: u32,
        arena: &mut ByteArena,
    ) -> Node {
        let key_len = user_key.len() + TRAILER_LEN;
        let mut inline = [0u8; INLINE_KEY];
        let buf = match inline.get_mut(..key_len) {
            Some(key) => {
                key[..user_key.len()].copy_from_slice(user_key);
                key[user_key.len()..].copy_from_slice(&trailer);
                arena.copy_in(&[value])
            }
            None => arena.copy_in(&[user_key, &trailer, value]),
        };
        Node {
            inline,
            key_len: key_len as u32,
            next: std::array::from_fn(|_| AtomicU32::new(NIL)),
            tower: NIL,
            updates: AtomicU32::new(updates),
            buf,
        }
    }

    fn is_inline(&self) -> bool {
        self.key_len as usize <= INLINE_KEY
    }

    /// Where the value starts in `buf`.
    fn value_start(&self) -> usize {
        match self.is_inline() {
            true => 0,
            false => self.key_len as usize,
        }
    }

    pub fn key(&self) -> &[u8] {
        let len = self.key_len as usize;
        match self.is_inline() {
            true => &self.inline[..len],
            // SAFETY: a node is only reachable through its skiplist
            // (`node` borrows it), which owns the arena `buf` points into
            // and drops it after every borrow of a node ends; the key's
            // bytes are never overwritten (only a value is, `update`).
            false => unsafe { self.buf.range(0, len) },
        }
    }

    /// The value. A memtable that updates values in place reads it only
    /// where it excludes the update (its key's stripe lock, or no update
    /// while an iterator is open: `Memtable`).
    pub fn value(&self) -> &[u8] {
        let start = self.value_start();
        // SAFETY: the arena outlives the borrow of the node (as in `key`);
        // no `overwrite` of these bytes runs while the slice lives: the
        // skiplist overwrites only through `insert_or_update`, whose caller
        // promises to keep every reader of the value out meanwhile.
        unsafe { self.buf.range(start, self.buf.len() - start) }
    }

    /// The node's kind, from its key's trailer.
    fn kind(&self) -> Option<ValueKind> {
        let key = self.key();
        ValueKind::from_u8(key[key.len() - TRAILER_LEN])
    }

    /// Versions of this key the list has taken up to this node.
    pub fn updates(&self) -> u32 {
        self.updates.load(AtomicOrdering::Relaxed)
    }

    /// Bytes this node occupies, for memtable accounting.
    pub fn charge(&self) -> usize {
        self.buf.len() + std::mem::size_of::<Node>()
    }
}

struct Writer {
    /// Where the nodes' keys and values are copied.
    arena: ByteArena,
    rng: u64,
    /// Index of the last inserted node, if any.
    last: u32,
    /// The last insert's predecessor at each level (`NIL` = head).
    prev: [u32; MAX_HEIGHT],
}

/// What an insert did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placed {
    /// Linked a new node of `charge` bytes; `superseded`: over an older
    /// version of its key.
    Inserted { charge: usize, superseded: bool },
    /// Overwrote the value of the key's newest version.
    Updated,
}

pub struct SkipList {
    nodes: MappedVec<Node>,
    /// The upper links of nodes taller than `LOW_LEVELS`, by `Node::tower`.
    towers: MappedVec<Tower>,
    /// Where each node's value is in the memtable's log, by node index
    /// (TRIAD-LOG); `None` when the memtable does not track them.
    locations: Option<MappedVec<AtomicU64>>,
    head: [AtomicU32; MAX_HEIGHT],
    height: AtomicUsize,
    writer: Mutex<Writer>,
    order: KeyOrder,
}

impl SkipList {
    /// An empty list ordered by `order`.
    pub fn new(order: KeyOrder) -> SkipList {
        SkipList {
            nodes: MappedVec::default(),
            towers: MappedVec::default(),
            locations: None,
            head: std::array::from_fn(|_| AtomicU32::new(NIL)),
            height: AtomicUsize::new(1),
            writer: Mutex::new(Writer {
                arena: ByteArena::default(),
                rng: 0x2545_f491_4f6c_dd1d,
                last: NIL,
                prev: [NIL; MAX_HEIGHT],
            }),
            order,
        }
    }

    /// Makes the list remember each entry's place in the log (before any
    /// insert).
    pub fn track_locations(&mut self) {
        debug_assert!(self.is_empty());
        self.locations = Some(MappedVec::default());
    }

    pub fn tracks_locations(&self) -> bool {
        self.locations.is_some()
    }

    /// The location of the node at `index`, when the list tracks them.
    pub fn location(&self, index: u32) -> Option<PackedLocation> {
        let at = self.locations.as_ref()?.get(index as usize)?;
        Some(PackedLocation(at.load(AtomicOrdering::Relaxed)))
    }

    /// The order of the keys.
    pub fn order(&self) -> &KeyOrder {
        &self.order
    }

    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The node at `index` (an index obtained from this list).
    pub fn node(&self, index: u32) -> &Node {
        match self.nodes.get(index as usize) {
            Some(node) => node,
            None => unreachable!("node {index} read before it was pushed"),
        }
    }

    fn next_of(&self, node: u32, level: usize) -> u32 {
        self.link(node, level).load(AtomicOrdering::Acquire)
    }

    /// The link of `node` (`NIL`: the head) at `level`, which must be below
    /// the node's height.
    fn link(&self, node: u32, level: usize) -> &AtomicU32 {
        if node == NIL {
            return &self.head[level];
        }
        let node = self.node(node);
        match node.next.get(level) {
            Some(link) => link,
            None => match self.towers.get(node.tower as usize) {
                Some(tower) => &tower[level - LOW_LEVELS],
                None => unreachable!("level {level} read above a node's height"),
            },
        }
    }

    /// Whether `key` sorts after the node `next` (false at the end).
    fn goes_after(&self, key: &[u8], next: u32) -> bool {
        next != NIL && self.order.internal(self.node(next).key(), key) == Ordering::Less
    }

    /// Inserts the internal key `user_key ++ trailer` with `value` (whose
    /// place in the log is `location`, kept if the list tracks locations);
    /// the key must not be present. Inserts are serialised internally;
    /// readers are never blocked. Returns the bytes the entry occupies.
    pub fn insert(
        &self,
        user_key: &[u8],
        trailer: [u8; TRAILER_LEN],
        value: &[u8],
        location: PackedLocation,
    ) -> usize {
        // SAFETY: `may_update` never allows an update.
        match unsafe { self.insert_or_update(user_key, trailer, value, location, |_| false) } {
            Placed::Inserted { charge, .. } => charge,
            Placed::Updated => unreachable!("no update was allowed"),
        }
    }

    /// As [`insert`](Self::insert), but when the newest version of
    /// `user_key` (byte-equal) in the list is a value of `value`'s length
    /// and the entry is a value too, asks `may_update` (with that node's
    /// index) whether to overwrite it: its value and location become the
    /// entry's, its key (with its sequence) stays, and nothing is linked.
    ///
    /// # Safety
    /// `may_update` returns true only when no reference to that node's
    /// value bytes exists and none is made until the caller's exclusion of
    /// readers ends (after this returns): no iterator reads the list, and
    /// lookups of the key wait.
    pub unsafe fn insert_or_update(
        &self,
        user_key: &[u8],
        trailer: [u8; TRAILER_LEN],
        value: &[u8],
        location: PackedLocation,
        may_update: impl FnOnce(u32) -> bool,
    ) -> Placed {
        let mut w = self.writer.lock();
        let mut inline = [0u8; INLINE_KEY];
        let mut spilled = Vec::new();
        let key_len = user_key.len() + TRAILER_LEN;
        let key: &[u8] = match inline.get_mut(..key_len) {
            Some(buf) => {
                buf[..user_key.len()].copy_from_slice(user_key);
                buf[user_key.len()..].copy_from_slice(&trailer);
                buf
            }
            None => {
                spilled.extend_from_slice(user_key);
                spilled.extend_from_slice(&trailer);
                &spilled
            }
        };
        let height = random_height(&mut w.rng);
        let mut prev = [NIL; MAX_HEIGHT];
        let hinted =
            w.last != NIL && self.order.internal(self.node(w.last).key(), key) == Ordering::Less;
        let mut x = NIL;
        let top = self.height.load(AtomicOrdering::Relaxed).max(height);
        for level in (0..top).rev() {
            let hint = w.prev[level];
            if hinted && hint != NIL && hint != x {
                // Every remembered predecessor sorts before `key`; start from
                // the later of it and the node found one level up.
                if x == NIL
                    || self
                        .order
                        .internal(self.node(hint).key(), self.node(x).key())
                        == Ordering::Greater
                {
                    x = hint;
                }
            }
            loop {
                let next = self.next_of(x, level);
                if self.goes_after(key, next) {
                    x = next;
                } else {
                    break;
                }
            }
            prev[level] = x;
        }
        // The entry sorts before every older version of its key: the node
        // after its place, if of the same user key, is the key's newest.
        let newest = self.next_of(prev[0], 0);
        let same_key = newest != NIL && {
            let k = self.node(newest).key();
            &k[..k.len() - TRAILER_LEN] == user_key
        };
        let updates = match same_key {
            true => self.node(newest).updates().saturating_add(1),
            false => 1,
        };
        let value_kind = ValueKind::from_u8(trailer[0]) == Some(ValueKind::Value);
        if same_key && value_kind {
            let node = self.node(newest);
            if node.kind() == Some(ValueKind::Value)
                && node.value().len() == value.len()
                && may_update(newest)
            {
                // SAFETY: the arena lives as long as the list; the value's
                // range is the node's own, and `may_update` said no reader
                // references it until the caller lets readers in again
                // (this function's contract); `value` is the caller's.
                unsafe { node.buf.overwrite(node.value_start(), value) };
                if let Some(locations) = &self.locations {
                    if let Some(at) = locations.get(newest as usize) {
                        at.store(location.0, AtomicOrdering::Relaxed);
                    }
                }
                node.updates.store(updates, AtomicOrdering::Relaxed);
                return Placed::Updated;
            }
        }
        let mut node = Node::new(user_key, trailer, value, updates, &mut w.arena);
        for (level, link) in node.next.iter_mut().enumerate().take(height) {
            *link.get_mut() = self.next_of(prev[level], level);
        }
        let mut charge = node.charge();
        if height > LOW_LEVELS {
            let tower: Tower = std::array::from_fn(|i| {
                let level = LOW_LEVELS + i;
                let next = match level < height {
                    true => self.next_of(prev[level], level),
                    false => NIL,
                };
                AtomicU32::new(next)
            });
            // Pushed before its node, which alone makes it reachable.
            node.tower = self.towers.push(tower) as u32;
            charge += std::mem::size_of::<Tower>();
        }
        if let Some(locations) = &self.locations {
            // Pushed under the writer lock just before its node: the same index.
            locations.push(AtomicU64::new(location.0));
            charge += std::mem::size_of::<PackedLocation>();
        }
        let index = self.nodes.push(node) as u32;
        self.height.fetch_max(height, AtomicOrdering::Relaxed);
        for (level, &p) in prev.iter().enumerate().take(height) {
            self.link(p, level).store(index, AtomicOrdering::Release);
        }
        for (level, slot) in w.prev.iter_mut().enumerate() {
            *slot = if level < height { index } else { prev[level] };
        }
        w.last = index;
        Placed::Inserted {
            charge,
            superseded: same_key,
        }
    }

    /// The first node whose key is `>= key`, or `NIL`.
    pub fn seek(&self, key: &[u8]) -> u32 {
        self.search(key).1
    }

    /// The last node whose key is `< key`, or `NIL`.
    pub fn seek_before(&self, key: &[u8]) -> u32 {
        self.search(key).0
    }

    /// The last node `< key` and, at level 0, the node after it that the
    /// search compared against. That node must be returned as found, not
    /// re-read: an insert may link a smaller node behind the search's back,
    /// and re-reading would answer a seek with a key below its target.
    fn search(&self, key: &[u8]) -> (u32, u32) {
        let mut x = NIL;
        let mut next = NIL;
        for level in (0..self.height.load(AtomicOrdering::Relaxed)).rev() {
            loop {
                next = self.next_of(x, level);
                if self.goes_after(key, next) {
                    x = next;
                } else {
                    break;
                }
            }
        }
        (x, next)
    }

    pub fn first(&self) -> u32 {
        self.next_of(NIL, 0)
    }

    /// The last node, or `NIL`.
    pub fn last(&self) -> u32 {
        let mut x = NIL;
        for level in (0..self.height.load(AtomicOrdering::Relaxed)).rev() {
            loop {
                let next = self.next_of(x, level);
                if next == NIL {
                    break;
                }
                x = next;
            }
        }
        x
    }

    /// The node after `index` at level 0, or `NIL`.
    pub fn next(&self, index: u32) -> u32 {
        self.next_of(index, 0)
    }
}

/// Height with probability 1/4 of each extra level, as in LevelDB.
fn random_height(rng: &mut u64) -> usize {
    let mut height = 1;
    while height < MAX_HEIGHT {
        *rng ^= *rng << 13;
        *rng ^= *rng >> 7;
        *rng ^= *rng << 17;
        if !(*rng).is_multiple_of(4) {
            break;
        }
        height += 1;
    }
    height
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::internal_key::{InternalKey, ValueKind};
    use proptest::prelude::*;

    /// The internal key of user key `k` (zero-padded to six digits) at
    /// `seq`, and its user key and trailer.
    fn entry(k: u32, seq: u64) -> (Vec<u8>, (Vec<u8>, [u8; TRAILER_LEN])) {
        let user = format!("{k:06}").into_bytes();
        let key = InternalKey::new(&user, seq, ValueKind::Value).into_vec();
        let trailer = key[user.len()..].try_into().unwrap();
        (key, (user, trailer))
    }

    fn keys(list: &SkipList) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        let mut x = list.first();
        while x != NIL {
            out.push(list.node(x).key().to_vec());
            x = list.next(x);
        }
        out
    }

    proptest! {
        #[test]
        fn stays_sorted_in_any_insert_order(order in proptest::collection::vec((0u32..500, 0u64..1_000_000), 0..300)) {
            let list = SkipList::new(KeyOrder::Bytewise);
            let mut expected = Vec::new();
            let mut seen = std::collections::HashSet::new();
            for (k, s) in order {
                if !seen.insert((k, s)) { continue; }
                let (key, (user, trailer)) = entry(k, s);
                expected.push(key);
                list.insert(&user, trailer, b"v", PackedLocation::UNKNOWN);
            }
            expected.sort_by(|a, b| KeyOrder::Bytewise.internal(a, b));
            prop_assert_eq!(keys(&list), expected.clone());
            for (i, k) in expected.iter().enumerate() {
                prop_assert_eq!(list.node(list.seek(k)).key(), &k[..]);
                let before = list.seek_before(k);
                if i == 0 {
                    prop_assert_eq!(before, NIL);
                } else {
                    prop_assert_eq!(list.node(before).key(), &expected[i - 1][..]);
                }
            }
            match expected.last() {
                Some(k) => prop_assert_eq!(list.node(list.last()).key(), &k[..]),
                None => prop_assert_eq!(list.last(), NIL),
            }
        }
    }

    #[test]
    fn an_entry_of_a_short_key_is_charged_little_over_its_bytes() {
        // RocksDB charges ~140 bytes for such an entry (key, value, varints
        // and about 1.33 links of 8 bytes); a full tower in every node made
        // ours 204, so our memtables flushed after two thirds as many.
        let list = SkipList::new(KeyOrder::Bytewise);
        let value = [7u8; 100];
        let n = 10_000u32;
        let charged: usize = (0..n)
            .map(|k| {
                let user = format!("{k:016}").into_bytes();
                let (_, (_, trailer)) = entry(k, 1);
                list.insert(&user, trailer, &value, PackedLocation::UNKNOWN)
            })
            .sum();
        let per_entry = charged / n as usize;
        assert!(per_entry <= 170, "{per_entry} bytes charged per entry");
        // Tall nodes exist, and searches through their towers find every key.
        assert!(list.towers.len() > 0);
        for k in 0..n {
            let user = format!("{k:016}").into_bytes();
            let (_, (_, trailer)) = entry(k, 1);
            let key = [&user[..], &trailer[..]].concat();
            assert_eq!(list.node(list.seek(&key)).key(), &key[..]);
        }
    }

    #[test]
    fn sequential_then_random_inserts() {
        let list = SkipList::new(KeyOrder::Bytewise);
        for k in 0..2000 {
            let (_, (user, trailer)) = entry(k * 2, 1);
            list.insert(&user, trailer, b"v", PackedLocation::UNKNOWN);
        }
        for k in (0..2000).rev() {
            let (_, (user, trailer)) = entry(k * 2 + 1, 1);
            list.insert(&user, trailer, b"v", PackedLocation::UNKNOWN);
        }
        let got = keys(&list);
        assert_eq!(got.len(), 4000);
        assert!(got
            .windows(2)
            .all(|w| KeyOrder::Bytewise.internal(&w[0], &w[1]) == Ordering::Less));
    }

    #[test]
    fn seek_never_returns_a_key_below_its_target_during_inserts() {
        use std::sync::atomic::AtomicU32;
        const N: u32 = 200_000;
        let list = std::sync::Arc::new(SkipList::new(KeyOrder::Bytewise));
        for k in (0..N).step_by(2) {
            let (_, (user, trailer)) = entry(k, 1);
            list.insert(&user, trailer, b"v", PackedLocation::UNKNOWN);
        }
        let progress = AtomicU32::new(1);
        std::thread::scope(|s| {
            let writer = list.clone();
            let progress = &progress;
            s.spawn(move || {
                for k in (1..N).step_by(2) {
                    progress.store(k, AtomicOrdering::Relaxed);
                    let (_, (user, trailer)) = entry(k, 1);
                    writer.insert(&user, trailer, b"v", PackedLocation::UNKNOWN);
                }
            });
            // Seek just past the next odd key the writer links, so it lands
            // between the search's last node and the node it compared.
            loop {
                let k = progress.load(AtomicOrdering::Relaxed);
                if k + 2 >= N {
                    break;
                }
                let (target, _) = entry(k + 3, 1);
                let found = list.seek(&target);
                assert!(
                    found == NIL
                        || KeyOrder::Bytewise.internal(list.node(found).key(), &target)
                            != Ordering::Less,
                    "seek answered below its target"
                );
            }
        });
    }

    #[test]
    fn readers_see_a_consistent_list_during_inserts() {
        let list = std::sync::Arc::new(SkipList::new(KeyOrder::Bytewise));
        std::thread::scope(|s| {
            let writer = list.clone();
            s.spawn(move || {
                for k in 0..20_000 {
                    let (_, (user, trailer)) = entry((k * 7919) % 20_000, 1);
                    writer.insert(&user, trailer, b"v", PackedLocation::UNKNOWN);
                }
            });
            for _ in 0..20 {
                let got = keys(&list);
                assert!(got
                    .windows(2)
                    .all(|w| KeyOrder::Bytewise.internal(&w[0], &w[1]) == Ordering::Less));
            }
        });
        assert_eq!(keys(&list).len(), 20_000);
    }
}
