//! Public API edge cases: locking, size limits, large values, and
//! concurrency between manual and background compaction.

mod common;

use common::*;
use thicketdb::io::fault::FaultFs;
use thicketdb::{Db, Error, ReadOptions, WriteBatch};
use thicketdb::{MAX_KEY_SIZE, MAX_VALUE_SIZE};

#[test]
fn second_open_in_the_same_process_is_locked() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), small_options()).unwrap();
    db.put(b"k", b"v").unwrap();
    for _ in 0..2 {
        let err = Db::open(dir.path(), small_options()).unwrap_err();
        assert!(matches!(err, Error::Locked(_)), "{err:?}");
    }
    // The failed opens did not disturb the store.
    assert_eq!(db.get(b"k").unwrap(), Some(b"v".to_vec()));
    db.put(b"k2", b"v2").unwrap();
    db.close().unwrap();
    let db = Db::open(dir.path(), small_options()).unwrap();
    assert_eq!(db.get(b"k2").unwrap(), Some(b"v2".to_vec()));
    drop(db);
    // Dropping the last handle releases the lock too.
    Db::open(dir.path(), small_options()).unwrap();
}

#[test]
fn second_open_on_faultfs_is_locked() {
    let fs = FaultFs::new();
    let db = open_fault(&fs, small_options()).unwrap();
    let err = open_fault(&fs, small_options()).unwrap_err();
    assert!(matches!(err, Error::Locked(_)), "{err:?}");
    db.close().unwrap();
    open_fault(&fs, small_options()).unwrap();
}

/// `close` "releases the store", even while clones of the handle remain
/// (they get `Error::Closed`).
#[test]
fn close_releases_the_lock_while_clones_remain() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), small_options()).unwrap();
    let clone = db.clone();
    db.put(b"k", b"v").unwrap();
    db.close().unwrap();
    assert!(matches!(clone.put(b"a", b"b"), Err(Error::Closed)));
    let reopened = Db::open(dir.path(), small_options());
    match reopened {
        Ok(db) => assert_eq!(db.get(b"k").unwrap(), Some(b"v".to_vec())),
        Err(e) => panic!("open after close with a clone alive: {e:?}"),
    }
}

fn big_key(fill: u8, last: u8) -> Vec<u8> {
    let mut k = vec![fill; MAX_KEY_SIZE];
    *k.last_mut().unwrap() = last;
    k
}

#[test]
fn keys_at_the_size_limit_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), small_options()).unwrap();
    let mut model = Model::new();
    // Keys sharing a 64 KiB prefix, differing in the last byte, and small
    // keys around them.
    for last in [3u8, 1, 2, 200] {
        let k = big_key(b'm', last);
        let v = vec![last; 10];
        db.put(&k, &v).unwrap();
        model.insert(k, v);
    }
    for k in [&b"a"[..], b"m", b"z"] {
        db.put(k, b"small").unwrap();
        model.insert(k.to_vec(), b"small".to_vec());
    }
    let check = |db: &Db, model: &Model, what: &str| {
        for (k, v) in model {
            assert_eq!(db.get(k).unwrap().as_ref(), Some(v), "{what}");
        }
        assert!(scan_model(db).unwrap() == *model, "{what}: scan");
        let mut it = db.iter(ReadOptions::default()).unwrap();
        it.seek(&big_key(b'm', 2));
        assert_eq!(it.key(), big_key(b'm', 2).as_slice(), "{what}: seek");
        it.prev();
        assert_eq!(it.key(), big_key(b'm', 1).as_slice(), "{what}: prev");
        it.status().unwrap();
        assert_eq!(db.get(big_key(b'm', 0)).unwrap(), None, "{what}");
    };
    check(&db, &model, "memtable");
    db.flush().unwrap();
    check(&db, &model, "after flush");
    db.delete(big_key(b'm', 200)).unwrap();
    model.remove(&big_key(b'm', 200));
    db.compact_range(None, None).unwrap();
    check(&db, &model, "after compaction");
    db.close().unwrap();
    let db = Db::open(dir.path(), small_options()).unwrap();
    check(&db, &model, "after reopen");
    db.close().unwrap();
    thicketdb::check::check_store(dir.path()).unwrap();
}

