//! LSbM's compaction buffer through the public API: cached blocks survive
//! a table's move into the buffer, lookups and range reads never see a
//! stale version from it, and the buffer survives a reopen.

mod common;

use thicketdb::{Db, Options, Profile};

use common::tiny_tree;

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

/// Tiny tables and levels (L1 64 KiB, L2 640 KiB: fixed targets), a
/// block cache that holds everything, no trim during the test.
fn options() -> Options {
    tiny_tree(Profile::Lsbm.options(), 0)
        .dynamic_level_bytes(false)
        .level_size_multiplier(10)
        .block_cache_size(64 << 20)
        .lsbm_trim_interval(3_600_000)
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

/// As `push_l1_down`, with keys between the `key(i)` and the fillers.
fn push_below(db: &Db, from: u64) {
    for i in from..from + 800 {
        db.put(format!("y{i:07}"), value(i, 9)).unwrap();
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

/// Scans every `key(i)` in ranges of 100, after the filler keys' (whose
/// blocks a seek touches in L0 and L1); returns the block cache misses of
/// the `key(i)` scans.
fn scan_keys(db: &Db) -> u64 {
    db.range(filler(0)..).unwrap().for_each(drop);
    let misses = db.stats().block_cache_misses;
    for start in (0..KEYS).step_by(100) {
        let n = db.range(key(start)..key(KEYS)).unwrap().take(100).count();
        assert_eq!(n as u64, 100.min(KEYS - start));
    }
    db.stats().block_cache_misses - misses
}

/// Puts `entries` in steps of `STEP`, each flushed and its compactions
/// waited for: no memtable fills by itself and no compaction runs beside a
/// write, so the same writes build the same tree on every run.
fn put_in_steps(db: &Db, entries: impl Iterator<Item = (Vec<u8>, Vec<u8>)>) {
    /// About 30 KiB of these entries: half a memtable.
    const STEP: usize = 256;
    let entries: Vec<_> = entries.collect();
    for step in entries.chunks(STEP) {
        for (k, v) in step {
            db.put(k, v).unwrap();
        }
        db.flush().unwrap();
        db.wait_for_compactions().unwrap();
    }
}

/// Even keys go down to L2, odd ones stay above, every block is cached;
/// then the odd keys merge into L2's run, rewriting its tables. Returns
/// the block cache misses of range reads over every key after that, and
/// the store's stats.
fn range_reads_after_a_merge_into_l2(options: Options) -> (u64, thicketdb::Stats) {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options).unwrap();
    let fillers = |from: u64| (from..from + 800).map(|i| (filler(i), value(i, 9)));
    for odd in [0, 1] {
        put_in_steps(&db, (odd..KEYS).step_by(2).map(|i| (key(i), value(i, 1))));
        if odd == 0 {
            put_in_steps(&db, fillers(0));
        }
    }
    scan_keys(&db);
    put_in_steps(&db, fillers(1000));
    put_in_steps(&db, fillers(2000));
    let misses = scan_keys(&db);
    (misses, db.stats())
}

#[test]
fn a_range_read_from_the_buffer_hits_the_blocks_cached_before_a_merge() {
    // L2 takes everything: no L3 (whose buffer would receive L2's own
    // tables, which the buffer's reads left uncached).
    let options = options().level_size_multiplier(100);
    let (misses, stats) = range_reads_after_a_merge_into_l2(options.clone());
    assert!(stats.buffer_range_pieces > 0, "{stats:?}");
    // The same with range reads kept off the buffer (`lsbm_range_reads`):
    // the merge rewrote L2's cached tables, so these reads miss.
    let (without, control) = range_reads_after_a_merge_into_l2(options.lsbm_range_reads(false));
    assert_eq!(control.buffer_range_pieces, 0);
    assert!(
        without > 20,
        "{without} misses without the buffer {control:?}"
    );
    assert!(
        misses * 10 <= without,
        "{misses} misses with the buffer, {without} without {stats:?}"
    );
}

#[test]
fn keys_updated_or_deleted_after_their_table_entered_the_buffer_are_never_stale() {
    // Range reads choosing by the cache (`lsbm_range_by_cache`), which
    // with everything cached read the level's runs, and reading the buffer
    // wherever it may serve.
    for by_cache in [true, false] {
        never_stale(options().lsbm_range_by_cache(by_cache), !by_cache);
    }
}

/// The same on dynamic level sizing: L0 compacts into a base level below
/// L1 (here L5 over L6), whose buffer takes L0's tables as B₁ does.
#[test]
fn on_dynamic_level_sizing_updated_or_deleted_keys_are_never_stale() {
    for by_cache in [true, false] {
        never_stale(
            options()
                .dynamic_level_bytes(true)
                .lsbm_range_by_cache(by_cache),
            !by_cache,
        );
    }
}

/// Rewrites and deletes keys whose tables are in the buffer, checking
/// every key and range read at each step; `buffer_reads`: range reads
/// must have read the buffer.
fn never_stale(options: Options, buffer_reads: bool) {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options).unwrap();
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
        // Range reads of 100 keys (Algorithm 4) from every 50th key.
        for start in (0..KEYS).step_by(50) {
            let want: Vec<(Vec<u8>, Vec<u8>)> = (start..KEYS)
                .filter_map(|i| expected(i, rewritten).map(|v| (key(i), v)))
                .take(100)
                .collect();
            let got: Vec<(Vec<u8>, Vec<u8>)> = db
                .range(key(start)..key(KEYS))
                .unwrap()
                .take(100)
                .collect::<thicketdb::Result<_>>()
                .unwrap();
            assert!(got == want, "range from key {start} {when}");
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
    assert!(stats.buffer_range_pieces > 0 || !buffer_reads, "{stats:?}");
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
        options().lsbm_trim_threshold(1.0).block_cache_size(0),
    )
    .unwrap();
    load(&db);
    // Two rounds of filler, the second below the first (the round robin
    // wraps), make two buffer runs in L2; with no block cache nothing is
    // cached. A trim spares the tables appended since the one before it
    // (here: since open), so the first removes nothing and the second
    // every table, the newest run's included.
    push_l1_down(&db, 0);
    push_below(&db, 1000);
    let before = db.stats();
    db.trim_compaction_buffer().unwrap();
    assert_eq!(db.stats().buffer_tables, before.buffer_tables);
    db.trim_compaction_buffer().unwrap();
    let after = db.stats();
    assert!(
        after.buffer_tables_removed > before.buffer_tables_removed,
        "{after:?}"
    );
    assert!(after.compaction_buffer_bytes < before.compaction_buffer_bytes);
    assert_eq!(after.buffer_tables, 0, "{after:?}");
    for i in 0..KEYS {
        assert_eq!(db.get(key(i)).unwrap(), Some(value(i, 1)));
    }
}

/// Opened without `lsbm_buffer`, a store drops its buffer: compactions
/// would no longer append to it, so its tables would answer lookups with
/// versions that later writes replaced.
#[test]
fn reopen_without_the_buffer_drops_it() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Db::open(dir.path(), options()).unwrap();
        load(&db);
        push_l1_down(&db, 0);
        assert!(db.stats().buffer_tables > 0);
        db.close().unwrap();
    }
    let plain = || options().lsbm_buffer(false);
    {
        let db = Db::open(dir.path(), plain()).unwrap();
        let stats = db.stats();
        assert_eq!((stats.buffer_tables, stats.compaction_buffer_bytes), (0, 0));
        for i in 0..KEYS {
            db.put(key(i), value(i, 2)).unwrap();
        }
        db.flush().unwrap();
        for step in 1..=3 {
            push_l1_down(&db, step * 1000);
        }
        db.close().unwrap();
    }
    let db = Db::open(dir.path(), options()).unwrap();
    for i in 0..KEYS {
        assert_eq!(db.get(key(i)).unwrap(), Some(value(i, 2)), "key {i}");
    }
    let got: Vec<Vec<u8>> = db
        .range(key(0)..key(KEYS))
        .unwrap()
        .map(|pair| pair.unwrap().1)
        .collect();
    assert_eq!(got, (0..KEYS).map(|i| value(i, 2)).collect::<Vec<_>>());
}

