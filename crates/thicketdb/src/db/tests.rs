//! Behaviour of the store through its public API, on the real file system.

use super::*;
use crate::options::Options;

fn small_options() -> Options {
    Options {
        write_buffer_size: 64 << 10,
        target_table_size: 16 << 10,
        block_size: 1024,
        ..Options::default()
    }
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:08}").into_bytes()
}

/// Every pair a forward scan with `opts` returns (also the chunked
/// layout's tests).
pub(super) fn scan(db: &Db, opts: ReadOptions) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut it = db.iter(opts).unwrap();
    it.seek_to_first();
    let mut out = Vec::new();
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.next();
    }
    it.status().unwrap();
    out
}

/// Every pair a reverse scan with `opts` returns, in key order.
pub(super) fn scan_reverse(db: &Db, opts: ReadOptions) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut it = db.iter(opts).unwrap();
    it.seek_to_last();
    let mut out = Vec::new();
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.prev();
    }
    it.status().unwrap();
    out.reverse();
    out
}

#[test]
fn put_get_delete_and_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), small_options()).unwrap();
    db.put(b"a", b"1").unwrap();
    db.put(b"b", b"2").unwrap();
    db.delete(b"a").unwrap();
    assert_eq!(db.get(b"a").unwrap(), None);
    assert_eq!(db.get(b"b").unwrap(), Some(b"2".to_vec()));
    db.close().unwrap();
    let db = Db::open(dir.path(), small_options()).unwrap();
    assert_eq!(db.get(b"a").unwrap(), None);
    assert_eq!(db.get(b"b").unwrap(), Some(b"2".to_vec()));
}

#[test]
fn gets_of_keys_around_the_stack_lookup_key_size() {
    // Lookup keys up to 128 bytes (user key plus 8-byte trailer) are built
    // on the stack, longer ones on the heap: both sides of the boundary,
    // from the memtable and from tables, present and deleted.
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), small_options()).unwrap();
    let keys: Vec<Vec<u8>> = (118..=122).map(|n| vec![b'k'; n]).collect();
    for (i, k) in keys.iter().enumerate() {
        db.put(k, [i as u8]).unwrap();
    }
    db.delete(&keys[2]).unwrap();
    for flushed in [false, true] {
        for (i, k) in keys.iter().enumerate() {
            let want = (i != 2).then(|| vec![i as u8]);
            assert_eq!(
                db.get(k).unwrap(),
                want,
                "len {} flushed {flushed}",
                k.len()
            );
        }
        db.flush().unwrap();
    }
}

#[test]
fn many_writes_flush_compact_and_survive_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), small_options()).unwrap();
    for i in 0..20_000u32 {
        db.put(key(i % 7000), format!("v{i}").as_bytes()).unwrap();
    }
    for i in (0..7000u32).step_by(3) {
        db.delete(key(i)).unwrap();
    }
    db.flush().unwrap();
    let stats = db.stats();
    assert!(stats.flushes > 0, "{stats:?}");
    assert!(stats.compactions_merge > 0, "{stats:?}");
    assert!(stats.tables > 1);
    let check = |db: &Db| {
        for i in 0..7000u32 {
            let expect = if i % 3 == 0 {
                None
            } else {
                let last = (0..20_000u32).rev().find(|j| j % 7000 == i).unwrap();
                Some(format!("v{last}").into_bytes())
            };
            assert_eq!(db.get(key(i)).unwrap(), expect, "key {i}");
        }
        assert_eq!(scan(db, ReadOptions::default()).len(), 7000 - 2334);
    };
    check(&db);
    db.compact_range(None, None).unwrap();
    assert_eq!(db.stats().tables_per_level[0], 0);
    check(&db);
    drop(db);
    let db = Db::open(dir.path(), small_options()).unwrap();
    check(&db);
    assert!(db.stats().user_bytes_written > 0, "counters persisted");
}

#[test]
fn compactions_read_without_filling_the_block_cache() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), small_options()).unwrap();
    for i in 0..20_000u32 {
        db.put(key(i % 7000), format!("v{i}").as_bytes()).unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    let stats = db.stats();
    assert!(stats.compactions_merge > 0, "{stats:?}");
    assert!(stats.compaction_bytes_read > 0, "{stats:?}");
    assert_eq!(stats.block_cache_bytes, 0, "{stats:?}");
    // Reads asked not to fill it do not ...
    let no_fill = ReadOptions {
        fill_cache: false,
        ..ReadOptions::default()
    };
    assert_eq!(
        db.get_opt(key(5), &no_fill).unwrap(),
        Some(b"v14005".to_vec())
    );
    assert_eq!(scan(&db, no_fill).len(), 7000);
    assert_eq!(db.stats().block_cache_bytes, 0);
    // ... other reads do: a get and an iterator each leave blocks behind.
    db.get(key(5)).unwrap().unwrap();
    let after_get = db.stats().block_cache_bytes;
    assert!(after_get > 0);
    assert_eq!(scan(&db, ReadOptions::default()).len(), 7000);
    assert!(db.stats().block_cache_bytes > after_get);
}