#[test]
fn over_limit_keys_are_invalid_argument() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), small_options()).unwrap();
    let huge = vec![b'k'; MAX_KEY_SIZE + 1];
    let invalid = |r: thicketdb::Result<()>, what: &str| {
        assert!(matches!(r, Err(Error::InvalidArgument(_))), "{what}: {r:?}");
    };
    invalid(db.put(&huge, b"v"), "put");
    invalid(db.delete(&huge), "delete");
    let mut batch = WriteBatch::new();
    batch.put(b"ok", b"v").unwrap();
    invalid(batch.put(&huge, b"v"), "batch put");
    invalid(batch.delete(&huge), "batch delete");
    // The batch keeps only what was accepted.
    assert_eq!(batch.len(), 1);
    db.write(batch).unwrap();
    // Reads of an over-limit key do not panic, and find nothing.
    match db.get(&huge) {
        Ok(v) => assert_eq!(v, None),
        Err(e) => assert!(matches!(e, Error::InvalidArgument(_)), "{e:?}"),
    }
    let mut it = db.iter(ReadOptions::default()).unwrap();
    it.seek(&huge);
    assert_eq!(it.key(), b"ok", "the next key after the huge one");
    it.prev();
    assert!(!it.valid());
    it.status().unwrap();
    // An over-limit value is refused without allocating it in the store.
    let mut batch = WriteBatch::new();
    let value = vec![0u8; MAX_VALUE_SIZE + 1];
    invalid(batch.put(b"k", &value), "value");
    drop(value);
    // Nothing refused reached the store, which still works.
    assert_eq!(
        scan(&db, ReadOptions::default()).unwrap(),
        vec![(b"ok".to_vec(), b"v".to_vec())]
    );
    db.put(b"k", b"v").unwrap();
    db.close().unwrap();
    let db = Db::open(dir.path(), small_options()).unwrap();
    assert_eq!(db.get(b"k").unwrap(), Some(b"v".to_vec()));
}

#[test]
fn one_mib_value_round_trip() {
    let value: Vec<u8> = (0..1u32 << 20)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    for on_fault_fs in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let fs = FaultFs::new();
        let open = || {
            if on_fault_fs {
                open_fault(&fs, small_options()).unwrap()
            } else {
                Db::open(dir.path(), small_options()).unwrap()
            }
        };
        let db = open();
        db.put(b"a", b"small").unwrap();
        db.put(b"big", &value).unwrap();
        let mut batch = WriteBatch::new();
        batch.put(b"big2", &value[1..]).unwrap();
        batch.put(b"c", b"small").unwrap();
        db.write(batch).unwrap();
        let check = |db: &Db, what: &str| {
            assert!(db.get(b"big").unwrap().unwrap() == value, "{what}");
            assert!(db.get(b"big2").unwrap().unwrap() == value[1..], "{what}");
            let all = scan(db, ReadOptions::default()).unwrap();
            let keys: Vec<&[u8]> = all.iter().map(|(k, _)| k.as_slice()).collect();
            assert_eq!(keys, [&b"a"[..], b"big", b"big2", b"c"], "{what}");
            assert!(all[1].1 == value, "{what}: scanned value");
        };
        check(&db, "memtable");
        // Unflushed: recovered from the log (a record spanning many blocks).
        drop(db);
        let db = open();
        check(&db, "log replay");
        db.flush().unwrap();
        check(&db, "after flush");
        db.compact_range(None, None).unwrap();
        check(&db, "after compaction");
        db.close().unwrap();
        let db = open();
        check(&db, "after reopen");
    }
}

