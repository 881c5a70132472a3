//! YoDB's row cache: single key-value pairs of munk-less chunks, in a
//! coarse LRU of a queue of hash tables (`row_cache_tables`). A get's
//! result goes into the newest table (or moves there from an older one);
//! when the newest table holds its share of `row_cache_bytes` a new empty
//! one is pushed and the oldest dropped whole. A put updates a key only if
//! the cache holds it.
//!
//! Never stale: every entry carries the sequence number it is valid at,
//! and each of `GUARD_SLOTS` slots (by key hash) records the newest
//! sequence number a put wrote to a key of that slot, set under the cache
//! lock before the put is published. A get inserts the value it read at
//! sequence `s` only if its slot's record is at most `s`: no put newer
//! than its read has touched the key (or a key sharing its slot). A put
//! after the insert finds the key and updates it. A range delete marks
//! every cached key in its range deleted and raises one store-wide guard,
//! so no get that read before it inserts anything.
//!
//! Sharded by key hash (`SHARDS` locks, each with its own queue of tables
//! and its share of the budget and the guards): a put or get takes one
//! shard's lock, never a store-wide one; a range delete takes every
//! shard's in turn (each shard's guards and rows are its own, so the
//! argument above holds shard by shard).

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;
use xxhash_rust::xxh3::xxh3_64;

/// Put-sequence slots: 512 KiB of guards.
const GUARD_SLOTS: usize = 1 << 16;
/// Shards of a cache of at least `SHARDED_FROM` bytes (a smaller one is
/// one shard, so that its tables are not too small to hold a row).
const SHARDS: usize = 16;
const SHARDED_FROM: u64 = 1 << 20;
/// Bytes an entry costs beyond its key and value.
const ENTRY_OVERHEAD: usize = 48;

/// A cached version: its value (`None`: deleted) and the sequence number
/// it is known newest at.
#[derive(Clone)]
struct Row {
    value: Option<Vec<u8>>,
    sequence: u64,
}

struct Tables {
    /// Newest first.
    queue: VecDeque<HashMap<Vec<u8>, Row>>,
    /// Bytes of the newest table.
    head_bytes: usize,
    /// Bytes of every table.
    bytes: usize,
    /// Per table, newest first, its bytes (to subtract when dropped).
    table_bytes: VecDeque<usize>,
    /// The newest put sequence per slot.
    guards: Vec<u64>,
    /// The newest range delete's sequence.
    range_guard: u64,
}

/// What a lookup in the row cache found.
pub(super) enum Cached {
    /// The key's newest value (`None`: deleted).
    Row(Option<Vec<u8>>),
    /// Not cached, or cached newer than the reader's snapshot.
    Miss,
}

/// The row cache; disabled with a budget of 0.
pub(super) struct RowCache {
    /// The shards, by key hash.
    shards: Vec<Mutex<Tables>>,
    /// Guard slots per shard.
    guard_slots: usize,
    /// Bytes of one table of one shard.
    table_budget: usize,
    /// Tables in the queue at most.
    table_count: usize,
    hits: AtomicU64,
    misses: AtomicU64,
}

impl RowCache {
    pub fn new(bytes: u64, tables: usize) -> RowCache {
        let shards = if bytes >= SHARDED_FROM { SHARDS } else { 1 };
        let guard_slots = GUARD_SLOTS / shards;
        RowCache {
            shards: (0..shards)
                .map(|_| {
                    Mutex::new(Tables {
                        queue: VecDeque::from([HashMap::new()]),
                        head_bytes: 0,
                        bytes: 0,
                        table_bytes: VecDeque::from([0]),
                        guards: if bytes == 0 {
                            Vec::new()
                        } else {
                            vec![0; guard_slots]
                        },
                        range_guard: 0,
                    })
                })
                .collect(),
            guard_slots,
            table_budget: (bytes / (tables.max(1) * shards) as u64) as usize,
            table_count: tables.max(1),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }
    }

    fn enabled(&self) -> bool {
        self.table_budget > 0
    }

    /// The shard holding `key`, and the key's guard slot in it.
    fn shard(&self, key: &[u8]) -> (&Mutex<Tables>, usize) {
        let hash = xxh3_64(key) as usize;
        let shard = &self.shards[hash % self.shards.len()];
        (shard, (hash / self.shards.len()) % self.guard_slots.max(1))
    }

