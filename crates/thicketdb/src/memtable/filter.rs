//! A Bloom filter over a memtable's user keys (RocksDB's memtable bloom
//! with whole-key filtering), so that a point lookup of a key the memtable
//! does not hold skips the skiplist search: most gets of a large store
//! miss the memtable, and that search is a chain of cache misses.
//!
//! Blocked, as RocksDB's `DynamicBloom`: a key's probes all fall in one
//! 64-byte block, so an insert or a lookup costs one cache miss, not one
//! per probe (measured: `examples/memtable_insert.rs`). Writers set bits
//! with `fetch_or` and need no lock. A key's bits are set before its entry
//! is inserted, and so before the write is published: a reader that sees
//! the write's sequence number sees its bits.

use std::sync::atomic::{AtomicU64, Ordering};

use xxhash_rust::xxh3::xxh3_64;

/// Probes per key: a little under the optimum (8) for the ~12 bits per
/// key of the default sizing (1% of a memtable of 100-byte values); 6
/// probes of 9 bits each fit in one 64-bit hash.
const PROBES: u32 = 6;

/// One cache line of filter bits.
#[repr(align(64))]
struct Block([AtomicU64; 8]);

/// A fixed-size Bloom filter any number of threads may add to.
pub struct MemtableFilter {
    blocks: Box<[Block]>,
}

impl MemtableFilter {
    /// A filter of about `bytes` (at least one 64-byte block).
    pub fn new(bytes: usize) -> MemtableFilter {
        let blocks = bytes.div_ceil(64).max(1);
        MemtableFilter {
            blocks: (0..blocks)
                .map(|_| Block(std::array::from_fn(|_| AtomicU64::new(0))))
                .collect(),
        }
    }

    /// Bytes held.
    pub fn bytes(&self) -> usize {
        self.blocks.len() * 64
    }

    /// The key's block and its probes' bit positions in it (0..512).
    fn probes(&self, user_key: &[u8]) -> (&Block, impl Iterator<Item = u64>) {
        let h = xxh3_64(user_key);
        // Multiply-shift on the high half picks the block; a remix of the
        // hash gives the in-block positions, 9 bits each.
        let block = ((h >> 32) * self.blocks.len() as u64) >> 32;
        let bits = h.rotate_left(21).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let positions = (0..PROBES).map(move |i| (bits >> (9 * i)) & 511);
        (&self.blocks[block as usize], positions)
    }

    pub fn add(&self, user_key: &[u8]) {
        let (block, positions) = self.probes(user_key);
        for bit in positions {
            block.0[(bit / 64) as usize].fetch_or(1 << (bit % 64), Ordering::Relaxed);
        }
    }

    /// False only when `user_key` was never added.
    pub fn may_contain(&self, user_key: &[u8]) -> bool {
        let (block, mut positions) = self.probes(user_key);
        positions.all(|bit| {
            block.0[(bit / 64) as usize].load(Ordering::Relaxed) & (1 << (bit % 64)) != 0
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
