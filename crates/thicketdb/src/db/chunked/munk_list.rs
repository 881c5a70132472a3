//! The paper's munk structure (§3.1): key-value cells in an array linked
//! in key order. A munk is built sorted, so each cell's successor is the
//! next cell of the array; a put appends a cell and links it after its
//! predecessor (a "bypass"). A search binary-searches the sorted prefix,
//! then walks the links from there, which stays short while the prefix is
//! most of the array; munk rebalance rebuilds the list sorted
//! (`munk.rs`). Measured against the engine's skiplist in
//! `examples/munk_structures.rs` (`docs/benchmarks.md`, *YoDB part 1*).
//!
//! Cells hold internal keys (user key and sequence number), so every
//! version is a cell of its own, newest first among a key's. One writer
//! (the chunk's `append_lock`) and any readers share the list through an
//! `RwLock` held for one search or a few steps: an iterator keeps its
//! position (a cell index, stable: cells are never moved or removed) and
//! where its cell's bytes are, not the lock. The cells a munk is built
//! with keep their bytes back to back in one buffer, which an iterator
//! holds once, so a scan touches no per-cell allocation.

use std::sync::Arc;

use parking_lot::RwLock;

use crate::error::Result;
use crate::format::internal_key::{trailer, user_key, InternalKey, ParsedKey, ValueKind};
use crate::format::range_tombstone::Fragments;
use crate::format::KeyOrder;
use crate::iterator::InternalIterator;
use crate::memtable::{Lookup, RangeDels};

/// No cell: the end of the list.
const NIL: u32 = u32::MAX;
/// Bytes a cell costs besides its key and value: the cell (its bytes'
/// place, the link) and, for a put, its allocation's reference counts.
const CELL_OVERHEAD: u64 = 48;
/// Bytes a range tombstone costs besides its keys (as a memtable's).
const TOMBSTONE_OVERHEAD: u64 = 32;

fn order(a: &[u8], b: &[u8]) -> std::cmp::Ordering {
    KeyOrder::Bytewise.internal(a, b)
}

/// Where a cell's internal key and value are: in the list's build buffer
/// (cells of the sorted prefix: reading them touches no per-cell
/// allocation), or in one allocation of their own (puts).
#[derive(Clone)]
enum Bytes {
    Built {
        start: usize,
        key_len: usize,
        end: usize,
    },
    Own {
        bytes: Arc<[u8]>,
        key_len: usize,
    },
}

impl Bytes {
    fn key<'a>(&'a self, built: &'a [u8]) -> &'a [u8] {
        match self {
            Bytes::Built { start, key_len, .. } => &built[*start..start + key_len],
            Bytes::Own { bytes, key_len } => &bytes[..*key_len],
        }
    }

    fn value<'a>(&'a self, built: &'a [u8]) -> &'a [u8] {
        match self {
            Bytes::Built {
                start,
                key_len,
                end,
            } => &built[start + key_len..*end],
            Bytes::Own { bytes, key_len } => &bytes[*key_len..],
        }
    }
}

struct Cell {
    bytes: Bytes,
    /// The next cell in key order.
    next: u32,
}

/// The cells; `cells[..sorted]` are in key order.
struct Cells {
    /// The keys and values the list was built with, back to back.
    built: Arc<[u8]>,
    cells: Vec<Cell>,
    sorted: usize,
    head: u32,
}

impl Cells {
    fn key(&self, at: u32) -> &[u8] {
        self.cells[at as usize].bytes.key(&self.built)
    }

    fn value(&self, at: u32) -> &[u8] {
        self.cells[at as usize].bytes.value(&self.built)
    }

    /// The last cell in list order whose key is below `target`: binary
    /// search on the sorted prefix, then the walk along the bypasses.
    fn predecessor(&self, target: &[u8]) -> Option<u32> {
        let p = self.cells[..self.sorted]
            .partition_point(|c| order(c.bytes.key(&self.built), target).is_lt());
        let mut at = match p {
            // Appended cells may precede the prefix's first one.
            0 if self.head == NIL || order(self.key(self.head), target).is_ge() => return None,
            0 => self.head,
            p => (p - 1) as u32,
        };
        loop {
            let next = self.cells[at as usize].next;
            if next == NIL || order(self.key(next), target).is_ge() {
                return Some(at);
            }
            at = next;
        }
    }

