//! The shared cache of decoded blocks: shards of [`ClockTable`] chosen by
//! a hash of the block's `(store, segment, offset)`, each behind a
//! read-write lock. Point lookups read a cached block in place under the
//! read lock ([`BlockCache::with_block`]); iterators take a handle to it.
//!
//! One cache may serve several stores (LevelDB's shared `Cache`): each
//! open store reads through its own handle ([`BlockCache::for_new_store`]),
//! whose process-unique store id is part of every key. Segment numbers
//! and offsets of different stores, or of a store destroyed and created
//! again at the same path, then never meet.

mod clock;
mod reservation;

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::RwLock;

use super::block::Block;
use crate::error::{Error, Result};
use clock::ClockTable;
pub use reservation::CacheReservation;

/// Identifies one open store within the process.
type StoreId = u32;

/// The id of handles made by [`BlockCache::new`], never given to an open.
const UNBOUND_STORE: StoreId = 0;

/// The last store id handed out.
static LAST_STORE_ID: AtomicU32 = AtomicU32::new(UNBOUND_STORE);

/// Shards are at least this large, so a shard holds many blocks ...
const MIN_SHARD_BYTES: u64 = 256 << 10;
/// ... and at most this many, enough to keep the read locks of a few
/// cores apart.
const MAX_SHARDS: usize = 64;

/// One shard on its own cache lines: the lock and counters of neighbours
/// are written by different cores.
#[repr(align(128))]
struct Shard {
    table: RwLock<ClockTable>,
    /// Lookups of reads that fill the cache (queries).
    hits: AtomicU64,
    misses: AtomicU64,
    /// Lookups of reads that pass over blocks without filling it (a
    /// compaction's inputs, `fill_cache` off), counted apart: a merge
    /// reads its whole input through the cache, and counted with the
    /// queries' its reads made a 100 MB merge look like a collapse of
    /// the queries' hit ratio (LSbM's Figure 8, 2026-11-28).
    passing_hits: AtomicU64,
    passing_misses: AtomicU64,
}

/// A byte-bounded cache of uncompressed blocks shared by all tables of a
/// store, and by every store opened with it. Blocks are identified by
/// store, segment and absolute offset in the segment, which stay valid for
/// as long as the segment exists. Clones are handles to the same cache and
/// of the same store.
#[derive(Clone)]
pub struct BlockCache {
    shared: Arc<Shared>,
    store: StoreId,
}

struct Shared {
    shards: Box<[Shard]>,
    capacity: u64,
}

impl Shared {
    /// Calls `f` on each shard's table with its share of `bytes` (an even
    /// split, the remainder to the first shards): how a reservation is
    /// taken and given back alike.
    fn split(&self, bytes: u64, mut f: impl FnMut(&mut ClockTable, u64)) {
        let n = self.shards.len() as u64;
        for (i, shard) in (0u64..).zip(self.shards.iter()) {
            let share = bytes / n + u64::from(i < bytes % n);
            if share > 0 {
                f(&mut shard.table.write(), share);
            }
        }
    }
}

impl std::fmt::Debug for BlockCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockCache")
            .field("capacity", &self.shared.capacity)
            .field("store", &self.store)
            .finish()
    }
}

/// Handles are equal when they share one cache (whatever their store).
impl PartialEq for BlockCache {
    fn eq(&self, other: &BlockCache) -> bool {
        Arc::ptr_eq(&self.shared, &other.shared)
    }
}

impl BlockCache {
    /// A new cache of `capacity_bytes`. Stores opened with it (the
    /// `block_cache` option) share it, each through its own handle; this
    /// handle itself is for reading tables directly.
    pub fn new(capacity_bytes: u64) -> BlockCache {
        let shards = usize::try_from(capacity_bytes / MIN_SHARD_BYTES)
            .unwrap_or(MAX_SHARDS)
            .clamp(1, MAX_SHARDS)
            .next_power_of_two()
            .min(MAX_SHARDS);
        let shard_capacity = capacity_bytes / shards as u64;
        let shared = Shared {
            shards: (0..shards)
                .map(|_| Shard {
                    table: RwLock::new(ClockTable::new(shard_capacity)),
                    hits: AtomicU64::new(0),
                    misses: AtomicU64::new(0),
                    passing_hits: AtomicU64::new(0),
                    passing_misses: AtomicU64::new(0),
                })
                .collect(),
            capacity: shard_capacity * shards as u64,
        };
        BlockCache {
            shared: Arc::new(shared),
            store: UNBOUND_STORE,
        }
    }