    /// The newest value of `key` if cached and valid at `sequence`.
    pub fn get(&self, key: &[u8], sequence: u64) -> Cached {
        if !self.enabled() {
            return Cached::Miss;
        }
        let mut t = self.shard(key).0.lock();
        let found = t.queue.iter().position(|table| table.contains_key(key));
        let result = match found {
            Some(i) if t.queue[i][key].sequence <= sequence => {
                let row = t.queue[i][key].clone();
                if i > 0 {
                    // Recently used: into the newest table.
                    self.insert_head(&mut t, key, row.clone());
                }
                Cached::Row(row.value)
            }
            _ => Cached::Miss,
        };
        drop(t);
        let counter = match result {
            Cached::Row(_) => &self.hits,
            Cached::Miss => &self.misses,
        };
        counter.fetch_add(1, Ordering::Relaxed);
        result
    }

    /// Caches the value a get read at `sequence`, unless a put newer than
    /// that read touched the key's slot.
    pub fn insert(&self, key: &[u8], value: Option<Vec<u8>>, sequence: u64) {
        if !self.enabled() {
            return;
        }
        let (shard, slot) = self.shard(key);
        let mut t = shard.lock();
        if t.guards[slot] > sequence || t.range_guard > sequence {
            return;
        }
        self.insert_head(&mut t, key, Row { value, sequence });
    }

    /// A put of `key` at `sequence` (`None`: a delete): updates the key
    /// where cached. Called before the put is published.
    pub fn put(&self, key: &[u8], value: Option<&[u8]>, sequence: u64) {
        if !self.enabled() {
            return;
        }
        let (shard, slot) = self.shard(key);
        let mut t = shard.lock();
        let guard = &mut t.guards[slot];
        *guard = (*guard).max(sequence);
        for table in t.queue.iter_mut() {
            if let Some(row) = table.get_mut(key) {
                if row.sequence < sequence {
                    // Sizes change a little; the budget is coarse anyway.
                    row.value = value.map(<[u8]>::to_vec);
                    row.sequence = sequence;
                }
            }
        }
    }

    /// A range delete of `[start, end)` at `sequence`: every cached key
    /// in it reads as deleted from then on. Called before the delete is
    /// published.
    pub fn delete_range(&self, start: &[u8], end: &[u8], sequence: u64) {
        if !self.enabled() {
            return;
        }
        for shard in &self.shards {
            let mut t = shard.lock();
            t.range_guard = t.range_guard.max(sequence);
            for table in t.queue.iter_mut() {
                for (key, row) in table.iter_mut() {
                    if start <= key.as_slice() && key.as_slice() < end && row.sequence < sequence {
                        row.value = None;
                        row.sequence = sequence;
                    }
                }
            }
        }
    }

    fn insert_head(&self, t: &mut Tables, key: &[u8], row: Row) {
        let cost = key.len() + row.value.as_ref().map_or(0, Vec::len) + ENTRY_OVERHEAD;
        if t.head_bytes + cost > self.table_budget && !t.queue[0].is_empty() {
            t.queue.push_front(HashMap::new());
            t.table_bytes.push_front(0);
            t.head_bytes = 0;
            while t.queue.len() > self.table_count {
                t.queue.pop_back();
                let dropped = t.table_bytes.pop_back().unwrap_or(0);
                t.bytes -= dropped;
            }
        }
        if t.queue[0].insert(key.to_vec(), row).is_none() {
            t.head_bytes += cost;
            t.bytes += cost;
            t.table_bytes[0] += cost;
        }
    }

    /// Bytes of the cached entries.
    pub fn bytes(&self) -> u64 {
        self.shards.iter().map(|s| s.lock().bytes as u64).sum()
    }