/// `memtable_bloom_size_ratio` reaches the store's memtables: `default`'s
/// memtable holds a filter of that share of `write_buffer_size` before
/// any write (charged to its size), `leveldb`'s none; out-of-range ratios
/// are refused.
#[test]
fn the_memtable_filter_follows_the_profile() {
    use crate::options::Profile;
    // 1% of 64 MiB, rounded up to whole 64-byte blocks.
    for (profile, filter) in [(Profile::Default, 671_088), (Profile::LevelDb, 0)] {
        let dir = tempfile::tempdir().unwrap();
        let options = profile.options().write_buffer_size(64 << 20);
        let db = Db::open(dir.path(), options).unwrap();
        // An empty store: no table, nothing cached; only the memtable.
        let memory = db.approximate_memory_usage();
        assert!(
            (filter..filter + 64).contains(&memory),
            "{profile:?}: {memory} bytes"
        );
    }
    for ratio in [-0.1, 0.3, f64::NAN] {
        let options = Options {
            memtable_bloom_size_ratio: ratio,
            ..Options::default()
        };
        assert!(options.validate().is_err(), "{ratio}");
    }
}

/// Open tables' indexes and filters are charged to the block cache
/// (`charge_table_metadata`, on by default): they and the cached blocks
/// stay within its capacity, and a closed table gives its charge back.
#[test]
fn table_metadata_is_charged_to_the_block_cache() {
    let load = |options: Options| {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), options).unwrap();
        for i in 0..20_000u32 {
            db.put(key(i), format!("v{i}").as_bytes()).unwrap();
        }
        db.flush().unwrap();
        db.compact_range(None, None).unwrap();
        assert_eq!(scan(&db, ReadOptions::default()).len(), 20_000);
        (dir, db)
    };
    let (_dir, db) = load(small_options().block_cache_size(256 << 10));
    let s = db.stats();
    assert!(s.tables > 1, "{s:?}");
    // Each table's index and filter: at least its keys' filter bits.
    assert!(s.block_cache_metadata_bytes >= 20_000 * 10 / 8, "{s:?}");
    assert!(
        s.block_cache_bytes + s.block_cache_metadata_bytes <= 256 << 10,
        "{s:?}"
    );
    drop(db);
    // A cache smaller than the metadata caches no block and still reads.
    let (_dir, db) = load(small_options().block_cache_size(16 << 10));
    let s = db.stats();
    assert_eq!(s.block_cache_bytes, 0, "{s:?}");
    assert_eq!(db.get(key(77)).unwrap(), Some(b"v77".to_vec()));
    // Off (LevelDB's way), nothing is held.
    let (_dir, db) = load(small_options().charge_table_metadata(false));
    let s = db.stats();
    assert_eq!(s.block_cache_metadata_bytes, 0, "{s:?}");
    assert!(s.block_cache_bytes > 0, "{s:?}");
}

/// `space_usage` reads the whole store once: it neither fills the block
/// cache nor evicts what the reads cached (the benchmarks call it at the
/// end of every run, where a filling scan pushed a capped run over its cap).
#[test]
fn space_usage_leaves_the_block_cache_alone() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), small_options().block_cache_size(1 << 20)).unwrap();
    for i in 0..5_000u32 {
        db.put(key(i), format!("v{i}").as_bytes()).unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    assert_eq!(db.get(key(7)).unwrap(), Some(b"v7".to_vec()));
    let before = db.stats();
    assert!(before.block_cache_bytes > 0, "{before:?}");
    let space = db.space_usage().unwrap();
    assert_eq!(space.live_keys, 5_000);
    let after = db.stats();
    assert_eq!(after.block_cache_bytes, before.block_cache_bytes);
    assert!(after.block_cache_passing_misses > before.block_cache_passing_misses);
    assert_eq!(after.block_cache_misses, before.block_cache_misses);
}

#[test]
fn snapshots_see_a_fixed_state() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), small_options()).unwrap();
    db.put(b"k", b"old").unwrap();
    let snap = db.snapshot();
    db.put(b"k", b"new").unwrap();
    db.delete(b"k").unwrap();
    for i in 0..5000u32 {
        db.put(key(i), [b'x'; 50]).unwrap();
    }
    db.compact_range(None, None).unwrap();
    let opts = ReadOptions {
        snapshot: Some(snap.clone()),
        ..ReadOptions::default()
    };
    assert_eq!(db.get_opt(b"k", &opts).unwrap(), Some(b"old".to_vec()));
    assert_eq!(db.get(b"k").unwrap(), None);
    assert_eq!(scan(&db, opts), vec![(b"k".to_vec(), b"old".to_vec())]);
}

