//! Damaged files: tables, logs, the MANIFEST and small metadata files.
//! Damage is reported as `Error::Corruption` naming the file; reads never
//! return wrong data.

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use common::*;
use thicketdb::check::{check_store, check_store_with_fs};
use thicketdb::io::fault::FaultFs;
use thicketdb::io::FileSystem;
use thicketdb::log::RecoveryMode;
use thicketdb::{Db, Error, Options, ReadOptions};

fn key(i: u32) -> Vec<u8> {
    format!("key{i:05}").into_bytes()
}

fn value(i: u32) -> Vec<u8> {
    let mut v = format!("value-{i}-").into_bytes();
    v.resize(100, b'a' + (i % 26) as u8);
    v
}

fn name_of(path: &Path) -> String {
    path.file_name().unwrap().to_string_lossy().into_owned()
}

/// Only manual compactions, and a memtable that holds all `TABLE_KEYS`
/// keys, so one flush writes every table into one segment (compaction then
/// moves those tables down without rewriting them).
fn options() -> Options {
    small_options()
        .write_buffer_size(1 << 20)
        .l0_compaction_trigger(1000)
        .l0_slowdown_writes_trigger(1000)
        .l0_stop_writes_trigger(1000)
}

const TABLE_KEYS: u32 = 500;

/// Writes `TABLE_KEYS` keys, compacts them into one segment and closes.
fn write_compacted(db: Db) -> Model {
    let mut model = Model::new();
    for i in 0..TABLE_KEYS {
        db.put(key(i), value(i)).unwrap();
        model.insert(key(i), value(i));
    }
    db.compact_range(None, None).unwrap();
    let stats = db.stats();
    assert!(stats.tables > 2, "{stats:?}");
    assert_eq!(stats.segments, 1, "{stats:?}");
    db.close().unwrap();
    model
}

fn check_err(result: thicketdb::Result<thicketdb::check::CheckReport>) -> Error {
    match result {
        Ok(report) => panic!("check_store found nothing: {report:?}"),
        Err(e) => e,
    }
}

fn is_corruption_in(e: &Error, file: &str) -> bool {
    matches!(e, Error::Corruption { file: f, .. } if f.contains(file))
}

/// Every read of a store with one damaged table block: gets and scans return
/// correct data or `Corruption` naming the segment, and `damaged` (a key in
/// the block) fails.
fn assert_damage_contained(db: &Db, model: &Model, seg: &str, damaged: &[u8]) {
    let err = db.get(damaged).unwrap_err();
    assert_corruption_in(&err, seg);
    let mut failures = 0;
    for (k, v) in model {
        match db.get(k) {
            Ok(got) => assert_eq!(got.as_ref(), Some(v), "get {}", show(k)),
            Err(e) => {
                assert_corruption_in(&e, seg);
                failures += 1;
            }
        }
    }
    assert!(failures < model.len() / 2, "{failures} keys unreadable");
    let want = model_vec(model);

    let mut it = db.iter(ReadOptions::default()).unwrap();
    it.seek_to_first();
    let (got, status) = drain(&mut it, true);
    assert_corruption_in(&status.unwrap_err(), seg);
    assert!(got.len() < want.len() && got == want[..got.len()]);

    it.seek_to_last();
    let (mut got, status) = drain(&mut it, false);
    assert_corruption_in(&status.unwrap_err(), seg);
    got.reverse();
    assert!(got.len() < want.len() && got == want[want.len() - got.len()..]);
}

#[test]
fn damaged_table_block_is_corruption_never_wrong_data() {
    let fs = FaultFs::new();
    let model = write_compacted(open_fault(&fs, options()).unwrap());
    let segs = fault_files(&fs, ".seg");
    assert_eq!(segs.len(), 1, "{segs:?}");
    let seg = name_of(&segs[0]);
    check_store_with_fs(&fault_dir(), Arc::new(fs.clone())).unwrap();

    // The first table starts right after the 16-byte segment header, with
    // its first data block, which holds the smallest keys.
    fs.corrupt_byte(&segs[0], 16 + 20).unwrap();
    let err = check_err(check_store_with_fs(&fault_dir(), Arc::new(fs.clone())));
    assert_corruption_in(&err, &seg);

    let db = open_fault(&fs, options()).unwrap();
    assert_damage_contained(&db, &model, &seg, &key(0));
    // Reads that do not touch the damaged block still work.
    let opts = ReadOptions {
        lower_bound: Some(key(TABLE_KEYS / 2)),
        ..ReadOptions::default()
    };
    let want: Vec<_> = model_vec(&model)
        .into_iter()
        .filter(|(k, _)| *k >= key(TABLE_KEYS / 2))
        .collect();
    assert_eq!(scan(&db, opts).unwrap(), want);
    assert_eq!(
        db.get(key(TABLE_KEYS - 1)).unwrap(),
        Some(value(TABLE_KEYS - 1))
    );
}

