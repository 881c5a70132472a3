//! Compaction behaviour under every profile, asserted from `stats()`
//! (counted, never timed).

mod common;

use thicketdb::{Db, Options, Profile};

/// A profile's options, shrunk so a small load spans several levels.
fn small(profile: Profile) -> Options {
    common::tiny_tree(profile.options(), 64 << 10).level_size_multiplier(4)
}

fn key(i: u64) -> Vec<u8> {
    format!("key{i:016}").into_bytes()
}

fn load(profile: Profile, keys: impl Iterator<Item = u64>) -> (tempfile::TempDir, Db) {
    load_with(small(profile), keys)
}

fn load_with(options: Options, keys: impl Iterator<Item = u64>) -> (tempfile::TempDir, Db) {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options).unwrap();
    for i in keys {
        db.put(key(i), [b'v'; 100]).unwrap();
    }
    db.flush().unwrap();
    (dir, db)
}

#[test]
fn sequential_load_moves_tables_instead_of_rewriting() {
    for profile in [Profile::Bolt, Profile::Sifr, Profile::Default] {
        let (_dir, db) = load(profile, 0..20_000);
        let s = db.stats();
        assert!(s.tables_moved > 10, "{profile}: {s:?}");
        assert!(
            s.compaction_bytes_written * 20 < s.flush_bytes_written,
            "{profile}: compaction rewrote data of a sequential load: {s:?}"
        );
        // What remains is the flush itself: table overhead with these tiny
        // tables (index, filter, a 4 KiB HyperLogLog each) and the MANIFEST.
        assert!(s.write_amplification < 2.0, "{profile}: {s:?}");
        assert!(
            s.tables_per_level.iter().skip(1).sum::<usize>() > 0,
            "{profile}: data left L0: {s:?}"
        );
        for i in (0..20_000).step_by(997) {
            assert_eq!(db.get(key(i)).unwrap(), Some(vec![b'v'; 100]));
        }
    }
}

/// Size-Tiered, SifrDB's baseline, has no split storing: the same
/// sequential load is rewritten at every level it passes (the paper's
/// Figure 9a: 8x write amplification for Size-Tiered, none for SifrDB).
#[test]
fn size_tiered_rewrites_a_sequential_load_that_sifr_moves() {
    let (_dir, db) = load(Profile::SizeTiered, 0..20_000);
    let s = db.stats();
    assert_eq!(s.tables_moved, 0, "{s:?}");
    assert!(s.compactions_merge > 0, "{s:?}");
    assert!(
        s.compaction_bytes_written > s.flush_bytes_written,
        "every level rewrites what it receives: {s:?}"
    );
    for i in (0..20_000).step_by(997) {
        assert_eq!(db.get(key(i)).unwrap(), Some(vec![b'v'; 100]));
    }
}

#[test]
fn leveldb_profile_syncs_every_table_and_bolt_every_task() {
    let scrambled = |n: u64| (0..n).map(move |i| (i * 7919) % n);
    let (_d1, leveldb) = load(Profile::LevelDb, scrambled(20_000));
    let (_d2, bolt) = load(Profile::Bolt, scrambled(20_000));
    let (l, b) = (leveldb.stats(), bolt.stats());
    assert!(
        l.compactions_merge > 0 && b.compactions_merge > 0,
        "{l:?} {b:?}"
    );
    // One fsync per output table (plus a directory sync per task) against
    // one per task.
    assert!(l.fsyncs_compaction > l.compactions_merge * 2, "{l:?}");
    assert!(
        b.fsyncs_compaction <= (b.compactions_merge + b.compactions_move) * 2,
        "{b:?}"
    );
    assert!(l.segments >= l.tables, "one segment per table: {l:?}");
    assert!(b.segments < b.tables, "tables share segments: {b:?}");
}