#[test]
fn iterator_bounds_and_reverse() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), small_options()).unwrap();
    for i in 0..100u32 {
        db.put(key(i), key(i)).unwrap();
    }
    db.flush().unwrap();
    for i in (0..100u32).step_by(2) {
        db.delete(key(i)).unwrap();
    }
    let opts = ReadOptions {
        lower_bound: Some(key(10)),
        upper_bound: Some(key(20)),
        ..ReadOptions::default()
    };
    let fwd: Vec<_> = scan(&db, opts.clone())
        .into_iter()
        .map(|(k, _)| k)
        .collect();
    let expect: Vec<_> = (10..20).filter(|i| i % 2 == 1).map(key).collect();
    assert_eq!(fwd, expect);
    let mut it = db.iter(opts).unwrap();
    it.seek_to_last();
    let mut rev = Vec::new();
    while it.valid() {
        rev.push(it.key().to_vec());
        it.prev();
    }
    rev.reverse();
    assert_eq!(rev, expect);
    it.seek(&key(14));
    assert_eq!(it.key(), key(15).as_slice());
    it.prev();
    assert_eq!(it.key(), key(13).as_slice());
    it.next();
    assert_eq!(it.key(), key(15).as_slice());
}

#[test]
fn batches_are_atomic_and_limits_checked() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), small_options()).unwrap();
    let mut b = WriteBatch::new();
    b.put(b"x", b"1").unwrap();
    b.put(b"y", b"2").unwrap();
    b.delete(b"x").unwrap();
    db.write(b).unwrap();
    assert_eq!(db.get(b"x").unwrap(), None);
    assert_eq!(db.get(b"y").unwrap(), Some(b"2".to_vec()));
    let huge_key = vec![0u8; MAX_KEY_SIZE + 1];
    assert!(matches!(
        db.put(&huge_key, b"v"),
        Err(Error::InvalidArgument(_))
    ));
}

#[test]
fn second_open_is_locked_and_profile_is_checked() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), small_options()).unwrap();
    assert!(matches!(
        Db::open(dir.path(), small_options()),
        Err(Error::Locked(_))
    ));
    db.close().unwrap();
    let opts = Options {
        create_if_missing: false,
        ..small_options()
    };
    Db::open(dir.path(), opts).unwrap();
    let missing = tempfile::tempdir().unwrap();
    let opts = Options {
        create_if_missing: false,
        ..small_options()
    };
    assert!(matches!(
        Db::open(missing.path().join("none"), opts),
        Err(Error::InvalidArgument(_))
    ));
}

/// Four writers, each reading its own writes back; every write lands.
/// The group-commit counter is checked against an independent observer:
/// each group is one log record, so the log holds exactly `write_groups`
/// records carrying `user_writes` updates between them (a write buffer
/// large enough that no log is retired keeps them all).
#[test]
fn concurrent_writers_and_readers() {
    let dir = tempfile::tempdir().unwrap();
    let options = Options {
        write_buffer_size: 16 << 20,
        ..small_options()
    };
    let db = Db::open(dir.path(), options).unwrap();
    std::thread::scope(|s| {
        for t in 0..4u32 {
            let db = db.clone();
            s.spawn(move || {
                for i in 0..2000u32 {
                    let k = key(t * 100_000 + i);
                    db.put(&k, &k).unwrap();
                    assert_eq!(db.get(&k).unwrap(), Some(k.clone()));
                }
            });
        }
    });
    assert_eq!(scan(&db, ReadOptions::default()).len(), 8000);
    let stats = db.stats();
    assert_eq!(stats.user_writes, 8000);
    assert_eq!(stats.flushes, 0, "no log was retired");
    let (records, updates) = log_records_and_updates(dir.path());
    assert_eq!(
        (stats.write_groups, stats.user_writes),
        (records, updates),
        "(write groups, writes) counted against (records, updates) in the log"
    );
}

/// Records and the updates they carry, over every log in `dir`.
fn log_records_and_updates(dir: &std::path::Path) -> (u64, u64) {
    use crate::io::{FileSystem, PosixFs};
    use crate::log::{LogReader, RecoveryMode};
    use crate::version::files::{parse_file_name, FileKind};
    let (mut records, mut updates) = (0, 0);
    for name in PosixFs.list(dir).unwrap() {
        let Some(FileKind::Log(_)) = parse_file_name(&name) else {
            continue;
        };
        let path = dir.join(&name);
        let file = PosixFs.open_sequential(&path).unwrap();
        let mut reader = LogReader::new(file, path, RecoveryMode::TolerateTailCorruption);
        while let Some((_, record)) = reader.read_record().unwrap() {
            let batch = super::batch::DecodedBatch::parse(&record).unwrap();
            records += 1;
            updates += batch.ops().unwrap().len() as u64;
        }
    }
    (records, updates)
}

