//! Space amplification (`Db::space_usage`): allocated bytes of the store's
//! files over the key and value bytes of the live keys.

use thicketdb::{Db, Options};

fn key(i: u64) -> Vec<u8> {
    format!("key{i:013}").into_bytes()
}

/// The default table and block sizes (tiny tables would be mostly index,
/// filter and sketch), a small memtable, and no background compaction:
/// only `compact_range` removes overwritten versions.
fn no_background_compaction() -> Options {
    Options::default()
        .write_buffer_size(1 << 20)
        .l0_compaction_trigger(1000)
        .l0_slowdown_writes_trigger(1000)
        .l0_stop_writes_trigger(1000)
}

#[test]
fn overwritten_data_counts_until_a_full_compaction_drops_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), no_background_compaction()).unwrap();
    let n = 20_000u64;
    for value in [b'a', b'b'] {
        for i in 0..n {
            db.put(key(i), [value; 100]).unwrap();
        }
        db.flush().unwrap();
    }
    let before = db.space_usage().unwrap();
    assert_eq!(before.live_keys, n);
    assert_eq!(before.logical_bytes, n * (16 + 100));
    // Two versions of every key on disk, plus tables' indexes and filters.
    assert!(before.space_amplification > 1.8, "{before:?}");

    db.compact_range(None, None).unwrap();
    let after = db.space_usage().unwrap();
    assert_eq!(after.logical_bytes, before.logical_bytes);
    assert!(after.disk_bytes < before.disk_bytes, "{before:?} {after:?}");
    // One version of each key: what remains is per-entry and per-table
    // overhead (internal keys, indexes, filters, sketches) and metadata.
    assert!((1.0..1.3).contains(&after.space_amplification), "{after:?}");
    assert_eq!(
        after.space_amplification,
        after.disk_bytes as f64 / after.logical_bytes as f64
    );
}

#[test]
fn deleted_keys_leave_the_logical_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), no_background_compaction()).unwrap();
    let empty = db.space_usage().unwrap();
    assert_eq!((empty.live_keys, empty.logical_bytes), (0, 0));
    assert_eq!(empty.space_amplification, 0.0, "no data: no ratio");
    for i in 0..100 {
        db.put(key(i), b"value").unwrap();
    }
    for i in 0..40 {
        db.delete(key(i)).unwrap();
    }
    let usage = db.space_usage().unwrap();
    assert_eq!(usage.live_keys, 60);
    assert_eq!(usage.logical_bytes, 60 * (16 + 5));
    assert!(usage.disk_bytes > 0, "{usage:?}");
}

/// SifrDB's journaled merges drop deletions (and the versions they hide)
/// when nothing older lies below: deleting most keys and compacting gives
/// the space back, under the tiered forest as under the leveled tree.
#[test]
fn deleting_most_keys_then_compacting_gives_the_space_back_under_sifr() {
    use thicketdb::Profile;
    let options = Profile::Sifr
        .options()
        .write_buffer_size(1 << 20)
        .l0_compaction_trigger(1000)
        .l0_slowdown_writes_trigger(1000)
        .l0_stop_writes_trigger(1000)
        .runs_per_level(1000)
        // Small tables so that the merge of the deletions checkpoints.
        .target_table_size(64 << 10)
        .early_cleaning_threshold(2);
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options).unwrap();
    let n = 40_000u64;
    for i in (0..n).map(|i| (i * 7919) % n) {
        db.put(key(i), [b'v'; 100]).unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    let loaded = db.stats();
    for i in (0..n).filter(|i| i % 10 != 0) {
        db.delete(key(i)).unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    let s = db.stats();
    assert!(
        s.merge_checkpoints > loaded.merge_checkpoints,
        "the merge of the deletions was journaled: {s:?}"
    );
    let usage = db.space_usage().unwrap();
    assert_eq!(usage.live_keys, n / 10);
    assert!(usage.space_amplification < 1.5, "{usage:?} {s:?}");
    for i in 0..n {
        let expected = (i % 10 == 0).then(|| vec![b'v'; 100]);
        assert_eq!(db.get(key(i)).unwrap(), expected, "key {i}");
    }
}