/// `compact_range` while the background thread has just picked an L0
/// compaction over the same runs: besides finishing without error, each
/// manual compaction leaves level 0 empty and every key at its newest
/// value, and the store checks clean at the end.
#[test]
fn manual_compaction_racing_background_compaction() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), small_options()).unwrap();
    for round in 0..200u32 {
        // Two flushes make two L0 runs: the L0 trigger of small_options.
        for half in 0..2u32 {
            for i in 0..20u32 {
                let v = (round * 2 + half).to_le_bytes();
                db.put(format!("k{i:04}").as_bytes(), v)
                    .unwrap_or_else(|e| panic!("round {round}: put: {e}"));
            }
            db.flush()
                .unwrap_or_else(|e| panic!("round {round}: flush: {e}"));
        }
        db.compact_range(None, None)
            .unwrap_or_else(|e| panic!("round {round}: compact_range: {e}"));
        let stats = db.stats();
        if let Some(e) = stats.background_error {
            panic!("round {round}: background error: {e}");
        }
        assert_eq!(
            stats.tables_per_level.first().copied().unwrap_or(0),
            0,
            "round {round}: compact_range left L0 tables: {:?}",
            stats.tables_per_level
        );
        for i in 0..20u32 {
            assert_eq!(
                db.get(format!("k{i:04}")).unwrap(),
                Some((round * 2 + 1).to_le_bytes().to_vec()),
                "round {round}: key {i}"
            );
        }
    }
    db.close().unwrap();
    let report = thicketdb::check::check_store(dir.path()).unwrap();
    assert!(report.tables > 0, "{report:?}");
}

#[test]
fn keys_and_values_are_anything_that_is_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), small_options()).unwrap();
    db.put("str", String::from("string")).unwrap();
    db.put(vec![1u8, 2], [3u8, 4]).unwrap();
    db.put(b"bytes", b"array").unwrap();
    let mut batch = thicketdb::WriteBatch::new();
    batch.put("in-batch", "yes").unwrap();
    batch.delete(String::from("str")).unwrap();
    db.write(batch).unwrap();
    assert_eq!(db.get("str").unwrap(), None);
    assert_eq!(db.get([1u8, 2]).unwrap(), Some(vec![3, 4]));
    assert_eq!(
        db.get(String::from("in-batch")).unwrap(),
        Some(b"yes".to_vec())
    );
    db.delete(b"bytes").unwrap();
    assert_eq!(db.get("bytes").unwrap(), None);
}

#[test]
fn multi_get_reads_every_key_at_one_point() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), small_options()).unwrap();
    db.put("a", "1").unwrap();
    db.put("c", "3").unwrap();
    let got: Vec<Option<Vec<u8>>> = db
        .multi_get(["a", "b", "c"])
        .into_iter()
        .map(Result::unwrap)
        .collect();
    assert_eq!(got, [Some(b"1".to_vec()), None, Some(b"3".to_vec())]);

    // With a snapshot, every key is read there.
    let snapshot = db.snapshot();
    db.put("b", "2").unwrap();
    db.delete("a").unwrap();
    let opts = ReadOptions {
        snapshot: Some(snapshot),
        ..ReadOptions::default()
    };
    let old: Vec<_> = db
        .multi_get_opt(vec!["a", "b"], &opts)
        .into_iter()
        .map(Result::unwrap)
        .collect();
    assert_eq!(old, [Some(b"1".to_vec()), None]);
    let new: Vec<_> = db
        .multi_get(["a", "b"])
        .into_iter()
        .map(Result::unwrap)
        .collect();
    assert_eq!(new, [None, Some(b"2".to_vec())]);
}

#[test]
fn get_with_borrows_values_from_memtables_and_tables_alike() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), small_options()).unwrap();
    db.put("in-table", "flushed value").unwrap();
    db.put("deleted", "gone").unwrap();
    db.flush().unwrap();
    db.delete("deleted").unwrap();
    db.put("in-memtable", "recent").unwrap();
    let snapshot = db.snapshot();
    db.put("in-table", "overwritten").unwrap();

    let as_vec = |v: &[u8]| v.to_vec();
    for key in ["in-table", "deleted", "in-memtable", "absent"] {
        assert_eq!(
            db.get_with(key, as_vec).unwrap(),
            db.get(key).unwrap(),
            "{key}"
        );
    }
    let opts = ReadOptions {
        snapshot: Some(snapshot),
        ..ReadOptions::default()
    };
    assert_eq!(
        db.get_with_opt("in-table", &opts, as_vec).unwrap(),
        Some(b"flushed value".to_vec())
    );
    assert_eq!(db.get_with("deleted", |v| v.len()).unwrap(), None);
}