    /// A handle to this cache for a store being opened, with a store id no
    /// other handle of this process has had. Fails only once the process
    /// has opened 2^32 - 1 stores.
    pub fn for_new_store(&self) -> Result<BlockCache> {
        let store = LAST_STORE_ID
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |id| id.checked_add(1))
            .map_err(|_| {
                Error::InvalidArgument(
                    "this process has used up the block cache's store ids".into(),
                )
            })?
            + 1;
        Ok(BlockCache {
            shared: Arc::clone(&self.shared),
            store,
        })
    }

    /// Calls `read` on this store's block at `(segment_id, offset)`, in place when
    /// it is cached; otherwise calls `load` (a block read from `offset`,
    /// which is how the cache recognises it) and, if `fill_cache`, caches
    /// what it returns as a block of the table starting at `table_offset`
    /// (for [`BlockCache::resident_blocks`]). Reads that pass over blocks once, such as a
    /// compaction's inputs, should not fill: they would evict the blocks
    /// other readers use (and leave the allocator holding memory the cache
    /// let go). Two threads missing on one block may both load it; one copy
    /// stays.
    pub fn with_block<R>(
        &self,
        segment_id: u64,
        table_offset: u64,
        offset: u64,
        fill_cache: bool,
        load: impl FnOnce() -> Result<Block>,
        read: impl FnOnce(&Block) -> R,
    ) -> Result<R> {
        let hash = hash(self.store, segment_id, offset);
        let shard = self.shard(hash);
        {
            let table = shard.table.read();
            if let Some(block) = table.get(self.store, segment_id, offset, hash) {
                let hits = if fill_cache { &shard.hits } else { &shard.passing_hits };
                hits.fetch_add(1, Ordering::Relaxed);
                return Ok(read(block));
            }
        }
        let misses = if fill_cache { &shard.misses } else { &shard.passing_misses };
        misses.fetch_add(1, Ordering::Relaxed);
        let block = load()?;
        let result = read(&block);
        if fill_cache && block.offset() == offset {
            shard
                .table
                .write()
                .insert(self.store, segment_id, table_offset, hash, block);
        }
        Ok(result)
    }

    /// Calls `read` on this store's block at `(segment_id, offset)` when
    /// the cache holds it (a hit); `None` otherwise, reading nothing and
    /// counting no miss: a lookup asks this to learn whether a probe would
    /// need the device (SifrDB's parallel search goes parallel only then).
    pub fn with_cached_block<R>(
        &self,
        segment_id: u64,
        offset: u64,
        read: impl FnOnce(&Block) -> R,
    ) -> Option<R> {
        let hash = hash(self.store, segment_id, offset);
        let shard = self.shard(hash);
        let table = shard.table.read();
        let block = table.get(self.store, segment_id, offset, hash)?;
        shard.hits.fetch_add(1, Ordering::Relaxed);
        Some(read(block))
    }

    /// Blocks of the table starting at `table_offset` of this store's
    /// `segment` in the cache now (LSbM's residency count). Reads every
    /// shard: for periodic decisions such as the compaction buffer's trim,
    /// not for lookups.
    pub fn resident_blocks(&self, segment: u64, table_offset: u64) -> u64 {
        self.shards()
            .iter()
            .map(|s| {
                s.table
                    .read()
                    .resident_blocks(self.store, segment, table_offset)
            })
            .sum()
    }

    fn shards(&self) -> &[Shard] {
        &self.shared.shards
    }

    /// Hits of every store sharing the cache.
    pub fn hits(&self) -> u64 {
        self.shards()
            .iter()
            .map(|s| s.hits.load(Ordering::Relaxed))
            .sum()
    }

    /// Misses of every store sharing the cache.
    pub fn misses(&self) -> u64 {
        self.shards()
            .iter()
            .map(|s| s.misses.load(Ordering::Relaxed))
            .sum()
    }

    /// Hits and misses of reads that do not fill the cache (a compaction's
    /// inputs, reads with `fill_cache` off), of every store sharing it;
    /// not in `hits` and `misses`.
    pub fn passing_lookups(&self) -> (u64, u64) {
        self.shards().iter().fold((0, 0), |(h, m), s| {
            (
                h + s.passing_hits.load(Ordering::Relaxed),
                m + s.passing_misses.load(Ordering::Relaxed),
            )
        })
    }

    /// Holds `bytes` of the cache's capacity for memory kept outside it
    /// (an open table's index and filter, `charge_table_metadata`) until
    /// the reservation is dropped, evicting blocks to make room: blocks and
    /// reservations together stay within the capacity, as RocksDB's
    /// charged cache entries do. Spread over every shard.
    pub fn reserve(&self, bytes: u64) -> CacheReservation {
        CacheReservation::new(self.shared.clone(), bytes)
    }

    /// Bytes held by reservations, for every store sharing the cache.
    pub fn reserved(&self) -> u64 {
        self.shards()
            .iter()
            .map(|s| s.table.read().reserved())
            .sum()
    }

    /// Bytes of blocks currently cached, for every store sharing the cache.
    pub fn usage(&self) -> u64 {
        self.shards().iter().map(|s| s.table.read().charge()).sum()
    }

    /// Blocks currently cached, for every store sharing the cache.
    pub fn len(&self) -> usize {
        self.shards().iter().map(|s| s.table.read().len()).sum()
    }

    /// True when no block is cached.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The cache's capacity in bytes.
    pub fn capacity(&self) -> u64 {
        self.shared.capacity
    }

    fn shard(&self, hash: u64) -> &Shard {
        // High bits pick the shard; the shard's table probes with the low.
        let shards = self.shards();
        let i = (hash >> 32) as usize & (shards.len() - 1);
        &shards[i]
    }
}

