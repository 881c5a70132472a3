//! TRIAD through the public API, on the real file system.

use super::SuperVersion;
use crate::db::*;
use crate::options::Options;

fn key(i: u32) -> Vec<u8> {
    format!("key{i:08}").into_bytes()
}

fn disk_options() -> Options {
    Options {
        write_buffer_size: 4 << 20,
        target_table_size: 1 << 20,
        block_size: 1024,
        l0_compaction_trigger: 2,
        triad_disk: true,
        ..Options::default()
    }
}

/// Writes keys `range` and flushes them as one L0 run.
fn flush_keys(db: &Db, range: std::ops::Range<u32>) {
    for i in range {
        db.put(key(i), b"value").unwrap();
    }
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
}

#[test]
fn triad_disk_defers_disjoint_flushes_and_compacts_repeated_keys_after_reopen() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Db::open(dir.path(), disk_options()).unwrap();
        flush_keys(&db, 0..1000);
        flush_keys(&db, 1000..2000);
        let s = db.stats();
        assert_eq!(s.runs_per_level[0], 2, "disjoint flushes stay in L0");
        assert_eq!(s.l0_compactions_deferred, 1);
        assert!(s.l0_overlap_ratio < 0.1, "{}", s.l0_overlap_ratio);
        db.close().unwrap();
    }
    let db = Db::open(dir.path(), disk_options()).unwrap();
    let sv = db.inner().default.super_version();
    assert!(
        sv.version.levels[0]
            .runs
            .iter()
            .flat_map(|r| &r.tables)
            .all(|t| t.sketch.get().is_some()),
        "L0 sketches are loaded with the metadata at open"
    );
    drop(sv);
    // Two more flushes of keys L0 already holds: 2000 unique of 4000.
    flush_keys(&db, 0..1000);
    assert_eq!(
        db.stats().runs_per_level[0],
        3,
        "1/3 overlap: still deferred"
    );
    flush_keys(&db, 1000..2000);
    let s = db.stats();
    assert_eq!(s.runs_per_level[0], 0, "half the keys repeat: compacted");
    assert!(s.l0_overlap_ratio >= 0.4, "{}", s.l0_overlap_ratio);
    assert_eq!(db.get(key(1500)).unwrap(), Some(b"value".to_vec()));
}

#[test]
fn triad_disk_keeps_writes_below_the_slowdown_trigger() {
    let mut o = disk_options();
    o.l0_slowdown_writes_trigger = o.triad_max_l0_files;
    assert!(o.validate().is_err(), "a deferral alone would slow writes");
    o.l0_slowdown_writes_trigger = o.triad_max_l0_files + 1;
    o.validate().unwrap();
    o.triad_overlap_threshold = 1.5;
    assert!(o.validate().is_err());
}

/// Readers search the active memtable before the immutable ones: a hot key
/// of the oldest immutable memtable that a newer immutable memtable also
/// holds must not be carried into the active one, where its older version
/// would shadow the newer (found by `thicket crashtest --profile triad`).
#[test]
fn relog_never_carries_a_key_a_newer_immutable_memtable_holds() {
    use crate::format::internal_key::{InternalKey, ValueKind};
    use crate::log::RelogEntry;
    use crate::memtable::{Lookup, Memtable};

    let dir = tempfile::tempdir().unwrap();
    let options = Options {
        triad_mem: true,
        ..Options::default()
    };
    // No background threads: nothing flushes the memtables built here.
    let inner =
        Arc::new(super::open::open(dir.path(), options, Arc::new(crate::io::PosixFs)).unwrap());
    let older = Arc::new(Memtable::new(901, crate::format::KeyOrder::Bytewise));
    older.add(1, ValueKind::Value, b"shadowed", b"old");
    older.add(2, ValueKind::Value, b"alone", b"carried");
    let newer = Arc::new(Memtable::new(902, crate::format::KeyOrder::Bytewise));
    newer.add(3, ValueKind::Value, b"shadowed", b"new");
    {
        let mut current = inner.default.super_version.write();
        let next = SuperVersion {
            mem: current.mem.clone(),
            imms: vec![newer.clone(), older.clone()],
            version: current.version.clone(),
            pending_compaction_bytes: current.pending_compaction_bytes,
        };
        *current = Arc::new(next);
    }
    let entry = |seq, key: &[u8], value: &[u8]| RelogEntry {
        seq,
        kind: ValueKind::Value,
        key: key.to_vec(),
        value: value.to_vec(),
    };
    let carried = super::relog::relog(
        &inner,
        &inner.default,
        &older,
        vec![
            entry(1, b"shadowed", b"old"),
            entry(2, b"alone", b"carried"),
        ],
    )
    .unwrap();
    assert_eq!(carried, vec![entry(2, b"alone", b"carried")]);
    let mem = inner.default.super_version().mem.clone();
    let lookup = |key: &[u8]| mem.get(InternalKey::new(key, 10, ValueKind::SEEK).encoded());
    assert_eq!(
        lookup(b"shadowed"),
        None,
        "the newer memtable's version stays visible"
    );
    assert_eq!(lookup(b"alone"), Some(Lookup::Value(b"carried".to_vec())));
}