#[test]
fn tiered_levels_stay_within_their_run_limit_and_leveled_hold_one() {
    let scrambled = (0..30_000u64).map(|i| (i * 7919) % 30_000);
    // One compaction thread: with more, runs from the level above arrive
    // while a level's own merge runs, and the level briefly holds more.
    let one_thread = small(Profile::Sifr).compaction_threads(1);
    let (_d, sifr) = load_with(one_thread, scrambled.clone());
    let s = sifr.stats();
    // How many runs a level holds at the end depends on timing; that a
    // full level becomes a new run below is `compaction::tiered` unit tests.
    assert!(s.compactions_merge > 0, "{s:?}");
    // L0 may briefly exceed the limit while flushes outpace compaction, and
    // a journaled merge parks its outputs in one more run of its level.
    let limit = 4 + usize::from(s.merge_in_progress);
    assert!(
        s.runs_per_level.iter().skip(1).all(|&r| r <= limit),
        "{s:?}"
    );
    let (_d, bolt) = load(Profile::Bolt, scrambled);
    let b = bolt.stats();
    assert!(b.runs_per_level.iter().skip(1).all(|&r| r <= 1), "{b:?}");
    for db in [&sifr, &bolt] {
        for i in (0..30_000).step_by(1013) {
            assert_eq!(db.get(key(i)).unwrap(), Some(vec![b'v'; 100]));
        }
    }
}

/// RocksDB's dynamic level sizing: the data settle in the last level and L0
/// compacts into the shallowest level the last one's size needs, so the
/// levels between stay empty; a static tree fills from L1 down.
#[test]
fn dynamic_level_sizing_fills_the_last_level_and_leaves_the_upper_ones_empty() {
    let scrambled = (0..30_000u64).map(|i| (i * 7919) % 30_000);
    let dynamic = small(Profile::Default);
    assert!(dynamic.dynamic_level_bytes, "on in the default profile");
    let (dir, db) = load_with(dynamic.clone(), scrambled.clone());
    db.wait_for_compactions().unwrap();
    let tables = db.stats().tables_per_level;
    let last = tables.len() - 1;
    assert!(
        tables[last] > 0,
        "the last level holds the data: {tables:?}"
    );
    assert_eq!(tables[1], 0, "L1 is above the base level: {tables:?}");
    drop(db);
    let db = Db::open(dir.path(), dynamic).unwrap();
    assert_eq!(
        db.stats().tables_per_level,
        tables,
        "reopen keeps the shape"
    );
    assert_all(&db, 30_000);

    let fixed_targets = small(Profile::Default).dynamic_level_bytes(false);
    let (_d, fixed) = load_with(fixed_targets, scrambled);
    let tables = fixed.stats().tables_per_level;
    assert!(tables[1] > 0, "a static tree fills L1: {tables:?}");
    assert_eq!(tables[last], 0, "and never reaches L6 here: {tables:?}");
}

/// `level_sizing_from_memtable` (issue 38): under small memtables the
/// base level's ceiling is ten memtables rather than the configured
/// 256 MiB, so a store many memtables large gets a base level above the
/// last one, and L0 compactions stop rewriting the whole store; switched
/// off, every L0 compaction merges into the one level holding it all.
#[test]
fn small_memtables_get_a_base_level_above_the_last_and_fewer_rewrites() {
    let scrambled = (0..30_000u64).map(|i| (i * 7919) % 30_000);
    let follows = Profile::Default
        .options()
        .write_buffer_size(64 << 10)
        .target_table_size(8 << 10)
        .block_size(1024);
    assert!(
        follows.level_sizing_from_memtable,
        "on in the default profile"
    );
    let (_d, db) = load_with(follows.clone(), scrambled.clone());
    db.wait_for_compactions().unwrap();
    let derived = db.stats();
    let last = derived.level_bytes_written.len() - 1;
    // Compactions wrote into a level above the last one (which group
    // compaction may have emptied into the last one since).
    let written = &derived.level_bytes_written;
    assert!(
        written[last] > 0 && written[1..last].iter().any(|&b| b > 0),
        "a base level above the last: {written:?}"
    );
    for i in (0..30_000).step_by(97) {
        assert_eq!(db.get(key(i)).unwrap(), Some(vec![b'v'; 100]));
    }

    let (_d, db) = load_with(follows.level_sizing_from_memtable(false), scrambled);
    db.wait_for_compactions().unwrap();
    let configured = db.stats();
    let written = &configured.level_bytes_written;
    assert!(
        written[1..last].iter().all(|&b| b == 0),
        "the 256 MiB ceiling keeps the store in the last level: {written:?}"
    );
    assert!(
        derived.compaction_bytes_written * 4 < configured.compaction_bytes_written * 3,
        "derived {} bytes against configured {}",
        derived.compaction_bytes_written,
        configured.compaction_bytes_written
    );
}

