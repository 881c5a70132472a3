//! Which structure a YoDB munk should be (issue 16): the paper's
//! array-based linked list with a sorted prefix (§3.1: cells in an array,
//! sorted when the munk is built; a put appends a cell and links it after
//! its predecessor, a "bypass"; a search is a binary search on the sorted
//! prefix, then a walk along the links; munk rebalance copies the list in
//! order into a new, wholly sorted array) against the engine's munk, the
//! memtable skiplist, on the paper's shapes: a chunk of 10 MiB filled to
//! 0.7 by splits (about 8,700 entries of 14-byte keys and 800-byte values),
//! then puts of Zipf (theta 0.8) keys until the munk doubles (when munk
//! rebalance rebuilds it), gets of Zipf keys and scans of 1..=100 entries
//! from a Zipf key, at every stage. One thread; both hold internal keys
//! (user key + sequence number) and answer the same lookups, checked.
//!
//! `cargo run --release -p thicketdb --example munk_structures -- [ENTRIES] [OPS]`

use std::sync::Arc;
use std::time::Instant;

use thicketdb::format::internal_key::{InternalKey, ValueKind};
use thicketdb::iterator::InternalIterator;
use thicketdb::memtable::{Lookup, Memtable, MemtableIterator};
use thicketdb::KeyOrder;

const VALUE: usize = 800;
const NIL: u32 = u32::MAX;

fn order(a: &[u8], b: &[u8]) -> std::cmp::Ordering {
    KeyOrder::Bytewise.internal(a, b)
}

/// One cell: an internal key, its value and the next cell in key order.
struct Cell {
    key: Box<[u8]>,
    value: Box<[u8]>,
    next: u32,
}

/// The paper's munk: `cells[..sorted]` are in key order and linked in
/// array order when built; later cells are appended and linked in.
struct ArrayMunk {
    cells: Vec<Cell>,
    sorted: usize,
    head: u32,
}

impl ArrayMunk {
    /// A munk of `entries` sorted by internal key.
    fn build(entries: Vec<(Box<[u8]>, Box<[u8]>)>) -> ArrayMunk {
        let n = entries.len() as u32;
        let cells: Vec<Cell> = entries
            .into_iter()
            .enumerate()
            .map(|(i, (key, value))| Cell {
                key,
                value,
                next: if i as u32 + 1 == n { NIL } else { i as u32 + 1 },
            })
            .collect();
        ArrayMunk {
            sorted: cells.len(),
            head: if n == 0 { NIL } else { 0 },
            cells,
        }
    }

    /// The last cell (in list order) whose key is below `target`, if any:
    /// binary search of the sorted prefix, then the walk along bypasses.
    fn predecessor(&self, target: &[u8]) -> Option<u32> {
        let p = self.cells[..self.sorted].partition_point(|c| order(&c.key, target).is_lt());
        let mut at = match p {
            0 => {
                // Appended cells may precede the prefix's first.
                if self.head == NIL || order(&self.cells[self.head as usize].key, target).is_ge() {
                    return None;
                }
                self.head
            }
            p => (p - 1) as u32,
        };
        loop {
            let next = self.cells[at as usize].next;
            if next == NIL || order(&self.cells[next as usize].key, target).is_ge() {
                return Some(at);
            }
            at = next;
        }
    }

    /// The first cell whose key is at or above `target`.
    fn seek(&self, target: &[u8]) -> u32 {
        match self.predecessor(target) {
            Some(p) => self.cells[p as usize].next,
            None => self.head,
        }
    }

    fn put(&mut self, key: Box<[u8]>, value: Box<[u8]>) {
        let index = self.cells.len() as u32;
        let next = match self.predecessor(&key) {
            Some(p) => std::mem::replace(&mut self.cells[p as usize].next, index),
            None => std::mem::replace(&mut self.head, index),
        };
        self.cells.push(Cell { key, value, next });
    }

    /// The value of the newest version of `lookup`'s user key at or below
    /// its sequence number.
    fn get(&self, lookup: &[u8]) -> Option<&[u8]> {
        let at = self.seek(lookup);
        let cell = self.cells.get(at as usize)?;
        (cell.key[..cell.key.len() - 8] == lookup[..lookup.len() - 8]).then_some(&*cell.value)
    }