fn in_place_options() -> Options {
    Options {
        write_buffer_size: 256 << 10,
        triad_in_place: true,
        ..Options::default()
    }
}

/// TRIAD's C_m updates a key's newest value in place, but a version a
/// snapshot or an open iterator reads stays: each reads what it read
/// before, and the store reads the newest, also after a flush and reopen.
#[test]
fn in_place_updates_keep_what_snapshots_and_iterators_read() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), in_place_options()).unwrap();
    let get = |db: &Db| db.get(b"k").unwrap().unwrap();
    db.put(b"k", b"value-1").unwrap();
    db.put(b"k", b"value-2").unwrap();
    assert_eq!(
        (db.stats().in_place_updates, get(&db)),
        (1, b"value-2".to_vec())
    );
    let snapshot = db.snapshot();
    db.put(b"k", b"value-3").unwrap();
    let at_snapshot = ReadOptions {
        snapshot: Some(snapshot),
        ..ReadOptions::default()
    };
    assert_eq!(db.get_opt(b"k", &at_snapshot).unwrap().unwrap(), b"value-2");
    assert_eq!(get(&db), b"value-3");
    let s = db.stats();
    assert_eq!((s.in_place_updates, s.in_place_versions_kept), (1, 1));
    drop(at_snapshot);
    db.put(b"k", b"value-4").unwrap();
    assert_eq!(db.stats().in_place_updates, 2, "no pin left");
    let mut it = db.iter(ReadOptions::default()).unwrap();
    db.put(b"k", b"value-5").unwrap();
    db.put(b"j", b"other").unwrap();
    it.seek_to_first();
    assert!(it.valid());
    assert_eq!((it.key(), it.value()), (&b"k"[..], &b"value-4"[..]));
    it.next();
    assert!(!it.valid(), "the iterator's snapshot");
    drop(it);
    let s = db.stats();
    assert_eq!((s.in_place_updates, s.in_place_versions_kept), (2, 2));
    assert_eq!(get(&db), b"value-5");
    db.flush().unwrap();
    assert_eq!(get(&db), b"value-5");
    db.put(b"k", b"value-6").unwrap();
    db.put(b"k", b"value-7").unwrap();
    drop(db);
    let db = Db::open(dir.path(), in_place_options()).unwrap();
    assert_eq!(get(&db), b"value-7");
    assert_eq!(db.get(b"j").unwrap().as_deref(), Some(&b"other"[..]));
}

