//! LSbM's compaction buffer through the public API: cached blocks survive
//! a table's move into the buffer, lookups never see a stale version from
//! it, and the buffer survives a reopen.

use thicketdb::{Db, Options, Profile};

fn key(i: u64) -> Vec<u8> {
    format!("a{i:07}").into_bytes()
}

/// Keys above every `key(i)`: writing them compacts L1 into L2 without
/// touching the `key(i)` tables' contents.
fn filler(i: u64) -> Vec<u8> {
    format!("z{i:07}").into_bytes()
}

fn value(i: u64, round: u8) -> Vec<u8> {
    let mut v = vec![round; 100];
    v[..8].copy_from_slice(&i.to_le_bytes());
    v
}

/// Tiny tables and levels (L1 64 KiB, L2 640 KiB), a block cache that
/// holds everything, no trim during the test.
fn options() -> Options {
    Options {
        write_buffer_size: 64 << 10,
        target_table_size: 8 << 10,
        block_size: 1024,
        l0_compaction_trigger: 2,
        max_bytes_for_level_base: 64 << 10,
        level_size_multiplier: 10,
        group_compaction_bytes: 0,
        block_cache_size: 64 << 20,
        lsbm_trim_interval: 3_600_000,
        ..Profile::Lsbm.options()
    }
}

const KEYS: u64 = 2500;

/// Loads `KEYS` keys (about 290 KiB: L1 full, the rest in L2), then writes
/// filler keys so that L1's key tables move into L2's buffer.
fn load(db: &Db) {
    for i in 0..KEYS {
        db.put(key(i), value(i, 1)).unwrap();
    }
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
}

fn push_l1_down(db: &Db, from: u64) {
    for i in from..from + 800 {
        db.put(filler(i), value(i, 9)).unwrap();
    }
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
}

#[test]
fn a_cached_block_of_a_table_moved_into_the_buffer_is_still_a_hit() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options()).unwrap();
    load(&db);
    // Every key's block is now cached.
    for i in 0..KEYS {
        assert_eq!(db.get(key(i)).unwrap(), Some(value(i, 1)));
    }
    push_l1_down(&db, 0);
    assert!(db.stats().buffer_tables > 0, "{:?}", db.stats());
    let mut from_buffer = 0;
    for i in 0..KEYS {
        let before = db.stats();
        assert_eq!(db.get(key(i)).unwrap(), Some(value(i, 1)));
        let after = db.stats();
        if after.buffer_hits > before.buffer_hits {
            from_buffer += 1;
            assert_eq!(
                after.block_cache_misses, before.block_cache_misses,
                "key {i} was read from a buffer table's block that was cached before the move"
            );
        }
    }
    assert!(from_buffer > 0, "no lookup was answered by the buffer");
}

#[test]
fn keys_updated_or_deleted_after_their_table_entered_the_buffer_are_never_stale() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options()).unwrap();
    load(&db);
    push_l1_down(&db, 0);
    // Rewrite every third key and delete every seventh, then move those
    // writes down through L0, L1 and L2 in steps, checking every key at
    // each point of the merge rounds.
    let expected =
        |i: u64, rewritten: bool| match (rewritten, i.is_multiple_of(7), i.is_multiple_of(3)) {
            (true, true, _) => None,
            (true, false, true) => Some(value(i, 2)),
            _ => Some(value(i, 1)),
        };
    let check = |rewritten: bool, when: &str| {
        for i in 0..KEYS {
            assert_eq!(
                db.get(key(i)).unwrap(),
                expected(i, rewritten),
                "key {i} {when}"
            );
        }
    };
    check(false, "before the rewrite");
    for i in 0..KEYS {
        if i.is_multiple_of(7) {
            db.delete(key(i)).unwrap();
        } else if i.is_multiple_of(3) {
            db.put(key(i), value(i, 2)).unwrap();
        }
    }
    check(true, "in the memtable");
    db.flush().unwrap();
    check(true, "after a flush");
    for step in 1..=4 {
        push_l1_down(&db, step * 1000);
        check(true, &format!("after filler step {step}"));
    }
    let stats = db.stats();
    assert!(stats.buffer_hits > 0, "{stats:?}");
    let mut it = db.iter(Default::default()).unwrap();
    it.seek_to_first();
    let mut i = 0;
    while it.valid() && it.key() < filler(0).as_slice() {
        while expected(i, true).is_none() {
            i += 1;
        }
        assert_eq!(
            (it.key(), it.value()),
            (key(i).as_slice(), expected(i, true).unwrap().as_slice())
        );
        i += 1;
        it.next();
    }
    while i < KEYS && expected(i, true).is_none() {
        i += 1;
    }
    assert_eq!(i, KEYS, "the iterator ended early");
}

#[test]
fn reopen_keeps_the_buffer() {
    let dir = tempfile::tempdir().unwrap();
    let (tables, bytes) = {
        let db = Db::open(dir.path(), options()).unwrap();
        load(&db);
        push_l1_down(&db, 0);
        let stats = db.stats();
        db.close().unwrap();
        (stats.buffer_tables, stats.compaction_buffer_bytes)
    };
    assert!(tables > 0);
    let db = Db::open(dir.path(), options()).unwrap();
    let stats = db.stats();
    assert_eq!(
        (stats.buffer_tables, stats.compaction_buffer_bytes),
        (tables, bytes)
    );
    let hits = stats.buffer_hits;
    for i in 0..KEYS {
        assert_eq!(db.get(key(i)).unwrap(), Some(value(i, 1)));
    }
    assert!(
        db.stats().buffer_hits > hits,
        "the reopened buffer answers lookups"
    );
}

#[test]
fn trim_removes_uncached_buffer_tables_and_releases_their_space() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(
        dir.path(),
        Options {
            lsbm_trim_threshold: 1.0,
            block_cache_size: 0,
            ..options()
        },
    )
    .unwrap();
    load(&db);
    // Two rounds of filler make two buffer runs in L2; with no block cache
    // nothing is cached, so a trim removes every table outside the newest.
    push_l1_down(&db, 0);
    push_l1_down(&db, 1000);
    let before = db.stats();
    db.trim_compaction_buffer().unwrap();
    let after = db.stats();
    assert!(
        after.buffer_tables_removed > before.buffer_tables_removed,
        "{after:?}"
    );
    assert!(after.compaction_buffer_bytes < before.compaction_buffer_bytes);
    for i in 0..KEYS {
        assert_eq!(db.get(key(i)).unwrap(), Some(value(i, 1)));
    }
}