    /// Lookups that found a valid entry, and those that did not.
    pub fn hits_and_misses(&self) -> (u64, u64) {
        (
            self.hits.load(Ordering::Relaxed),
            self.misses.load(Ordering::Relaxed),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn value(c: Cached) -> Option<Option<Vec<u8>>> {
        match c {
            Cached::Row(v) => Some(v),
            Cached::Miss => None,
        }
    }

    #[test]
    fn puts_update_only_cached_keys() {
        let cache = RowCache::new(1 << 20, 3);
        cache.put(b"a", Some(b"1"), 5);
        assert!(
            value(cache.get(b"a", 10)).is_none(),
            "a put does not insert"
        );
        cache.insert(b"b", Some(b"old".to_vec()), 6);
        cache.put(b"b", Some(b"new"), 7);
        assert_eq!(value(cache.get(b"b", 7)), Some(Some(b"new".to_vec())));
        // A reader older than the cached version misses.
        assert!(value(cache.get(b"b", 6)).is_none());
        cache.put(b"b", None, 8);
        assert_eq!(value(cache.get(b"b", 9)), Some(None));
    }

    #[test]
    fn a_range_delete_hides_cached_keys_and_older_reads() {
        let cache = RowCache::new(1 << 20, 3);
        for k in [&b"a"[..], b"b", b"c"] {
            cache.insert(k, Some(b"v".to_vec()), 5);
        }
        cache.delete_range(b"b", b"c", 7);
        assert_eq!(value(cache.get(b"b", 7)), Some(None));
        assert!(value(cache.get(b"b", 6)).is_none(), "older reader misses");
        assert_eq!(value(cache.get(b"a", 7)), Some(Some(b"v".to_vec())));
        assert_eq!(value(cache.get(b"c", 7)), Some(Some(b"v".to_vec())));
        // A get that read before the delete inserts nothing.
        cache.insert(b"x", Some(b"read-before".to_vec()), 6);
        assert!(value(cache.get(b"x", 100)).is_none());
        cache.insert(b"x", Some(b"read-after".to_vec()), 7);
        assert!(value(cache.get(b"x", 100)).is_some());
    }

    #[test]
    fn a_read_older_than_a_put_is_not_inserted() {
        let cache = RowCache::new(1 << 20, 3);
        cache.put(b"k", Some(b"new"), 9);
        cache.insert(b"k", Some(b"read-before-the-put".to_vec()), 8);
        assert!(value(cache.get(b"k", 100)).is_none());
    }

    #[test]
    fn a_large_cache_is_sharded_and_keeps_its_budget() {
        let cache = RowCache::new(3 << 20, 3);
        assert_eq!(cache.shards.len(), SHARDS);
        for i in 0..40_000u32 {
            cache.insert(format!("key{i}").as_bytes(), Some(vec![0; 100]), 1);
        }
        assert!(cache.bytes() <= (3 << 20) + SHARDS as u64 * 200);
        assert!(value(cache.get(b"key39999", 1)).is_some(), "newest kept");
        assert!(value(cache.get(b"key0", 1)).is_none(), "oldest dropped");
        cache.put(b"key39999", Some(b"new"), 2);
        assert_eq!(
            value(cache.get(b"key39999", 2)),
            Some(Some(b"new".to_vec()))
        );
        cache.delete_range(b"key3", b"key4", 3);
        assert_eq!(value(cache.get(b"key39999", 3)), Some(None));
    }

    #[test]
    fn the_oldest_table_is_dropped_whole() {
        let cache = RowCache::new(3 * 1000, 3);
        for i in 0..200u32 {
            cache.insert(format!("key{i}").as_bytes(), Some(vec![0; 10]), 1);
        }
        assert!(cache.bytes() <= 3000 + 100, "{}", cache.bytes());
        assert!(value(cache.get(b"key199", 1)).is_some(), "newest kept");
        assert!(value(cache.get(b"key0", 1)).is_none(), "oldest dropped");
    }

    /// Writers put increasing versions of one key while readers read the
    /// "store" (an atomic: the published version) and insert what they
    /// read, as gets do: a cached value is never older than a version
    /// published before the lookup.
    #[test]
    fn never_stale_under_concurrent_puts_to_one_key() {
        let cache = Arc::new(RowCache::new(1 << 20, 3));
        let published = Arc::new(AtomicU64::new(0));
        let writer = {
            let (cache, published) = (cache.clone(), published.clone());
            std::thread::spawn(move || {
                for seq in 1..=20_000u64 {
                    cache.put(b"k", Some(&seq.to_le_bytes()), seq);
                    published.store(seq, Ordering::Release);
                }
            })
        };
        let readers: Vec<_> = (0..3)
            .map(|_| {
                let (cache, published) = (cache.clone(), published.clone());
                std::thread::spawn(move || {
                    while published.load(Ordering::Acquire) < 20_000 {
                        let floor = published.load(Ordering::Acquire);
                        let read_at = published.load(Ordering::Acquire);
                        match cache.get(b"k", read_at) {
                            Cached::Row(Some(v)) => {
                                let seen = u64::from_le_bytes(v.try_into().unwrap());
                                assert!(seen >= floor, "stale: {seen} < {floor}");
                            }
                            Cached::Row(None) => panic!("never deleted"),
                            Cached::Miss => {
                                // The "store" answers with the version at read_at.
                                cache.insert(b"k", Some(read_at.to_le_bytes().to_vec()), read_at);
                            }
                        }
                    }
                })
            })
            .collect();
        writer.join().unwrap();
        for r in readers {
            r.join().unwrap();
        }
    }
}
