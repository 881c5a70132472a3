//! TRIAD through the public API, on the real file system.

use super::*;
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
        db.put(&key(i), b"value").unwrap();
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
    let sv = db.inner().super_version();
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
    assert_eq!(db.get(&key(1500)).unwrap(), Some(b"value".to_vec()));
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