    /// Munk rebalance: the list copied in order into a new sorted array
    /// (versions no snapshot needs dropped: here every older version).
    fn rebalance(self) -> ArrayMunk {
        let mut cells: Vec<Option<Cell>> = self.cells.into_iter().map(Some).collect();
        let mut entries: Vec<(Box<[u8]>, Box<[u8]>)> = Vec::with_capacity(cells.len());
        let mut at = self.head;
        while at != NIL {
            let cell = cells[at as usize].take().expect("each cell is linked once");
            let user = &cell.key[..cell.key.len() - 8];
            let newer_kept = entries
                .last()
                .is_some_and(|(k, _)| &k[..k.len() - 8] == user);
            at = cell.next;
            if !newer_kept {
                entries.push((cell.key, cell.value));
            }
        }
        ArrayMunk::build(entries)
    }
}

/// Zipf over `0..n` (theta 0.8), by inverse CDF over the precomputed sums.
struct Zipf {
    cdf: Vec<f64>,
    state: u64,
}

impl Zipf {
    fn new(n: usize) -> Zipf {
        let mut cdf = Vec::with_capacity(n);
        let mut sum = 0.0;
        for i in 0..n {
            sum += 1.0 / ((i + 1) as f64).powf(0.8);
            cdf.push(sum);
        }
        for c in &mut cdf {
            *c /= sum;
        }
        Zipf { cdf, state: 42 }
    }