#[test]
fn a_store_keeps_its_comparator_and_refuses_another() {
    let dir = tempfile::tempdir().unwrap();
    let custom = thicketdb::Options::default().comparator(thicketdb::KeyOrder::custom(
        std::sync::Arc::new(ReverseBytes),
    ));
    let db = Db::open(dir.path(), custom.clone()).unwrap();
    for k in ["a", "c", "b"] {
        db.put(k, k).unwrap();
    }
    db.compact_range(None, None).unwrap();
    let mut it = db.iter(ReadOptions::default()).unwrap();
    it.seek_to_first();
    let mut keys = Vec::new();
    while it.valid() {
        keys.push(it.key().to_vec());
        it.next();
    }
    assert_eq!(keys, [b"c".to_vec(), b"b".to_vec(), b"a".to_vec()]);
    assert!(db.prefix("a").is_err(), "prefixes need byte order");
    db.close().unwrap();

    let err = Db::open(dir.path(), thicketdb::Options::default())
        .err()
        .unwrap();
    assert!(
        err.to_string().contains("thicketdb.test.ReverseBytes"),
        "{err}"
    );
    let err = thicketdb::check::check_store(dir.path()).unwrap_err();
    assert!(
        err.to_string().contains("thicketdb.test.ReverseBytes"),
        "{err}"
    );
    let db = Db::open(dir.path(), custom).unwrap();
    assert_eq!(db.get("b").unwrap(), Some(b"b".to_vec()));
}

/// `use_direct_reads` reads table blocks with `O_DIRECT`: values come back
/// the same (from blocks the block cache is too small to keep); a file
/// system without `O_DIRECT` is a clear error, never wrong data.
#[test]
fn direct_reads_return_what_buffered_reads_do() {
    let dir = direct_io_dir();
    let options = small_options()
        .use_direct_reads(true)
        .block_cache_size(16 << 10);
    let db = Db::open(dir.path(), options).unwrap();
    let value = |i: u32| format!("value-{i}-").repeat(1 + (i % 40) as usize);
    for i in 0..3000u32 {
        db.put(format!("key{i:06}"), value(i)).unwrap();
    }
    db.compact_range(None, None).unwrap();
    for i in (0..3000u32).step_by(7) {
        match db.get(format!("key{i:06}")) {
            Ok(got) => assert_eq!(got, Some(value(i).into_bytes()), "key{i:06}"),
            Err(Error::InvalidArgument(msg)) => {
                assert!(msg.contains("O_DIRECT"), "{msg}");
                skipped("direct_reads_return_what_buffered_reads_do", &msg);
                return;
            }
            Err(e) => panic!("{e}"),
        }
    }
    assert!(
        db.stats().block_cache_misses > 0,
        "blocks were read from files"
    );
}

/// `use_direct_io_for_flush_and_compaction` writes the tables of flushes
/// and compactions with `O_DIRECT` (padded, then cut back to size):
/// every value reads back, through flushes, a full compaction and a
/// reopen, and `thicket check`'s verification finds every table whole. A
/// file system without `O_DIRECT` is a clear error at the first flush.
#[test]
fn direct_flush_and_compaction_writes_keep_every_value() {
    let dir = direct_io_dir();
    let options = small_options().use_direct_io_for_flush_and_compaction(true);
    let value = |i: u32| format!("value-{i}-").repeat(1 + (i % 40) as usize);
    let db = Db::open(dir.path(), options.clone()).unwrap();
    // Keys in a scattered order, so flushed tables overlap and merge.
    for i in (0..3000u32).map(|i| i * 1237 % 3000) {
        db.put(format!("key{i:06}"), value(i)).unwrap();
    }
    match db.compact_range(None, None) {
        Ok(()) => {}
        Err(Error::InvalidArgument(msg)) => {
            assert!(msg.contains("O_DIRECT"), "{msg}");
            skipped("direct_flush_and_compaction_writes_keep_every_value", &msg);
            return;
        }
        Err(e) => panic!("{e}"),
    }
    let stats = db.stats();
    assert!(
        stats.flushes > 0 && stats.compactions_merge > 0,
        "{stats:?}"
    );
    db.close().unwrap();
    let report = thicketdb::check::check_store(dir.path()).unwrap();
    assert!(report.tables > 0, "{report:?}");
    let db = Db::open(dir.path(), options).unwrap();
    for i in 0..3000u32 {
        assert_eq!(
            db.get(format!("key{i:06}")).unwrap(),
            Some(value(i).into_bytes()),
            "key{i:06}"
        );
    }
}
