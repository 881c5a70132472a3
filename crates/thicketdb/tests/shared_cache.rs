//! One block cache shared between stores (the `block_cache` option): each
//! open reads only its own blocks, and all of them together stay within
//! the cache's capacity.

mod common;

use common::*;
use thicketdb::table::BlockCache;
use thicketdb::{Db, Options};

fn options_with(cache: &BlockCache) -> Options {
    small_options().block_cache(Some(cache.clone()))
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:05}").into_bytes()
}

/// The same keys in every store with values of the same length, so the
/// stores' segments and block offsets coincide.
fn value(store: char, i: u32) -> Vec<u8> {
    format!("{store}-value{i:05}").into_bytes()
}

fn fill(db: &Db, store: char, n: u32) {
    for i in 0..n {
        db.put(key(i), value(store, i)).unwrap();
    }
    db.flush().unwrap();
}

#[test]
fn stores_sharing_a_cache_read_their_own_blocks_within_its_capacity() {
    // Room for both stores' table metadata (~73 KB of index and filter
    // blocks, pinned) and some data blocks, far below the 180 KB of data
    // blocks the reads pass through.
    let cache = BlockCache::new(128 << 10);
    let (dir_a, dir_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let a = Db::open(dir_a.path(), options_with(&cache)).unwrap();
    let b = Db::open(dir_b.path(), options_with(&cache)).unwrap();
    fill(&a, 'a', 3000);
    fill(&b, 'b', 3000);
    for round in 0..2 {
        for i in 0..3000 {
            assert_eq!(a.get(key(i)).unwrap(), Some(value('a', i)), "round {round}");
            assert_eq!(b.get(key(i)).unwrap(), Some(value('b', i)), "round {round}");
        }
    }
    // Both stores report the one cache, which many blocks of both passed
    // through: its usage is the shared capacity's at most.
    let (sa, sb) = (a.stats(), b.stats());
    assert_eq!(sa.block_cache_bytes, sb.block_cache_bytes);
    assert!(sa.block_cache_bytes > 0, "{sa:?}");
    assert!(sa.block_cache_bytes <= cache.capacity(), "{sa:?}");
    assert!(sa.block_cache_hits + sa.block_cache_misses >= 12_000);
    assert_eq!(cache.usage(), sa.block_cache_bytes);
}

#[test]
fn a_store_recreated_at_the_same_path_never_reads_its_predecessors_blocks() {
    let cache = BlockCache::new(1 << 20);
    let dir = tempfile::tempdir().unwrap();
    let old = Db::open(dir.path(), options_with(&cache)).unwrap();
    fill(&old, 'o', 500);
    assert!((0..500).all(|i| old.get(key(i)).unwrap() == Some(value('o', i))));
    let cached = cache.len();
    assert!(cached > 0);
    old.close().unwrap();
    thicketdb::destroy(dir.path()).unwrap();

    // Same path, same file numbers, same offsets: only the store id of the
    // open tells the blocks apart.
    let new = Db::open(dir.path(), options_with(&cache)).unwrap();
    fill(&new, 'n', 500);
    for i in 0..500 {
        assert_eq!(new.get(key(i)).unwrap(), Some(value('n', i)));
    }
    assert!(
        cache.len() > cached,
        "the new store's blocks were cached too"
    );
}

#[test]
fn block_cache_is_not_settable_by_name() {
    let err = Options::default()
        .set("block_cache", "1048576")
        .unwrap_err();
    assert!(err.to_string().contains("through the API"), "{err}");
}