/// B₁: L0's tables join L1's compaction buffer when they merge into L1.
/// A load that stays in L1, then rounds of a few overwrites and deletes,
/// flushed one by one so that L0 runs overlapping
/// one another merge into L1 together: every lookup and range read sees
/// the newest version, and lookups are answered from B₁.
#[test]
fn l0_tables_in_l1s_buffer_never_answer_with_a_stale_version() {
    l0_tables_in_the_base_levels_buffer(options().max_bytes_for_level_base(4 << 20), 1);
}

/// The same on dynamic level sizing, where L0 compacts into the base
/// level: a store of one level holds it in the last level (L6), whose
/// buffer takes L0's tables.
#[test]
fn l0_tables_in_a_dynamic_base_levels_buffer_never_answer_with_a_stale_version() {
    l0_tables_in_the_base_levels_buffer(
        options()
            .max_bytes_for_level_base(4 << 20)
            .dynamic_level_bytes(true),
        6,
    );
}

/// Rounds of overwrites and deletes merged from L0 into level `base`,
/// checking every key and a range read over them after each round; the
/// base level's buffer must have held L0's tables and answered lookups.
fn l0_tables_in_the_base_levels_buffer(options: Options, base: usize) {
    const SMALL: u64 = 2000;
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options).unwrap();
    let mut newest: Vec<Option<Vec<u8>>> = (0..SMALL).map(|i| Some(value(i, 1))).collect();
    for i in 0..SMALL {
        db.put(key(i), value(i, 1)).unwrap();
    }
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    let mut base_seen = db.stats().buffer_tables_per_level[base] > 0;
    for round in 2..=11u8 {
        for i in (u64::from(round)..SMALL).step_by(150) {
            let write = (i % 3 != 0).then(|| value(i, round));
            match &write {
                Some(v) => db.put(key(i), v).unwrap(),
                None => db.delete(key(i)).unwrap(),
            }
            newest[i as usize] = write;
        }
        db.flush().unwrap();
        if round % 3 == 0 {
            db.wait_for_compactions().unwrap();
        }
        base_seen |= db.stats().buffer_tables_per_level[base] > 0;
        for i in 0..SMALL {
            assert_eq!(
                db.get(key(i)).unwrap(),
                newest[i as usize],
                "key {i} round {round}"
            );
        }
        let want: Vec<(Vec<u8>, Vec<u8>)> = (0..SMALL)
            .filter_map(|i| newest[i as usize].clone().map(|v| (key(i), v)))
            .collect();
        let got: Vec<(Vec<u8>, Vec<u8>)> = db
            .range(key(0)..key(SMALL))
            .unwrap()
            .collect::<thicketdb::Result<_>>()
            .unwrap();
        assert!(got == want, "range read in round {round}");
    }
    let stats = db.stats();
    assert!(base_seen, "L{base}'s buffer never held a table: {stats:?}");
    assert!(stats.buffer_hits_per_level[base] > 0, "{stats:?}");
    assert!(stats.buffer_hits > 0, "{stats:?}");
}