    /// The first cell whose key is at or above `target` (`NIL`: none).
    fn seek(&self, target: &[u8]) -> u32 {
        match self.predecessor(target) {
            Some(p) => self.cells[p as usize].next,
            None => self.head,
        }
    }

    /// The last cell in list order.
    fn last(&self) -> u32 {
        let mut at = match self.sorted {
            0 => self.head,
            n => (n - 1) as u32,
        };
        if at == NIL {
            return NIL;
        }
        while self.cells[at as usize].next != NIL {
            at = self.cells[at as usize].next;
        }
        at
    }
}

/// A munk's entries and range tombstones.
pub struct MunkList {
    cells: RwLock<Cells>,
    range_dels: RangeDels,
    bytes: std::sync::atomic::AtomicU64,
}

impl MunkList {
    /// A list of `entries` (internal key, value) sorted by internal key.
    pub fn build_sorted(entries: impl IntoIterator<Item = (Vec<u8>, Vec<u8>)>) -> MunkList {
        let mut built = Vec::new();
        let mut cells: Vec<Cell> = entries
            .into_iter()
            .map(|(key, value)| {
                let start = built.len();
                built.extend_from_slice(&key);
                built.extend_from_slice(&value);
                Cell {
                    bytes: Bytes::Built {
                        start,
                        key_len: key.len(),
                        end: built.len(),
                    },
                    next: NIL,
                }
            })
            .collect();
        let n = cells.len();
        for (i, cell) in cells.iter_mut().enumerate() {
            cell.next = if i + 1 < n { i as u32 + 1 } else { NIL };
        }
        let bytes = built.len() as u64 + n as u64 * CELL_OVERHEAD;
        let cells = Cells {
            built: built.into(),
            cells,
            sorted: n,
            head: if n == 0 { NIL } else { 0 },
        };
        debug_assert!((1..n as u32).all(|i| order(cells.key(i - 1), cells.key(i)).is_lt()));
        MunkList {
            cells: RwLock::new(cells),
            range_dels: RangeDels::default(),
            bytes: bytes.into(),
        }
    }

    /// Adds a put or delete of `user_key` at `seq`.
    pub fn add(&self, seq: u64, kind: ValueKind, user_key: &[u8], value: &[u8]) {
        let key = InternalKey::new(user_key, seq, kind);
        let mut own = Vec::with_capacity(key.encoded().len() + value.len());
        own.extend_from_slice(key.encoded());
        own.extend_from_slice(value);
        let mut cells = self.cells.write();
        let index = cells.cells.len() as u32;
        let next = match cells.predecessor(key.encoded()) {
            Some(p) => std::mem::replace(&mut cells.cells[p as usize].next, index),
            None => std::mem::replace(&mut cells.head, index),
        };
        let bytes = Bytes::Own {
            bytes: own.into(),
            key_len: key.encoded().len(),
        };
        cells.cells.push(Cell { bytes, next });
        drop(cells);
        self.bytes.fetch_add(
            (key.encoded().len() + value.len()) as u64 + CELL_OVERHEAD,
            std::sync::atomic::Ordering::Relaxed,
        );
    }

    /// Adds a range tombstone `[start, end)` at `seq`.
    pub fn add_range_deletion(&self, seq: u64, start: &[u8], end: &[u8]) {
        self.range_dels.insert(seq, start, end);
        self.bytes.fetch_add(
            (start.len() + end.len()) as u64 + TOMBSTONE_OVERHEAD,
            std::sync::atomic::Ordering::Relaxed,
        );
    }

    /// The range tombstones, fragmented.
    pub fn range_deletions(&self) -> Arc<Fragments> {
        self.range_dels.fragments()
    }