    fn uniform(&mut self) -> f64 {
        // SplitMix64.
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A rank, scattered over the key range (popular keys are not
    /// neighbours, as YCSB's hashed Zipf).
    fn next(&mut self) -> usize {
        let u = self.uniform();
        let rank = self.cdf.partition_point(|&c| c < u).min(self.cdf.len() - 1);
        rank.wrapping_mul(2_654_435_761) % self.cdf.len()
    }
}

/// 14-byte user keys; the munk holds the even ones at first, puts add the
/// odd ones too (new keys and new versions).
fn user_key(i: usize) -> Vec<u8> {
    format!("user{i:010}").into_bytes()
}

fn ns_per(start: Instant, ops: usize) -> f64 {
    start.elapsed().as_nanos() as f64 / ops as f64
}

fn main() {
    let mut args = std::env::args().skip(1);
    let entries: usize = args.next().map_or(8_700, |a| a.parse().expect("ENTRIES"));
    let ops: usize = args.next().map_or(200_000, |a| a.parse().expect("OPS"));
    let value = vec![b'v'; VALUE];
    let space = entries * 2;
    let mut seq = 1u64;
    let mut built = Vec::with_capacity(entries);
    for i in 0..entries {
        built.push((
            InternalKey::new(&user_key(i * 2), seq, ValueKind::Value)
                .into_vec()
                .into_boxed_slice(),
            value.clone().into_boxed_slice(),
        ));
        seq += 1;
    }
    built.sort_by(|a, b| order(&a.0, &b.0));
    let mut array = ArrayMunk::build(built.clone());
    let mut skiplist = Arc::new(Memtable::new(0, KeyOrder::Bytewise));
    for (key, value) in &built {
        let (user, trailer) = key.split_at(key.len() - 8);
        let packed = u64::from_le_bytes(trailer.try_into().expect("8 bytes"));
        skiplist.add(packed >> 8, ValueKind::Value, user, value);
    }
    println!(
        "munk of {entries} entries (14-byte keys, {VALUE}-byte values); {ops} ops per figure; ns/op"
    );
    println!("| stage | structure | put | get | scan 1..=100 |");
    println!("|---|---|---|---|---|");
    let mut zipf = Zipf::new(space);
    // Stages: as built, after puts that grow it by half, after puts that
    // double it (munk rebalance's trigger), after that rebalance.
    for stage in ["built", "grown 1.5x", "grown 2x", "rebalanced"] {
        let puts = match stage {
            "grown 1.5x" | "grown 2x" => entries / 2,
            _ => 0,
        };
        let keys: Vec<Vec<u8>> = (0..puts).map(|_| user_key(zipf.next())).collect();
        let start = Instant::now();
        for (i, k) in keys.iter().enumerate() {
            let key = InternalKey::new(k, seq + i as u64, ValueKind::Value).into_vec();
            array.put(key.into_boxed_slice(), value.clone().into_boxed_slice());
        }
        let array_put = (puts > 0).then(|| ns_per(start, puts));
        let start = Instant::now();
        for (i, k) in keys.iter().enumerate() {
            skiplist.add(seq + i as u64, ValueKind::Value, k, &value);
        }
        let skip_put = (puts > 0).then(|| ns_per(start, puts));
        seq += puts as u64;
        let mut rebalance = None;
        if stage == "rebalanced" {
            // The engine's munk rebalance: the skiplist's entries without
            // the versions no snapshot needs, into a new skiplist.
            let start = Instant::now();
            array = array.rebalance();
            let array_ns = start.elapsed().as_nanos();
            let start = Instant::now();
            skiplist = rebalance_skiplist(&skiplist);
            rebalance = Some((array_ns, start.elapsed().as_nanos()));
        }
        let lookups: Vec<Vec<u8>> = (0..ops)
            .map(|_| InternalKey::new(&user_key(zipf.next()), seq, ValueKind::SEEK).into_vec())
            .collect();
        // One untimed pass over both first: neither pays for the other's
        // cold caches.
        for l in &lookups {
            std::hint::black_box((array.get(l), skiplist.get(l)));
        }
        let start = Instant::now();
        let mut found = 0usize;
        for l in &lookups {
            found += usize::from(array.get(l).is_some());
        }
        let array_get = ns_per(start, ops);
        let start = Instant::now();
        let mut found_skip = 0usize;
        for l in &lookups {
            found_skip += usize::from(matches!(skiplist.get(l), Some(Lookup::Value(_))));
        }
        let skip_get = ns_per(start, ops);
        assert_eq!(found, found_skip, "the structures disagree");
        let scans = ops / 10;
        let lengths: Vec<usize> = (0..scans).map(|i| 1 + (i * 37) % 100).collect();
        let start = Instant::now();
        let mut bytes = 0usize;
        for (l, &n) in lookups.iter().zip(&lengths) {
            let mut at = array.seek(l);
            for _ in 0..n {
                let Some(cell) = array.cells.get(at as usize) else {
                    break;
                };
                bytes += cell.value.len();
                at = cell.next;
            }
        }
        let array_scan = ns_per(start, scans);
        let start = Instant::now();
        let mut bytes_skip = 0usize;
        for (l, &n) in lookups.iter().zip(&lengths) {
            let mut it = MemtableIterator::new(skiplist.clone());
            it.seek(l);
            for _ in 0..n {
                if !it.valid() {
                    break;
                }
                bytes_skip += it.value().len();
                it.next();
            }
        }
        let skip_scan = ns_per(start, scans);
        assert_eq!(bytes, bytes_skip, "the scans disagree");
        let f = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.0}"));
        println!(
            "| {stage} | array list | {} | {array_get:.0} | {array_scan:.0} |",
            f(array_put)
        );
        println!(
            "| {stage} | skiplist | {} | {skip_get:.0} | {skip_scan:.0} |",
            f(skip_put)
        );
        if let Some((array_ns, skip_ns)) = rebalance {
            println!(
                "munk rebalance to {} entries (older versions dropped): array list {:.2} ms, skiplist {:.2} ms",
                array.cells.len(),
                array_ns as f64 / 1e6,
                skip_ns as f64 / 1e6
            );
        }
    }
}

/// The engine's munk rebalance: the skiplist walked in order into a new
/// one, older versions of each key dropped.
fn rebalance_skiplist(old: &Arc<Memtable>) -> Arc<Memtable> {
    let mem = Memtable::new(0, KeyOrder::Bytewise);
    let mut it = MemtableIterator::new(old.clone());
    it.seek_to_first();
    let mut last: Option<Vec<u8>> = None;
    while it.valid() {
        let (user, trailer) = it.key().split_at(it.key().len() - 8);
        if last.as_deref() != Some(user) {
            let packed = u64::from_le_bytes(trailer.try_into().expect("8 bytes"));
            mem.add(packed >> 8, ValueKind::Value, user, it.value());
            last = Some(user.to_vec());
        }
        it.next();
    }
    Arc::new(mem)
}