/// Dynamic level sizing moves the base level below a level whose data
/// all merged down, and back above it once the store grows. Deletes
/// compacted from L0 straight into the last level meanwhile pass that
/// level by, and are dropped there: copies of the deleted keys must not
/// come back, to a lookup or a range read either way, once the level holds
/// data again. The emptied level's buffer goes with its last table (until
/// session 25 it kept its copies, and `pass_by` had to remove them).
#[test]
fn a_buffer_the_base_level_passed_by_never_answers_with_a_stale_version() {
    const N: u64 = 1000;
    let dir = tempfile::tempdir().unwrap();
    let options = options()
        .dynamic_level_bytes(true)
        .lsbm_range_by_cache(false)
        .l0_compaction_trigger(1);
    let db = Db::open(dir.path(), options).unwrap();
    let mut newest: std::collections::BTreeMap<Vec<u8>, Vec<u8>> = Default::default();
    // ~110 KiB in L6, over the 64 KiB base ceiling: L5 is the base level.
    for i in 0..N {
        db.put(key(i), value(i, 1)).unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    // Updates below key 200, deletes above: L0's table joins L5's buffer,
    // then L5 merges down into L6, leaving L5 and its buffer empty.
    for i in 0..N {
        if i < 200 {
            db.put(key(i), value(i, 2)).unwrap();
            newest.insert(key(i), value(i, 2));
        } else {
            db.delete(key(i)).unwrap();
        }
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    let stats = db.stats();
    assert_eq!(stats.tables_per_level[5], 0, "{stats:?}");
    assert_eq!(stats.buffer_tables_per_level[5], 0, "{stats:?}");
    assert!(stats.buffer_tables_removed_per_level[5] > 0, "{stats:?}");
    // ~22 KiB in L6 and nothing above it: L6 is the base level, and the
    // deletes of the keys below 100 go from L0 straight into it.
    let written = stats.level_bytes_written.clone();
    for i in 0..100 {
        db.delete(key(i)).unwrap();
        newest.remove(&key(i));
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    let stats = db.stats();
    assert_eq!(stats.level_bytes_written[5], written[5], "{stats:?}");
    assert!(stats.level_bytes_written[6] > written[6], "{stats:?}");
    // Fillers grow L6 past the base ceiling again (L5 the base level),
    // then keys between the deleted ones bring data into L5 over them.
    for i in 0..N {
        db.put(filler(i), value(i, 9)).unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    for i in 0..100 {
        let k = format!("a{i:07}+").into_bytes();
        db.put(&k, value(i, 5)).unwrap();
        newest.insert(k, value(i, 5));
    }
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    let stats = db.stats();
    assert!(stats.tables_per_level[5] > 0, "{stats:?}");
    for i in 0..N {
        assert_eq!(
            db.get(key(i)).unwrap().as_ref(),
            newest.get(&key(i)),
            "key {i}"
        );
    }
    let want: Vec<(Vec<u8>, Vec<u8>)> = newest.into_iter().collect();
    let forward: Vec<(Vec<u8>, Vec<u8>)> = db
        .range(key(0)..key(N))
        .unwrap()
        .collect::<thicketdb::Result<_>>()
        .unwrap();
    assert!(
        forward == want,
        "forward: {} keys, want {}",
        forward.len(),
        want.len()
    );
    let mut it = db
        .iter(thicketdb::ReadOptions {
            lower_bound: Some(key(0)),
            upper_bound: Some(key(N)),
            ..Default::default()
        })
        .unwrap();
    let mut backward = Vec::new();
    it.seek_to_last();
    while it.valid() {
        backward.push((it.key().to_vec(), it.value().to_vec()));
        it.prev();
    }
    it.status().unwrap();
    backward.reverse();
    assert!(
        backward == want,
        "backward: {} keys, want {}",
        backward.len(),
        want.len()
    );
    assert!(
        db.stats().buffer_range_pieces > 0,
        "the buffer served no range read"
    );
}