    /// The newest version of `lookup`'s user key (an internal key built
    /// with `ValueKind::SEEK` at the reader's snapshot) visible to it, as
    /// `Memtable::get` answers.
    pub fn get(&self, lookup: &[u8]) -> Option<Lookup> {
        let covered = self
            .range_dels
            .covering_seq(user_key(lookup), trailer(lookup) >> 8);
        let deleted = (covered > 0).then_some(Lookup::Deleted);
        let cells = self.cells.read();
        let found = cells.seek(lookup);
        if found == NIL {
            return deleted;
        }
        let Some(parsed) = ParsedKey::parse(cells.key(found)) else {
            return deleted;
        };
        if parsed.user_key != user_key(lookup) || parsed.sequence < covered {
            return deleted;
        }
        Some(match parsed.kind {
            ValueKind::Value => Lookup::Value(cells.value(found).to_vec()),
            ValueKind::Deletion => Lookup::Deleted,
        })
    }

    /// Approximate bytes held.
    pub fn approximate_size(&self) -> u64 {
        self.bytes.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Every entry in key order (what munk rebalance sorts into a new
    /// list).
    pub fn entries(&self) -> Vec<(Vec<u8>, Vec<u8>)> {
        let cells = self.cells.read();
        let mut out = Vec::with_capacity(cells.cells.len());
        let mut at = cells.head;
        while at != NIL {
            out.push((cells.key(at).to_vec(), cells.value(at).to_vec()));
            at = cells.cells[at as usize].next;
        }
        out
    }
}

/// Cells a forward step reads ahead under one lock acquisition.
const READ_AHEAD: usize = 16;

/// An iterator over a munk list, in key order both ways. Forward steps
/// read `READ_AHEAD` cells at a time: a put made after the iterator read a
/// stretch is not seen in it, which a reader at a snapshot taken before
/// the iterator does not need (puts are added before they are published).
pub struct MunkListIterator {
    list: Arc<MunkList>,
    /// The list's build buffer, where most cells' bytes are.
    built: Arc<[u8]>,
    at: u32,
    entry: Option<Bytes>,
    /// The cells after `at`, read ahead, nearest last.
    ahead: Vec<(u32, Bytes)>,
}

impl MunkListIterator {
    /// An iterator over `list`, unpositioned.
    pub fn new(list: Arc<MunkList>) -> MunkListIterator {
        let built = list.cells.read().built.clone();
        MunkListIterator {
            list,
            built,
            at: NIL,
            entry: None,
            ahead: Vec::new(),
        }
    }

    /// Moves to the cell `to` picks (`NIL`: past the end), taking the
    /// lock for one search.
    fn step(&mut self, to: impl FnOnce(&Cells, u32) -> u32) {
        self.ahead.clear();
        let (at, entry) = {
            let cells = self.list.cells.read();
            let at = to(&cells, self.at);
            (
                at,
                (at != NIL).then(|| cells.cells[at as usize].bytes.clone()),
            )
        };
        self.at = at;
        self.entry = entry;
    }
}

impl InternalIterator for MunkListIterator {
    fn valid(&self) -> bool {
        self.entry.is_some()
    }
    fn seek_to_first(&mut self) {
        self.step(|cells, _| cells.head);
    }
    fn seek_to_last(&mut self) {
        self.step(|cells, _| cells.last());
    }
    fn seek(&mut self, target: &[u8]) {
        self.step(|cells, _| cells.seek(target));
    }
    fn next(&mut self) {
        if self.at == NIL {
            return;
        }
        if self.ahead.is_empty() {
            let cells = self.list.cells.read();
            let mut at = cells.cells[self.at as usize].next;
            while at != NIL && self.ahead.len() < READ_AHEAD {
                let cell = &cells.cells[at as usize];
                self.ahead.push((at, cell.bytes.clone()));
                at = cell.next;
            }
            drop(cells);
            self.ahead.reverse();
        }
        match self.ahead.pop() {
            Some((at, entry)) => {
                self.at = at;
                self.entry = Some(entry);
            }
            None => {
                self.at = NIL;
                self.entry = None;
            }
        }
    }
    fn prev(&mut self) {
        let Some(entry) = self.entry.take() else {
            return;
        };
        let built = self.built.clone();
        self.step(|cells, _| cells.predecessor(entry.key(&built)).unwrap_or(NIL));
    }
    fn key(&self) -> &[u8] {
        self.entry.as_ref().map_or(&[], |e| e.key(&self.built))
    }
    fn value(&self) -> &[u8] {
        self.entry.as_ref().map_or(&[], |e| e.value(&self.built))
    }
    fn status(&self) -> Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    fn ikey(k: &[u8], seq: u64) -> Vec<u8> {
        InternalKey::new(k, seq, ValueKind::Value).into_vec()
    }

    proptest! {
        /// Built from some keys, then given puts in any order, the list
        /// iterates (both ways), seeks and gets as a sorted map of the
        /// same internal keys.
        #[test]
        fn matches_a_sorted_map(
            built in prop::collection::btree_set(prop::collection::vec(0u8..8, 0..4), 0..30),
            puts in prop::collection::vec(prop::collection::vec(0u8..8, 0..4), 0..60),
        ) {
            let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
            let mut seq = 1;
            let mut initial = Vec::new();
            for k in &built {
                initial.push((ikey(k, seq), k.clone()));
                seq += 1;
            }
            initial.sort_by(|a, b| order(&a.0, &b.0));
            let list = Arc::new(MunkList::build_sorted(initial.clone()));
            let by_internal = |m: &BTreeMap<Vec<u8>, Vec<u8>>| {
                let mut v: Vec<(Vec<u8>, Vec<u8>)> = m.iter().map(|(a, b)| (a.clone(), b.clone())).collect();
                v.sort_by(|a, b| order(&a.0, &b.0));
                v
            };
            model.extend(initial);
            for k in &puts {
                list.add(seq, ValueKind::Value, k, &seq.to_le_bytes());
                model.insert(ikey(k, seq), seq.to_le_bytes().to_vec());
                seq += 1;
            }
            let expected = by_internal(&model);
            prop_assert_eq!(list.entries(), expected.clone());
            let mut it = MunkListIterator::new(list.clone());
            let mut backward = Vec::new();
            it.seek_to_last();
            while it.valid() {
                backward.push((it.key().to_vec(), it.value().to_vec()));
                it.prev();
            }
            backward.reverse();
            prop_assert_eq!(backward, expected.clone());
            for probe in built.iter().chain(&puts) {
                for at in [0, seq / 2, seq] {
                    let lookup = InternalKey::new(probe, at, ValueKind::SEEK).into_vec();
                    let want = expected
                        .iter()
                        .find(|(k, _)| order(k, &lookup).is_ge())
                        .filter(|(k, _)| user_key(k) == probe.as_slice())
                        .map(|(_, v)| Lookup::Value(v.clone()));
                    prop_assert_eq!(list.get(&lookup), want);
                    it.seek(&lookup);
                    let first = expected.iter().find(|(k, _)| order(k, &lookup).is_ge());
                    prop_assert_eq!(it.valid().then(|| it.key().to_vec()), first.map(|(k, _)| k.clone()));
                }
            }
        }
    }

    #[test]
    fn a_range_tombstone_hides_older_versions() {
        let list = MunkList::build_sorted(Vec::new());
        list.add(1, ValueKind::Value, b"b", b"old");
        list.add_range_deletion(2, b"a", b"c");
        list.add(3, ValueKind::Value, b"b", b"new");
        let at = |seq| InternalKey::new(b"b", seq, ValueKind::SEEK).into_vec();
        assert_eq!(list.get(&at(1)), Some(Lookup::Value(b"old".to_vec())));
        assert_eq!(list.get(&at(2)), Some(Lookup::Deleted));
        assert_eq!(list.get(&at(3)), Some(Lookup::Value(b"new".to_vec())));
    }
}
