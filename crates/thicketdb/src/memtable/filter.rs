//! A Bloom filter over a memtable's user keys (RocksDB's memtable bloom
//! with whole-key filtering), so that a point lookup of a key the memtable
//! does not hold skips the skiplist search: most gets of a large store
//! miss the memtable, and that search is a chain of cache misses.
//!
//! Writers set bits with `fetch_or` and need no lock. A key's bits are set
//! before its entry is inserted, and so before the write is published: a
//! reader that sees the write's sequence number sees its bits.

use std::sync::atomic::{AtomicU64, Ordering};

use xxhash_rust::xxh3::xxh3_64;

use crate::table::bloom_probes as probes;

/// Probes per key: a little under the optimum (8) for the ~12 bits per
/// key of the default sizing (1% of a memtable of 100-byte values), each
/// probe being a cache miss on the get path: a false-positive rate of
/// ~0.4% against ~0.3%.
const PROBES: u8 = 6;

/// A fixed-size Bloom filter any number of threads may add to.
pub struct MemtableFilter {
    words: Box<[AtomicU64]>,
}

impl MemtableFilter {
    /// A filter of about `bytes` (at least one word).
    pub fn new(bytes: usize) -> MemtableFilter {
        let words = bytes.div_ceil(8).max(1);
        MemtableFilter {
            words: (0..words).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    fn bits(&self) -> u64 {
        self.words.len() as u64 * 64
    }

    /// Bytes held.
    pub fn bytes(&self) -> usize {
        self.words.len() * 8
    }

    pub fn add(&self, user_key: &[u8]) {
        for bit in probes(xxh3_64(user_key), PROBES, self.bits()) {
            self.words[(bit / 64) as usize].fetch_or(1 << (bit % 64), Ordering::Relaxed);
        }
    }

    /// False only when `user_key` was never added.
    pub fn may_contain(&self, user_key: &[u8]) -> bool {
        probes(xxh3_64(user_key), PROBES, self.bits()).all(|bit| {
            self.words[(bit / 64) as usize].load(Ordering::Relaxed) & (1 << (bit % 64)) != 0
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// No false negatives, whatever the keys and the size.
        #[test]
        fn every_added_key_may_be_contained(
            keys in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..24), 0..300),
            bytes in 0usize..512,
        ) {
            let filter = MemtableFilter::new(bytes);
            for k in &keys {
                filter.add(k);
            }
            for k in &keys {
                prop_assert!(filter.may_contain(k));
            }
        }
    }

    /// At ~10 bits a key most absent keys are ruled out (the point of the
    /// filter); an all-ones filter would pass the test above.
    #[test]
    fn absent_keys_are_mostly_ruled_out() {
        let filter = MemtableFilter::new(10_000 * 10 / 8);
        for i in 0..10_000u32 {
            filter.add(format!("present{i}").as_bytes());
        }
        let passed = (0..10_000u32)
            .filter(|i| filter.may_contain(format!("absent{i}").as_bytes()))
            .count();
        assert!(passed < 300, "{passed} of 10000 absent keys passed");
    }

    /// Threads adding at once lose no bit.
    #[test]
    fn concurrent_adds_are_all_kept() {
        let filter = std::sync::Arc::new(MemtableFilter::new(4096));
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let f = filter.clone();
                std::thread::spawn(move || {
                    for i in 0..2000u32 {
                        f.add(format!("{t}-{i}").as_bytes());
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        for t in 0..4 {
            for i in 0..2000u32 {
                assert!(filter.may_contain(format!("{t}-{i}").as_bytes()));
            }
        }
    }
}
