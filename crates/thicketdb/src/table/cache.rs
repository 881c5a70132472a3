//! The shared cache of decoded blocks.

use std::sync::atomic::{AtomicU64, Ordering};

use quick_cache::sync::Cache;
use quick_cache::Weighter;

use super::block::Block;
use crate::error::Result;

/// Blocks are identified by segment and absolute offset in the segment,
/// which stay valid for as long as the segment exists.
type Key = (u64, u64);

/// Typical block size, used only to size the cache's hash tables.
const TYPICAL_BLOCK: u64 = 4096;

#[derive(Clone)]
struct BlockWeighter;

impl Weighter<Key, Block> for BlockWeighter {
    fn weight(&self, _key: &Key, block: &Block) -> u64 {
        block.charge() as u64
    }
}

/// A byte-bounded cache of uncompressed blocks shared by all tables.
pub struct BlockCache {
    cache: Cache<Key, Block, BlockWeighter>,
    hits: AtomicU64,
    misses: AtomicU64,
}

impl BlockCache {
    pub fn new(capacity_bytes: u64) -> BlockCache {
        let items = (capacity_bytes / TYPICAL_BLOCK).max(1);
        BlockCache {
            cache: Cache::with_weighter(
                usize::try_from(items).unwrap_or(usize::MAX),
                capacity_bytes,
                BlockWeighter,
            ),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }
    }

    /// Returns the cached block at `(segment_id, offset)`, calling `load`
    /// on a miss. Concurrent misses on one key wait for a single load.
    pub fn get_or_load(
        &self,
        segment_id: u64,
        offset: u64,
        load: impl FnOnce() -> Result<Block>,
    ) -> Result<Block> {
        let mut missed = false;
        let block = self.cache.get_or_insert_with(&(segment_id, offset), || {
            missed = true;
            load()
        });
        let counter = if missed { &self.misses } else { &self.hits };
        counter.fetch_add(1, Ordering::Relaxed);
        block
    }

    pub fn hits(&self) -> u64 {
        self.hits.load(Ordering::Relaxed)
    }

    pub fn misses(&self) -> u64 {
        self.misses.load(Ordering::Relaxed)
    }

    /// Bytes currently charged.
    pub fn usage(&self) -> u64 {
        self.cache.weight()
    }

    pub fn capacity(&self) -> u64 {
        self.cache.capacity()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;
    use std::path::Path;
    use std::sync::Arc;

    fn block(len: usize) -> Block {
        let mut data = vec![0u8; len];
        data.extend_from_slice(&[0, 0, 0, 0, 1, 0, 0, 0]);
        Block::new(data, Arc::from(Path::new("c")), 0).unwrap()
    }

    #[test]
    fn counts_hits_and_misses() {
        let cache = BlockCache::new(1 << 20);
        let a = cache.get_or_load(1, 16, || Ok(block(100))).unwrap();
        let b = cache
            .get_or_load(1, 16, || panic!("must be cached"))
            .unwrap();
        assert!(std::ptr::eq(a.data(), b.data()));
        cache.get_or_load(2, 16, || Ok(block(100))).unwrap();
        assert_eq!((cache.hits(), cache.misses()), (1, 2));
        assert!(cache.usage() >= 200);
    }

    #[test]
    fn failed_loads_are_not_cached() {
        let cache = BlockCache::new(1 << 20);
        let err = cache
            .get_or_load(1, 0, || Err(Error::corruption("c", 0, "bad")))
            .unwrap_err();
        assert!(err.is_corruption());
        cache.get_or_load(1, 0, || Ok(block(10))).unwrap();
        assert_eq!(cache.misses(), 2);
    }

    #[test]
    fn stays_within_capacity() {
        let cache = BlockCache::new(64 * 1024);
        for i in 0..100 {
            cache.get_or_load(0, i * 4096, || Ok(block(4000))).unwrap();
        }
        assert!(cache.usage() <= cache.capacity());
    }
}