#[test]
fn damaged_table_footer_is_corruption() {
    let fs = FaultFs::new();
    let model = write_compacted(open_fault(&fs, options()).unwrap());
    let segs = fault_files(&fs, ".seg");
    assert_eq!(segs.len(), 1, "{segs:?}");
    let seg = name_of(&segs[0]);
    // The last table's footer ends the segment; its last byte is in the CRC.
    let len = fs.file_size(&segs[0]).unwrap();
    fs.corrupt_byte(&segs[0], len - 1).unwrap();
    let err = check_err(check_store_with_fs(&fault_dir(), Arc::new(fs.clone())));
    assert_corruption_in(&err, &seg);
    let db = open_fault(&fs, options()).unwrap();
    assert_damage_contained(&db, &model, &seg, &key(TABLE_KEYS - 1));
}

#[test]
fn damaged_table_block_on_posix() {
    let dir = tempfile::tempdir().unwrap();
    let model = write_compacted(Db::open(dir.path(), options()).unwrap());
    let segs = posix_files(dir.path(), ".seg");
    assert_eq!(segs.len(), 1, "{segs:?}");
    let seg = name_of(&segs[0]);
    let mut bytes = std::fs::read(&segs[0]).unwrap();
    bytes[16 + 20] ^= 0xff;
    std::fs::write(&segs[0], bytes).unwrap();
    assert_corruption_in(&check_err(check_store(dir.path())), &seg);
    let db = Db::open(dir.path(), options()).unwrap();
    assert_damage_contained(&db, &model, &seg, &key(0));
}

// ---------------------------------------------------------------------------
// Logs
// ---------------------------------------------------------------------------

const LOG_RECORDS: u32 = 20;

/// A closed store whose only log holds `LOG_RECORDS` records, one put each.
fn store_with_log() -> (FaultFs, PathBuf, Vec<(u64, usize)>) {
    let fs = FaultFs::new();
    let db = open_fault(&fs, options()).unwrap();
    for i in 0..LOG_RECORDS {
        db.put(key(i), value(i)).unwrap();
    }
    db.close().unwrap();
    let logs = fault_files(&fs, ".log");
    assert_eq!(logs.len(), 1, "{logs:?}");
    let records = log_records(&fs, &logs[0]);
    assert_eq!(records.len(), LOG_RECORDS as usize);
    (fs, logs[0].clone(), records)
}

fn open_mode(fs: &FaultFs, mode: RecoveryMode) -> thicketdb::Result<Db> {
    open_fault(fs, options().wal_recovery_mode(mode))
}

/// The store holds exactly the records `0..LOG_RECORDS` except `missing`.
fn assert_records(db: &Db, missing: &[u32], what: &str) {
    let want: Model = (0..LOG_RECORDS)
        .filter(|i| !missing.contains(i))
        .map(|i| (key(i), value(i)))
        .collect();
    let got = scan_model(db).unwrap();
    assert!(got == want, "{what}: {}", diff(&got, &want));
}

#[test]
fn mid_log_corruption_fails_strict_open_and_is_skipped_in_skip_mode() {
    // Damage the checksum, the length (low and high byte), the type and the
    // payload of a record in the middle.
    for delta in [0u64, 4, 5, 6, 7 + 5] {
        let what = format!("byte {delta} of record 10");
        let (fs, log, records) = store_with_log();
        let log_name = name_of(&log);
        let (offset, _) = records[10];
        fs.corrupt_byte(&log, offset + delta).unwrap();

        for _ in 0..2 {
            // Strict (the default); a failed open destroys nothing.
            let err = open_fault(&fs, options()).unwrap_err();
            match &err {
                Error::Corruption {
                    file, offset: at, ..
                } => {
                    assert!(file.contains(&log_name), "{what}: {err}");
                    assert_eq!(*at, offset, "{what}: {err}");
                }
                other => panic!("{what}: expected corruption, got {other:?}"),
            }
        }
        let err = check_err(check_store_with_fs(&fault_dir(), Arc::new(fs.clone())));
        assert!(is_corruption_in(&err, &log_name), "{what}: {err}");

        let db = open_mode(&fs, RecoveryMode::SkipAnyCorruption)
            .unwrap_or_else(|e| panic!("{what}: skip mode: {e}"));
        assert_records(&db, &[10], &what);
        db.close().unwrap();
        // Recovery rewrote what it kept; the damaged log is gone.
        let db = open_fault(&fs, options()).unwrap();
        assert_records(&db, &[10], &what);
        db.close().unwrap();
        check_store_with_fs(&fault_dir(), Arc::new(fs.clone())).unwrap();
    }
}