#[test]
fn closed_handle_refuses_work() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), small_options()).unwrap();
    let other = db.clone();
    db.close().unwrap();
    assert!(matches!(other.put(b"a", b"b"), Err(Error::Closed)));
    assert!(matches!(other.get(b"a"), Err(Error::Closed)));
}

#[test]
fn handles_are_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Db>();
    assert_send_sync::<Snapshot>();
    fn assert_send<T: Send>() {}
    assert_send::<DbIterator>();
}

#[test]
fn replayed_log_is_flushed_and_counted() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), small_options()).unwrap();
    db.put(b"k", b"v").unwrap();
    drop(db);
    let db = Db::open(dir.path(), small_options()).unwrap();
    let stats = db.stats();
    assert_eq!(stats.flushes, 1, "{stats:?}");
    assert_eq!(stats.tables, 1);
    assert_eq!(db.get(b"k").unwrap(), Some(b"v".to_vec()));
}

fn files_of_kind(dir: &std::path::Path, ext: &str) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(ext))
        .collect();
    names.sort();
    names
}

#[test]
fn a_flushed_log_is_deleted_once_no_reader_holds_its_memtable() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), small_options()).unwrap();
    db.put(b"a", b"1").unwrap();
    let first_logs = files_of_kind(dir.path(), ".log");
    assert_eq!(first_logs.len(), 1);
    // The iterator holds the memtable whose writes are in the first log.
    let held = db.iter(ReadOptions::default()).unwrap();
    db.flush().unwrap();
    db.put(b"b", b"2").unwrap();
    db.flush().unwrap();
    lsm::obsolete::collect_obsolete_files(db.inner());
    let logs = files_of_kind(dir.path(), ".log");
    assert!(
        logs.contains(&first_logs[0]),
        "a log whose memtable a reader holds must stay: {logs:?}"
    );
    drop(held);
    db.put(b"c", b"3").unwrap();
    db.flush().unwrap();
    lsm::obsolete::collect_obsolete_files(db.inner());
    let logs = files_of_kind(dir.path(), ".log");
    assert_eq!(logs.len(), 1, "only the current log is left: {logs:?}");
    assert!(!logs.contains(&first_logs[0]));
    for (k, v) in [(b"a", b"1"), (b"b", b"2"), (b"c", b"3")] {
        assert_eq!(db.get(k).unwrap(), Some(v.to_vec()));
    }
}

fn segment_names(version: &crate::version::Version) -> Vec<String> {
    let mut names: Vec<String> = version
        .segment_table_counts()
        .keys()
        .map(|n| format!("{n:06}.seg"))
        .collect();
    names.sort();
    names
}

#[test]
fn a_compacted_segment_is_deleted_once_no_reader_holds_its_version() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), small_options()).unwrap();
    // Overlapping runs: compaction must merge them, not move them.
    for value in [b"old!!", b"value"] {
        for i in 0..2000 {
            db.put(key(i), value).unwrap();
        }
        db.flush().unwrap();
    }
    let held = db.inner().default.super_version();
    let held_segments = segment_names(&held.version);
    db.compact_range(None, None).unwrap();
    let during = files_of_kind(dir.path(), ".seg");
    assert!(
        held_segments.iter().all(|s| during.contains(s)),
        "segments a reader's version holds must stay: {held_segments:?} vs {during:?}"
    );
    let live = segment_names(&db.inner().default.super_version().version);
    assert!(
        held_segments.iter().any(|s| !live.contains(s)),
        "the compaction replaced some segment"
    );
    drop(held);
    lsm::obsolete::collect_obsolete_files(db.inner());
    let live = segment_names(&db.inner().default.super_version().version);
    assert_eq!(
        files_of_kind(dir.path(), ".seg"),
        live,
        "exactly the live version's segments are left"
    );
    assert_eq!(db.get(key(1999)).unwrap(), Some(b"value".to_vec()));
}

#[test]
fn tables_written_by_this_process_carry_their_key_sketch() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), small_options()).unwrap();
    for i in 0..3000 {
        db.put(key(i), b"v").unwrap();
    }
    db.flush().unwrap();
    let sv = db.inner().default.super_version();
    let mut estimated = 0.0;
    for t in sv.version.tables() {
        let sketch = t.sketch.get().expect("a flushed table has its sketch");
        estimated += sketch.estimate();
    }
    // Distinct keys per table sum to 3000; in memory a sketch has p = 10 (~3.3% error).
    assert!((estimated - 3000.0).abs() < 300.0, "estimate {estimated}");
}