fn sifr_journaled() -> Options {
    small(Profile::Sifr).early_cleaning_threshold(2)
}

fn assert_all(db: &Db, n: u64) {
    for i in 0..n {
        assert_eq!(db.get(key(i)).unwrap(), Some(vec![b'v'; 100]), "key {i}");
    }
}

#[test]
fn sifr_early_cleaning_checkpoints_and_releases_inputs() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), sifr_journaled()).unwrap();
    let n = 30_000u64;
    for i in (0..n).map(|i| (i * 7919) % n) {
        db.put(key(i), [b'v'; 100]).unwrap();
    }
    db.flush().unwrap();
    let s = db.stats();
    assert!(s.merge_checkpoints > 0, "{s:?}");
    assert!(s.holes_punched + s.segments_deleted > 0, "{s:?}");
    assert_all(&db, n);
    db.close().unwrap();
    let db = Db::open(dir.path(), sifr_journaled()).unwrap();
    assert_all(&db, n);
}

#[test]
fn sifr_merge_interrupted_by_a_full_disk_resumes_after_reopen() {
    use common::open_fault;
    use thicketdb::io::fault::{FaultFs, FaultKind};
    let fs = FaultFs::new();
    // No background merges: L0 collects runs until the manual compaction,
    // which also resumes the interrupted merge.
    let options = sifr_journaled()
        .disable_auto_compactions(true)
        .runs_per_level(1000)
        .l0_slowdown_writes_trigger(1000)
        .l0_stop_writes_trigger(1000)
        .l0_compaction_trigger(1000);
    let db = open_fault(&fs, options.clone()).unwrap();
    let n = 12_000u64;
    for i in (0..n).map(|i| (i * 7919) % n) {
        db.put(key(i), [b'v'; 100]).unwrap();
    }
    db.flush().unwrap();
    assert!(db.stats().runs_per_level[0] > 4);
    // Room for a few checkpoints of the L0 merge, not for all of it.
    fs.fail_after_bytes(120 << 10, FaultKind::NoSpace);
    let err = db.compact_range(None, None).unwrap_err();
    assert!(err.is_no_space(), "{err}");
    let before = db.stats();
    assert!(before.merge_checkpoints > 0, "{before:?}");
    // Reads stay correct mid-merge: checkpointed outputs take precedence.
    assert_all(&db, n);
    drop(db);
    fs.clear_faults();

    let db = open_fault(&fs, options).unwrap();
    assert_all(&db, n);
    // A run flushed after the interrupted merge: once that merge is
    // finished, the manual compaction must still compact its level.
    for i in n..n + 2_000 {
        db.put(key(i), [b'v'; 100]).unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    let after = db.stats();
    assert!(after.merges_resumed >= 1, "{after:?}");
    assert_eq!(after.runs_per_level[0], 0, "{after:?}");
    assert_all(&db, n + 2_000);
    drop(db);
    if let Err(e) =
        thicketdb::check::check_store_with_fs(&common::fault_dir(), std::sync::Arc::new(fs.clone()))
    {
        panic!("{e}");
    }
}

#[test]
fn pending_compaction_bytes_slow_writes_down() {
    let opts = small(Profile::LevelDb)
        .soft_pending_compaction_bytes(1)
        .hard_pending_compaction_bytes(u64::MAX);
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), opts).unwrap();
    let mut delayed = false;
    for i in 0..20_000u64 {
        db.put(key((i * 7919) % 20_000), [b'v'; 100]).unwrap();
        delayed |= db.stats().stall_micros > 0;
        if delayed {
            break;
        }
    }
    assert!(delayed, "writes were never slowed down: {:?}", db.stats());
}