#[test]
fn torn_log_tail_is_dropped_silently() {
    let last = LOG_RECORDS - 1;
    // Cut in the header, in the payload, or damage the last record.
    for (delta, cut) in [(3u64, true), (7 + 5, true), (7, true), (7 + 5, false)] {
        let what = format!(
            "{} at byte {delta} of the last record",
            if cut { "cut" } else { "damage" }
        );
        let (fs, log, records) = store_with_log();
        let (offset, _) = records[last as usize];
        if cut {
            fs.truncate(&log, offset + delta).unwrap();
        } else {
            fs.corrupt_byte(&log, offset + delta).unwrap();
        }
        check_store_with_fs(&fault_dir(), Arc::new(fs.clone()))
            .unwrap_or_else(|e| panic!("{what}: check_store: {e}"));
        let db = open_fault(&fs, options()).unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_records(&db, &[last], &what);
        db.put(b"more", b"writes").unwrap();
        db.close().unwrap();
        let db = open_fault(&fs, options()).unwrap();
        assert_eq!(db.get(b"more").unwrap(), Some(b"writes".to_vec()));
    }
}

// ---------------------------------------------------------------------------
// MANIFEST, OPTIONS, CURRENT
// ---------------------------------------------------------------------------

/// A closed store with tables, so the MANIFEST matters.
fn store_with_tables() -> FaultFs {
    let fs = FaultFs::new();
    let db = open_fault(&fs, options()).unwrap();
    for i in 0..TABLE_KEYS {
        db.put(key(i), value(i)).unwrap();
    }
    db.flush().unwrap();
    db.put(b"after", b"flush").unwrap();
    db.flush().unwrap();
    db.close().unwrap();
    fs
}

#[test]
fn damaged_manifest_is_corruption() {
    // The checksum, and the payload (near its start and its last byte),
    // of the first record (the snapshot of the whole version; its length
    // depends on which counters are non-zero).
    for pick in 0..3 {
        let fs = store_with_tables();
        let manifests = fault_files(&fs, "MANIFEST-");
        assert_eq!(manifests.len(), 1, "{manifests:?}");
        let records = log_records(&fs, &manifests[0]);
        assert!(records.len() >= 2, "{records:?}");
        let payload = records[0].1 as u64;
        assert!(payload > 3, "{records:?}");
        let first_record_byte = [0u64, 7 + 3, 7 + payload - 1][pick];
        let name = name_of(&manifests[0]);
        fs.corrupt_byte(&manifests[0], first_record_byte).unwrap();
        for _ in 0..2 {
            let err = open_fault(&fs, options()).unwrap_err();
            assert!(
                is_corruption_in(&err, &name),
                "byte {first_record_byte}: {err:?}"
            );
        }
        let err = check_err(check_store_with_fs(&fault_dir(), Arc::new(fs.clone())));
        assert!(
            is_corruption_in(&err, &name),
            "byte {first_record_byte}: {err:?}"
        );
    }
}

#[test]
fn damaged_options_and_current_are_corruption() {
    for file in ["OPTIONS", "CURRENT"] {
        let fs = store_with_tables();
        let path = fault_dir().join(file);
        fs.corrupt_byte(&path, 2).unwrap();
        let err = open_fault(&fs, options()).unwrap_err();
        assert!(is_corruption_in(&err, file), "{file}: {err:?}");
        let err = check_err(check_store_with_fs(&fault_dir(), Arc::new(fs.clone())));
        assert!(is_corruption_in(&err, file), "{file}: {err:?}");
    }
}

/// A reverse scan whose seek to its upper bound hits a damaged block
/// reports the damage; it never falls back to the store's last key, which
/// lies above the bound.
#[test]
fn a_failed_seek_to_the_upper_bound_is_an_error_not_the_last_key() {
    let fs = FaultFs::new();
    write_compacted(open_fault(&fs, options()).unwrap());
    let segs = fault_files(&fs, ".seg");
    // The first data block holds key 0 and key 1 (the bound's block).
    fs.corrupt_byte(&segs[0], 16 + 20).unwrap();
    let db = open_fault(&fs, options()).unwrap();
    let opts = ReadOptions {
        upper_bound: Some(key(1)),
        ..ReadOptions::default()
    };
    let mut iter = db.iter(opts).unwrap();
    iter.seek_to_last();
    assert!(
        !iter.valid(),
        "positioned on {:?}",
        String::from_utf8_lossy(iter.key())
    );
    assert!(iter.status().is_err());
}
