//! The engine's own write and sync counters, which the papers' claims
//! (write amplification, fsyncs per flush) are computed from, checked
//! against an independent observer: `FaultFs` counts every byte appended
//! and every sync the store asks of its file system. Every LSM profile:
//! each writes its flushes and compactions its own way (BoLT's compaction
//! files, SifrDB's forest, LSbM's buffer, TRIAD's log tables).

mod common;

use common::*;
use thicketdb::io::fault::{FaultFs, FaultStats};
use thicketdb::{Db, Layout, Options, Profile, Stats};

/// What one step wrote and synced, by the engine's counters and by the
/// file system's.
#[derive(Debug, PartialEq)]
struct Observed {
    bytes: u64,
    syncs: u64,
}

fn by_engine(before: &Stats, after: &Stats) -> Observed {
    Observed {
        bytes: after.engine_bytes_written - before.engine_bytes_written,
        syncs: after.fsyncs - before.fsyncs,
    }
}

fn by_fs(before: &FaultStats, after: &FaultStats) -> Observed {
    Observed {
        bytes: after.bytes_appended - before.bytes_appended,
        // The engine counts a directory sync as an fsync.
        syncs: (after.syncs + after.dir_syncs) - (before.syncs + before.dir_syncs),
    }
}

/// A step wrote and synced something, and both observers saw the same.
fn assert_agree(engine: Observed, files: Observed, step: &str) {
    assert!(engine.bytes > 0 && engine.syncs > 0, "{step}: {engine:?}");
    assert_eq!(engine, files, "{step}: engine against FaultFs");
}

/// Runs `step` and returns what each observer saw it write and sync.
fn observe(db: &Db, fs: &FaultFs, step: impl FnOnce(&Db)) -> (Observed, Observed) {
    let (engine, files) = (db.stats(), fs.stats());
    step(db);
    (by_engine(&engine, &db.stats()), by_fs(&files, &fs.stats()))
}

/// `profile` with small tables, and no flush but the ones asked for: a
/// background one would race the observation.
fn options(profile: Profile) -> Options {
    profile
        .options()
        .write_buffer_size(4 << 20)
        .target_table_size(16 << 10)
        .block_size(1024)
        .disable_auto_compactions(true)
}

#[test]
fn flush_and_compaction_counters_match_the_file_system_s_on_every_lsm_profile() {
    let lsm = Profile::ALL
        .iter()
        .copied()
        .filter(|p| p.options().layout == Layout::Lsm);
    for profile in lsm {
        let fs = FaultFs::new();
        let db = open_fault(&fs, options(profile)).unwrap();
        for round in 0..3u32 {
            for i in 0..1500u32 {
                db.put(format!("key{i:05}"), format!("value-{round}-{i}"))
                    .unwrap();
            }
            let (engine, files) = observe(&db, &fs, |db| db.flush().unwrap());
            assert_agree(engine, files, &format!("{profile}: flush {round}"));
        }
        let (engine, files) = observe(&db, &fs, |db| db.compact_range(None, None).unwrap());
        assert!(db.stats().compactions_merge > 0, "{profile}");
        assert_agree(engine, files, &format!("{profile}: compaction"));
        db.close().unwrap();
    }
}
