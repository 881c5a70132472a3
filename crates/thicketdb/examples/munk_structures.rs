//! Which structure a YoDB munk should be (issue 16): the paper's
//! array-based linked list with a sorted prefix (§3.1: cells in an array,
//! sorted when the munk is built; a put appends a cell and links it after
//! its predecessor, a "bypass"; a search is a binary search on the sorted
//! prefix, then a walk along the links; munk rebalance copies the list in
//! order into a new, wholly sorted array) against the engine's memtable
//! skiplist (the munk before), on the paper's shapes: a chunk of 10 MiB filled to
//! 0.7 by splits (about 8,700 entries of 14-byte keys and 800-byte values),
//! then puts of Zipf (theta 0.8) keys until the munk doubles (when munk
//! rebalance rebuilds it), gets of Zipf keys and scans of 1..=100 entries
//! from a Zipf key, at every stage. One thread; both hold internal keys
//! (user key + sequence number) and answer the same lookups, checked.
//!
//! Both are the engine's own: `thicketdb::MunkList` (the chunked layout's
//! munk, `db/chunked/munk_list.rs`) and `thicketdb::memtable::Memtable`.
//!
//! `cargo run --release -p thicketdb --example munk_structures -- [ENTRIES] [OPS]`

use std::sync::Arc;
use std::time::Instant;

use thicketdb::format::internal_key::{InternalKey, ValueKind};
use thicketdb::iterator::InternalIterator;
use thicketdb::memtable::{Lookup, Memtable, MemtableIterator};
use thicketdb::{KeyOrder, MunkList, MunkListIterator};

const VALUE: usize = 800;

fn order(a: &[u8], b: &[u8]) -> std::cmp::Ordering {
    KeyOrder::Bytewise.internal(a, b)
}

/// The newest version of each key of `entries` (sorted): what munk
/// rebalance keeps when no snapshot needs an older one.
fn newest_versions(entries: Vec<(Vec<u8>, Vec<u8>)>) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out: Vec<(Vec<u8>, Vec<u8>)> = Vec::with_capacity(entries.len());
    for (key, value) in entries {
        let user = &key[..key.len() - 8];
        if out.last().is_some_and(|(k, _)| &k[..k.len() - 8] == user) {
            continue;
        }
        out.push((key, value));
    }
    out
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
            InternalKey::new(&user_key(i * 2), seq, ValueKind::Value).into_vec(),
            value.clone(),
        ));
        seq += 1;
    }
    built.sort_by(|a, b| order(&a.0, &b.0));
    let mut array = Arc::new(MunkList::build_sorted(built.clone()));
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
            array.add(seq + i as u64, ValueKind::Value, k, &value);
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
            // Munk rebalance: the entries in order without the versions no
            // snapshot needs, into a new munk.
            let start = Instant::now();
            array = Arc::new(MunkList::build_sorted(newest_versions(array.entries())));
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
            found += usize::from(matches!(array.get(l), Some(Lookup::Value(_))));
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
            let mut it = MunkListIterator::new(array.clone());
            it.seek(l);
            for _ in 0..n {
                if !it.valid() {
                    break;
                }
                bytes += it.value().len();
                it.next();
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
                array.entries().len(),
                array_ns as f64 / 1e6,
                skip_ns as f64 / 1e6
            );
        }
    }
}

/// Munk rebalance of a skiplist munk: its entries in order without the
/// versions no snapshot needs, into a new skiplist.
fn rebalance_skiplist(old: &Arc<Memtable>) -> Arc<Memtable> {
    let mut entries = Vec::with_capacity(old.len());
    let mut it = MemtableIterator::new(old.clone());
    it.seek_to_first();
    while it.valid() {
        entries.push((it.key().to_vec(), it.value().to_vec()));
        it.next();
    }
    let mem = Memtable::new(0, KeyOrder::Bytewise);
    for (key, value) in newest_versions(entries) {
        let (user, trailer) = key.split_at(key.len() - 8);
        let packed = u64::from_le_bytes(trailer.try_into().expect("8 bytes"));
        mem.add(packed >> 8, ValueKind::Value, user, &value);
    }
    Arc::new(mem)
}