/// Overwrites every key while another thread reads: a read never misses a
/// key nor returns a value older than an acknowledged overwrite, while
/// several compactions run side by side.
#[test]
fn reads_stay_correct_while_compactions_run_side_by_side() {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    let n = 20_000u64;
    let order = |i: u64| (i * 7919) % n;
    let options = small(Profile::LevelDb).compaction_threads(3);
    let (_dir, db) = load_with(options, (0..n).map(order));
    let (old, new) = ([b'v'; 100], [b'w'; 100]);
    let overwritten = AtomicU64::new(0);
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut probe = 0u64;
            while !done.load(Ordering::Acquire) {
                probe = probe.wrapping_add(7);
                let acked = overwritten.load(Ordering::Acquire);
                let i = probe % n;
                let got = db.get(key(order(i))).unwrap();
                if i < acked {
                    assert_eq!(
                        got.as_deref(),
                        Some(&new[..]),
                        "key {} overwritten",
                        order(i)
                    );
                } else {
                    assert!(
                        got.as_deref() == Some(&old[..]) || got.as_deref() == Some(&new[..]),
                        "key {}: {got:?}",
                        order(i)
                    );
                }
            }
        });
        for i in 0..n {
            db.put(key(order(i)), new).unwrap();
            overwritten.store(i + 1, Ordering::Release);
        }
        db.flush().unwrap();
        done.store(true, Ordering::Release);
    });
    let s = db.stats();
    assert!(s.compactions_concurrent > 0, "{s:?}");
    for i in (0..n).step_by(7) {
        assert_eq!(db.get(key(i)).unwrap(), Some(new.to_vec()), "key {i}");
    }
}

/// A journaled merge with nothing below drops deletions and the versions
/// they hide. Interrupted between checkpoints, the store must still read
/// every deleted key as absent, by get and by iterator: an input straddling
/// a checkpoint stays in place, but its keys up to the checkpoint are
/// superseded by the interim run and must not be read.
#[test]
fn sifr_merge_dropping_deletions_never_resurrects_a_key_when_interrupted() {
    use common::open_fault;
    use thicketdb::io::fault::{FaultFs, FaultKind};
    let options = sifr_journaled()
        .runs_per_level(1000)
        .l0_slowdown_writes_trigger(1000)
        .l0_stop_writes_trigger(1000)
        .l0_compaction_trigger(1000);
    let n = 12_000u64;
    let deleted = |i: u64| !i.is_multiple_of(3);
    let assert_state = |db: &Db, when: &str| {
        for i in 0..n {
            let expected = (!deleted(i)).then(|| vec![b'v'; 100]);
            assert_eq!(db.get(key(i)).unwrap(), expected, "key {i} {when}");
        }
        let live: Vec<Vec<u8>> = (0..n).filter(|&i| !deleted(i)).map(key).collect();
        let mut it = db.iter(thicketdb::ReadOptions::default()).unwrap();
        let mut forward = Vec::new();
        it.seek_to_first();
        while it.valid() {
            forward.push(it.key().to_vec());
            it.next();
        }
        it.status().unwrap();
        assert!(forward == live, "forward scan {when}");
        let mut backward = Vec::new();
        it.seek_to_last();
        while it.valid() {
            backward.push(it.key().to_vec());
            it.prev();
        }
        it.status().unwrap();
        backward.reverse();
        assert!(backward == live, "backward scan {when}");
    };
    for room in [
        100u64 << 10,
        200 << 10,
        300 << 10,
        400 << 10,
        500 << 10,
        600 << 10,
    ] {
        let fs = FaultFs::new();
        let db = open_fault(&fs, options.clone()).unwrap();
        for i in (0..n).map(|i| (i * 7919) % n) {
            db.put(key(i), [b'v'; 100]).unwrap();
        }
        for i in (0..n).map(|i| (i * 104_729) % n).filter(|&i| deleted(i)) {
            db.delete(key(i)).unwrap();
        }
        db.flush().unwrap();
        fs.fail_after_bytes(room, FaultKind::NoSpace);
        let err = db.compact_range(None, None).unwrap_err();
        assert!(err.is_no_space(), "{err}");
        assert!(db.stats().merge_checkpoints > 0, "room {room}");
        assert_state(&db, "mid-merge");
        drop(db);
        fs.clear_faults();

        let db = open_fault(&fs, options.clone()).unwrap();
        assert_state(&db, "after reopen");
        db.compact_range(None, None).unwrap();
        assert!(db.stats().merges_resumed >= 1);
        assert_state(&db, "after the resumed merge");
        drop(db);
        if let Err(e) = thicketdb::check::check_store_with_fs(
            &common::fault_dir(),
            std::sync::Arc::new(fs.clone()),
        ) {
            panic!("{e}");
        }
    }
}