/// With in-place updates the memtable holds distinct keys and the log every
/// write: `triad_log_limit` makes a full log rewrite itself while the
/// newest values are under FLUSH_TH, and flush the memtable once they are
/// not, before the memtable is full.
#[test]
fn the_log_limit_rewrites_or_flushes_before_the_memtable_is_full() {
    let dir = tempfile::tempdir().unwrap();
    let options = Options {
        write_buffer_size: 512 << 10,
        triad_flush_threshold: 0.5,
        triad_log_limit: 2.0,
        ..in_place_options()
    };
    let db = Db::open(dir.path(), options.clone()).unwrap();
    let value = |i: u32| vec![b'a' + (i % 26) as u8; 300];
    for i in 0..20_000 {
        db.put(key(i % 20), value(i)).unwrap();
    }
    let s = db.stats();
    assert!(s.in_place_updates > 19_000, "{s:?}");
    assert!(
        s.log_limit_rewrites >= 4 && s.log_rewrites == s.log_limit_rewrites,
        "{s:?}"
    );
    assert_eq!((s.flushes, s.log_limit_switches), (0, 0), "{s:?}");
    // 1,000 keys of 300 bytes: above FLUSH_TH (256 KiB), within the
    // memtable (512 KiB), rewritten four times over the log limit.
    for i in 0..4_000 {
        db.put(key(1000 + i % 1000), value(i)).unwrap();
    }
    let s = db.stats();
    assert!(s.log_limit_switches >= 1, "{s:?}");
    db.flush().unwrap();
    for i in 0..20 {
        assert_eq!(db.get(key(i)).unwrap(), Some(value(19_980 + i)));
    }
    for i in 3000..4000 {
        assert_eq!(db.get(key(1000 + i % 1000)).unwrap(), Some(value(i)));
    }
    drop(db);
    let db = Db::open(dir.path(), options).unwrap();
    assert_eq!(db.get(key(7)).unwrap(), Some(value(19_987)));
}

/// K (hot keys a flush keeps) is a fraction of what a full memtable holds,
/// as Algorithm 2's `hotKeyCount`: a memtable updated in place flushed
/// a tenth full still keeps a tenth of a full one's hot keys' share.
#[test]
fn hot_key_count_is_a_share_of_a_full_memtable() {
    let options = Options {
        write_buffer_size: 1 << 20,
        triad_hot_fraction: 0.01,
        ..Options::default()
    };
    let mem = crate::memtable::Memtable::new(1, crate::format::KeyOrder::Bytewise);
    for i in 0..300 {
        mem.add(
            u64::from(i) + 1,
            crate::format::internal_key::ValueKind::Value,
            &key(i),
            &[b'v'; 250],
        );
    }
    let fill = mem.approximate_size() as f64 / (1 << 20) as f64;
    let expected = (0.01 * 300.0 / fill) as usize;
    assert!(expected >= 7, "{expected}");
    assert_eq!(super::flush::hot_key_count(&options, &mem), expected);
    let full = Options {
        write_buffer_size: 64 << 10,
        ..options
    };
    assert_eq!(
        super::flush::hot_key_count(&full, &mem),
        3,
        "a full memtable: its own entries"
    );
}

/// A memtable switch leaves the old log unsynced, also with TRIAD, whose
/// switch used to sync it while every writer waited (`flush_sync.rs`): the
/// flush thread syncs it, with the log released, before its log tables
/// address it and before the re-logged hot keys are synced.
#[test]
fn a_switch_leaves_the_log_sync_to_the_flush() {
    let dir = tempfile::tempdir().unwrap();
    let options = Options {
        write_buffer_size: 256 << 10,
        ..crate::options::Profile::Triad.options()
    };
    let db = Db::open(dir.path(), options).unwrap();
    for i in 0..1000 {
        db.put(key(i), b"value").unwrap();
    }
    let inner = db.inner();
    let syncs = db.stats().fsyncs_log;
    let old = inner.log.lock().number;
    {
        let _front = inner.write.lock();
        super::write::switch_memtable(inner).unwrap();
    }
    assert_eq!(db.stats().fsyncs_log, syncs, "no sync on the writers' path");
    assert!(
        inner.log.lock().unsynced.iter().any(|(n, _)| *n == old),
        "the switched-out log waits for its flush"
    );
    db.flush().unwrap();
    assert!(db.stats().fsyncs_log > syncs, "the flush synced the log");
    assert!(db.stats().log_table_bytes > 0, "the flush wrote log tables");
    assert!(
        inner.log.lock().unsynced.is_empty(),
        "no switched-out log is left unsynced after the flush"
    );
    for i in 0..1000 {
        assert_eq!(db.get(key(i)).unwrap().as_deref(), Some(&b"value"[..]));
    }
}