pub(super) fn hash(store: StoreId, segment_id: u64, offset: u64) -> u64 {
    let mut key = [0u8; 20];
    key[..4].copy_from_slice(&store.to_le_bytes());
    key[4..12].copy_from_slice(&segment_id.to_le_bytes());
    key[12..].copy_from_slice(&offset.to_le_bytes());
    xxhash_rust::xxh3::xxh3_64(&key)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;
    use std::path::PathBuf;
    use std::sync::Arc;

    fn block(offset: u64, len: usize) -> Block {
        block_at(offset, 0, len)
    }

    /// A block of about `len` bytes, read from `offset`, whose first 8
    /// bytes hold `tag`.
    fn block_at(offset: u64, tag: u64, len: usize) -> Block {
        let mut data = tag.to_le_bytes().to_vec();
        data.resize(len.max(8), 0);
        data.extend_from_slice(&[0, 0, 0, 0, 1, 0, 0, 0]);
        Block::new(data, Arc::new(PathBuf::from("c")), offset).unwrap()
    }

    /// A handle to the block at `(segment, offset)`, loaded and cached on
    /// a miss.
    fn get_or_load(
        cache: &BlockCache,
        segment: u64,
        offset: u64,
        load: impl FnOnce() -> Result<Block>,
    ) -> Result<Block> {
        cache.with_block(segment, 0, offset, true, load, Block::clone)
    }

    fn tag(block: &Block) -> u64 {
        u64::from_le_bytes(block.data()[..8].try_into().unwrap())
    }

    #[test]
    fn counts_hits_and_misses() {
        let cache = BlockCache::new(1 << 20);
        let a = get_or_load(&cache, 1, 16, || Ok(block(16, 100))).unwrap();
        let b = get_or_load(&cache, 1, 16, || panic!("must be cached")).unwrap();
        assert!(std::ptr::eq(a.data(), b.data()));
        get_or_load(&cache, 2, 16, || Ok(block(16, 100))).unwrap();
        assert_eq!((cache.hits(), cache.misses()), (1, 2));
        assert!(cache.usage() >= 200);
    }

    #[test]
    fn stores_sharing_a_cache_keep_their_blocks_apart() {
        let cache = BlockCache::new(1 << 20);
        let (a, b) = (
            cache.for_new_store().unwrap(),
            cache.for_new_store().unwrap(),
        );
        assert_ne!(a.store, b.store);
        assert_eq!(a, b, "one cache");
        a.with_block(1, 0, 16, true, || Ok(block_at(16, 1, 100)), tag)
            .unwrap();
        let got = b.with_block(1, 0, 16, true, || Ok(block_at(16, 2, 100)), tag);
        assert_eq!(got.unwrap(), 2, "b missed and loaded its own block");
        let again = a.with_block(1, 0, 16, true, || panic!("must be cached"), tag);
        assert_eq!(again.unwrap(), 1);
        assert_eq!((cache.len(), cache.misses(), cache.hits()), (2, 2, 1));
        assert_eq!((a.resident_blocks(1, 0), b.resident_blocks(1, 0)), (1, 1));
        assert_eq!(
            cache.resident_blocks(1, 0),
            0,
            "the unbound handle has none"
        );
    }

    #[test]
    fn failed_loads_are_not_cached() {
        let cache = BlockCache::new(1 << 20);
        let err = get_or_load(&cache, 1, 0, || Err(Error::corruption("c", 0, "bad"))).unwrap_err();
        assert!(err.is_corruption());
        get_or_load(&cache, 1, 0, || Ok(block(0, 10))).unwrap();
        assert_eq!(cache.misses(), 2);
    }

    #[test]
    fn stays_within_capacity() {
        let cache = BlockCache::new(64 * 1024);
        for i in 0..100 {
            get_or_load(&cache, 0, i * 4096, || Ok(block(i * 4096, 4000))).unwrap();
        }
        assert!(cache.usage() <= cache.capacity());
    }

    #[test]
    fn reads_in_place_and_on_a_miss() {
        let cache = BlockCache::new(1 << 20);
        let loaded = cache
            .with_block(3, 0, 64, true, || Ok(block_at(64, 7, 100)), tag)
            .unwrap();
        let cached = cache
            .with_block(3, 0, 64, true, || panic!("must be cached"), tag)
            .unwrap();
        assert_eq!((loaded, cached), (7, 7));
        assert_eq!(cache.len(), 1);
    }

    #[test]
    fn reads_that_do_not_fill_still_use_cached_blocks() {
        let cache = BlockCache::new(1 << 20);
        let read = cache.with_block(1, 0, 0, false, || Ok(block_at(0, 3, 100)), tag);
        // Counted apart from the lookups of reads that fill.
        assert_eq!(
            (read.unwrap(), cache.len(), cache.misses(), cache.passing_lookups()),
            (3, 0, 0, (0, 1))
        );
        get_or_load(&cache, 1, 0, || Ok(block_at(0, 4, 100))).unwrap();
        let hits = cache.hits();
        let cached = cache.with_block(1, 0, 0, false, || panic!("must be cached"), tag);
        assert_eq!(
            (cached.unwrap(), cache.len(), cache.hits(), cache.passing_lookups()),
            (4, 1, hits, (1, 1))
        );
    }

    #[test]
    fn a_block_from_another_offset_is_not_cached() {
        let cache = BlockCache::new(1 << 20);
        let got = cache.with_block(3, 0, 64, true, || Ok(block_at(128, 7, 100)), tag);
        assert_eq!((got.unwrap(), cache.len()), (7, 0));
    }

    #[test]
    fn a_block_used_between_insertions_survives_them() {
        // One shard holding about ten blocks.
        let cache = BlockCache::new(10 * 4200);
        assert!(cache.capacity() < MIN_SHARD_BYTES);
        get_or_load(&cache, 9, 0, || Ok(block_at(0, 1, 4000))).unwrap();
        for i in 1..200 {
            get_or_load(&cache, 0, i * 4096, || Ok(block_at(i * 4096, i, 4000))).unwrap();
            let hot = get_or_load(&cache, 9, 0, || panic!("hot block evicted"));
            assert_eq!(tag(&hot.unwrap()), 1);
        }
        assert!(cache.len() > 1 && cache.usage() <= cache.capacity());
    }

    #[test]
    fn many_small_blocks_grow_the_table() {
        let cache = BlockCache::new(200 << 10);
        for i in 0..1000 {
            get_or_load(&cache, 1, i, || Ok(block_at(i, i, 10))).unwrap();
        }
        assert_eq!(cache.len(), 1000);
        for i in 0..1000 {
            let b = get_or_load(&cache, 1, i, || panic!("evicted")).unwrap();
            assert_eq!(tag(&b), i);
        }
    }

    #[test]
    fn reservations_share_the_capacity_with_blocks() {
        let cache = BlockCache::new(1 << 20);
        for i in 0..200 {
            get_or_load(&cache, 1, i * 4096, || Ok(block(i * 4096, 4000))).unwrap();
        }
        let full = cache.usage();
        assert!(full > 700 << 10, "{full}");
        // Holding half the capacity evicts blocks down to the other half.
        let half = cache.reserve(cache.capacity() / 2);
        assert_eq!(cache.reserved(), cache.capacity() / 2);
        assert!(cache.usage() + cache.reserved() <= cache.capacity());
        assert!(cache.usage() < full);
        // With all of it held, a block is read but not cached.
        let rest = cache.reserve(cache.capacity() - half.bytes());
        assert_eq!(cache.usage(), 0);
        let b = get_or_load(&cache, 2, 0, || Ok(block_at(0, 9, 100))).unwrap();
        assert_eq!((tag(&b), cache.len()), (9, 0));
        // Given back, the capacity holds blocks again.
        drop((half, rest));
        assert_eq!(cache.reserved(), 0);
        get_or_load(&cache, 2, 0, || Ok(block_at(0, 9, 100))).unwrap();
        assert_eq!(cache.len(), 1);
    }

    #[test]
    fn a_block_larger_than_a_shard_is_returned_uncached() {
        let cache = BlockCache::new(4096);
        let b = get_or_load(&cache, 1, 0, || Ok(block_at(0, 5, 8192))).unwrap();
        assert_eq!((tag(&b), cache.len(), cache.usage()), (5, 0, 0));
        let zero = BlockCache::new(0);
        get_or_load(&zero, 1, 0, || Ok(block(0, 10))).unwrap();
        assert_eq!(zero.len(), 0);
    }

    #[test]
    fn threads_always_read_the_block_they_asked_for() {
        let cache = Arc::new(BlockCache::new(64 * 1024));
        let threads: Vec<_> = (0..4u64)
            .map(|t| {
                let cache = cache.clone();
                std::thread::spawn(move || {
                    let mut x = t + 1;
                    for _ in 0..5000 {
                        x = x
                            .wrapping_mul(6364136223846793005)
                            .wrapping_add(1442695040888963407);
                        let (segment, offset) = ((x >> 60) & 3, (x >> 33) % 64 * 4096);
                        let id = segment << 32 | offset;
                        let got = cache
                            .with_block(
                                segment,
                                0,
                                offset,
                                true,
                                || Ok(block_at(offset, id, 2000)),
                                tag,
                            )
                            .unwrap();
                        assert_eq!(got, id);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert!(cache.usage() <= cache.capacity());
        assert_eq!(cache.hits() + cache.misses(), 20_000);
    }

    #[test]
    fn counts_each_tables_resident_blocks_through_evictions() {
        // One shard of about ten 4 KiB blocks. Tables (segment, start):
        // two in segment 5, one in segment 6, and blocks of each.
        let cache = BlockCache::new(10 * 4200);
        let tables: [(u64, u64); 3] = [(5, 0), (5, 1 << 20), (6, 0)];
        let blocks =
            |(segment, start): (u64, u64)| (0..30).map(move |i| (segment, start, start + i * 4096));
        // The blocks of a table actually cached, found by probing each with
        // a loader that fails (a miss caches nothing).
        let actually_cached = |cache: &BlockCache, table: (u64, u64)| {
            blocks(table)
                .filter(|&(segment, start, offset)| {
                    cache
                        .with_block(
                            segment,
                            start,
                            offset,
                            true,
                            || Err(Error::corruption("c", 0, "miss")),
                            |_| (),
                        )
                        .is_ok()
                })
                .count() as u64
        };
        for round in 0..3 {
            for &table in &tables {
                for (segment, start, offset) in blocks(table).skip(round * 7).take(5 + round) {
                    get_or_load_in(&cache, segment, start, offset, || {
                        Ok(block_at(offset, 0, 4000))
                    })
                    .unwrap();
                }
            }
            let mut total = 0;
            for &(segment, start) in &tables {
                let counted = cache.resident_blocks(segment, start);
                assert_eq!(
                    counted,
                    actually_cached(&cache, (segment, start)),
                    "table {segment}/{start}"
                );
                total += counted;
            }
            assert_eq!(total, cache.len() as u64);
        }
        assert!(cache.len() < 3 * (5 + 6 + 7), "evictions happened");
    }

    fn get_or_load_in(
        cache: &BlockCache,
        segment: u64,
        table: u64,
        offset: u64,
        load: impl FnOnce() -> Result<Block>,
    ) -> Result<Block> {
        cache.with_block(segment, table, offset, true, load, Block::clone)
    }

    proptest::proptest! {
        /// Against a model of what was loaded: a hit returns the block
        /// loaded for that key, and the charge matches the cached blocks
        /// and never exceeds the capacity.
        #[test]
        fn matches_a_model(ops in proptest::collection::vec((0u64..3, 0u64..40, 1usize..3000), 1..400)) {
            let cache = BlockCache::new(24 * 1024);
            let mut loads = std::collections::HashMap::new();
            for (n, (segment, offset, len)) in ops.into_iter().enumerate() {
                let fresh = n as u64;
                let got = cache
                    .with_block(segment, 0, offset, true, || Ok(block_at(offset, fresh, len)), tag)
                    .unwrap();
                if got == fresh {
                    loads.insert((segment, offset), fresh);
                }
                proptest::prop_assert_eq!(loads.get(&(segment, offset)), Some(&got));
                proptest::prop_assert!(cache.usage() <= cache.capacity());
            }
            let mut resident = 0;
            for (&(segment, offset), &id) in &loads {
                let cached = cache.with_block(segment, 0, offset, true, || Err(Error::corruption("c", 0, "gone")), |b| (tag(b), b.charge()));
                if let Ok((got, charge)) = cached {
                    proptest::prop_assert_eq!(got, id);
                    resident += charge as u64;
                }
            }
            proptest::prop_assert_eq!(resident, cache.usage());
        }
    }
}