/// `disable_auto_compactions`: L0 grows past the stop trigger without a
/// stall (nothing would end it) and without any background compaction;
/// `compact_range` still compacts.
#[test]
fn disabled_auto_compactions_leave_l0_to_compact_range() {
    for profile in [Profile::Default, Profile::Sifr] {
        let options = small(profile).disable_auto_compactions(true);
        let stop = options.l0_stop_writes_trigger;
        let (_dir, db) = load_with(options, (0..30_000).map(|i| (i * 7919) % 30_000));
        let s = db.stats();
        assert!(s.runs_per_level[0] > stop, "{profile}: {s:?}");
        assert_eq!(
            s.compactions_merge + s.compactions_move,
            0,
            "{profile}: {s:?}"
        );
        db.compact_range(None, None).unwrap();
        let s = db.stats();
        assert_eq!(s.runs_per_level[0], 0, "{profile}: {s:?}");
        assert_all(&db, 30_000);
    }
}

/// Bytes the store's files occupy on the device (punched holes excluded).
fn allocated_bytes(dir: &std::path::Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok()?.metadata().ok())
        .map(|m| m.blocks() * 512)
        .sum()
}

/// Early cleaning gives space back while the merge runs: the store never
/// holds all inputs and all outputs at once, as an unjournaled merge does
/// just before it commits. A sampler watches the directory while the
/// manual merge of every L0 run runs.
#[test]
fn sifr_early_cleaning_gives_space_back_during_the_merge() {
    use std::sync::atomic::{AtomicBool, Ordering};
    // Few L0 runs: each keeps about one table straddling a checkpoint.
    let options = sifr_journaled()
        .disable_auto_compactions(true)
        .write_buffer_size(1 << 20);
    let n = 60_000u64;
    let (dir, db) = load_with(options, (0..n).map(|i| (i * 7919) % n));
    let before = allocated_bytes(dir.path());
    let done = AtomicBool::new(false);
    let peak = std::thread::scope(|s| {
        let sampler = s.spawn(|| {
            let mut peak = 0;
            while !done.load(Ordering::Acquire) {
                peak = peak.max(allocated_bytes(dir.path()));
            }
            peak
        });
        db.compact_range(None, None).unwrap();
        done.store(true, Ordering::Release);
        sampler.join().unwrap()
    });
    let s = db.stats();
    assert!(s.merge_checkpoints > 10, "{s:?}");
    // Every key once in the inputs and once in the outputs would be about
    // twice `before`.
    assert!(
        peak < before + before / 2,
        "peak {peak} bytes, {before} before the merge: {s:?}"
    );
    assert!(allocated_bytes(dir.path()) < before + before / 4);
    assert_all(&db, n);
}

/// Readers race a journaled merge that drops deletions and releases its
/// inputs as it goes: every get and every scan sees exactly the live keys.
#[test]
fn sifr_readers_race_a_journaled_merge_releasing_inputs() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let options = sifr_journaled().disable_auto_compactions(true);
    let n = 30_000u64;
    let deleted = |i: u64| i % 4 == 1;
    let (_dir, db) = load_with(options, (0..n).map(|i| (i * 7919) % n));
    for i in (0..n).filter(|&i| deleted(i)) {
        db.delete(key(i)).unwrap();
    }
    db.flush().unwrap();
    let live: Vec<Vec<u8>> = (0..n).filter(|&i| !deleted(i)).map(key).collect();
    let done = AtomicBool::new(false);
    let checks = std::thread::scope(|s| {
        let getter = s.spawn(|| {
            let mut rounds = 0u64;
            while !done.load(Ordering::Acquire) || rounds == 0 {
                for i in (rounds % 7..n).step_by(7) {
                    let expected = (!deleted(i)).then(|| vec![b'v'; 100]);
                    assert_eq!(db.get(key(i)).unwrap(), expected, "key {i}");
                }
                rounds += 1;
            }
            rounds
        });
        let scanner = s.spawn(|| {
            let mut scans = 0u64;
            while !done.load(Ordering::Acquire) || scans == 0 {
                let mut it = db.iter(thicketdb::ReadOptions::default()).unwrap();
                it.seek_to_first();
                let mut seen = Vec::with_capacity(live.len());
                while it.valid() {
                    seen.push(it.key().to_vec());
                    it.next();
                }
                it.status().unwrap();
                assert!(seen == live, "scan {scans} saw {} keys", seen.len());
                scans += 1;
            }
            scans
        });
        db.compact_range(None, None).unwrap();
        done.store(true, Ordering::Release);
        (getter.join().unwrap(), scanner.join().unwrap())
    });
    let s = db.stats();
    assert!(s.merge_checkpoints > 10, "{s:?}");
    assert!(checks.0 > 0 && checks.1 > 0);
}

/// Stock LevelDB's flush: one table per memtable (one file, one fsync),
/// placed as deep as L2 when it overlaps nothing on the way
/// (`PickLevelForMemTableOutput`), else in L0.
#[test]
fn leveldb_flush_writes_one_table_and_places_it_below_l0_when_free() {
    let options = small(Profile::LevelDb).disable_auto_compactions(true);
    // Sequential: every flush overlaps nothing, so all go to L2.
    let (_d1, sequential) = load_with(options.clone(), 0..20_000);
    let s = sequential.stats();
    assert!(s.flushes > 5, "{s:?}");
    assert_eq!(
        s.tables_per_level[2] as u64, s.flushes,
        "one table per flush: {s:?}"
    );
    assert_eq!(
        s.fsyncs_flush,
        2 * s.flushes,
        "the table and the directory: {s:?}"
    );
    assert_eq!(s.runs_per_level[..2], [0, 0], "{s:?}");
    // Scrambled: the first flush goes to L2; the second overlaps it and
    // stops at L1; the others overlap L1 and stay in L0.
    let (_d2, scrambled) = load_with(options.clone(), (0..20_000).map(|i| (i * 7919) % 20_000));
    let s = scrambled.stats();
    assert_eq!(s.tables_per_level[1..3], [1, 1], "{s:?}");
    assert_eq!(s.tables_per_level[0] as u64, s.flushes - 2, "{s:?}");
    assert_all(&scrambled, 20_000);
    // The engine's default cuts a flush into tables and keeps it in L0.
    let (_d3, default) = load_with(
        small(Profile::Default).disable_auto_compactions(true),
        0..20_000,
    );
    let s = default.stats();
    assert_eq!(s.runs_per_level[0] as u64, s.flushes, "{s:?}");
    assert!(s.tables_per_level[0] as u64 > s.flushes, "{s:?}");
}

/// LevelDB syncs nothing at a memtable switch and three times per flush
/// (the table, the directory, the MANIFEST); a sync write after switches
/// makes the earlier logs durable first (one sync each, still unflushed or
/// not) and the directory, so a power loss keeps a prefix.
#[test]
fn leveldb_syncs_three_times_per_flush_and_none_at_a_switch() {
    let dir = tempfile::tempdir().unwrap();
    let options = small(Profile::LevelDb).disable_auto_compactions(true);
    let db = Db::open(dir.path(), options).unwrap();
    let before = db.stats();
    for round in 0..5u64 {
        for i in 0..50 {
            db.put(key(round * 100 + i), [b'v'; 100]).unwrap();
        }
        db.flush().unwrap();
    }
    let s = db.stats();
    let flushes = s.flushes - before.flushes;
    assert_eq!(flushes, 5, "{s:?}");
    assert_eq!(
        s.fsyncs_log, before.fsyncs_log,
        "no sync at a switch: {s:?}"
    );
    let per_flush =
        (s.fsyncs_flush + s.fsyncs_manifest - before.fsyncs_flush - before.fsyncs_manifest)
            / flushes;
    assert_eq!(per_flush, 3, "{s:?}");
    // The switch of the last flush left its log unsynced (and the new
    // log's directory entry): a sync write pays for them once.
    let synced = thicketdb::WriteOptions { sync: true };
    db.put_opt(key(1), b"x", synced).unwrap();
    assert_eq!(
        db.stats().fsyncs_log - s.fsyncs_log,
        3,
        "old log, directory, log"
    );
    db.put_opt(key(2), b"y", synced).unwrap();
    assert_eq!(db.stats().fsyncs_log - s.fsyncs_log, 4, "the log alone");
}
