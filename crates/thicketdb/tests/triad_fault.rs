//! TRIAD's flushes under crashes: a fault at every fallible file-system
//! operation of a hot/cold flush (TRIAD-MEM, writing log tables with the
//! `triad` profile's TRIAD-LOG: table write, re-logged record and its sync,
//! MANIFEST edit, log deletion) and of a flush writing a log table with
//! TRIAD-LOG alone, then a power loss or a process crash. Every
//! acknowledged write survives, and every log table's log with it.

mod common;

use common::cuts::{cut_at_every_op, end_process, fault_ops, Cut};
use common::*;
use thicketdb::io::fault::{FaultFs, FaultKind};
use thicketdb::{Db, Options, Profile, WriteOptions};

fn triad_options() -> Options {
    Profile::Triad
        .options()
        .write_buffer_size(1 << 20)
        .target_table_size(16 << 10)
        .block_size(1024)
        .triad_hot_fraction(0.05)
}

/// A skewed workload: five hot keys updated 40 times each among 300 cold
/// keys written once or twice, with a few deletes of hot keys.
fn skewed_writes() -> Vec<Vec<Op>> {
    let mut writes = Vec::new();
    for i in 0..600u32 {
        let hot = format!("hot{}", i % 5).into_bytes();
        let value = if i % 97 == 0 {
            None
        } else {
            Some(format!("h{i}").into_bytes())
        };
        writes.push(vec![(hot, value)]);
        if i % 2 == 0 {
            let cold = format!("cold{:04}", (i * 7) % 300).into_bytes();
            writes.push(vec![(cold, Some(vec![b'c'; 100 + (i % 50) as usize]))]);
        }
    }
    writes
}

/// Opens a store and writes the workload (synced when `sync`). Returns the
/// store and the model.
fn write_skewed(fs: &FaultFs, options: &Options, sync: bool) -> (Db, Model) {
    let db = open_fault(fs, options.clone()).unwrap();
    let mut model = Model::new();
    for w in skewed_writes() {
        db.write_opt(batch_of(&w), WriteOptions { sync }).unwrap();
        apply(&mut model, &w);
    }
    (db, model)
}

/// Checks that a fault-free flush wrote log tables and kept hot keys as
/// `options` ask.
fn flushed_as_asked(options: &Options, db: &Db) {
    let stats = db.stats();
    assert_eq!(
        stats.hot_entries_kept >= 5,
        options.triad_mem,
        "the hot keys stayed: {stats:?}"
    );
    assert_eq!(
        stats.log_table_bytes > 0,
        options.triad_log,
        "log tables: {stats:?}"
    );
    assert_eq!(
        stats.in_place_updates > 0,
        options.triad_in_place,
        "updates in place: {stats:?}"
    );
}

/// TRIAD-LOG alone on the default profile.
fn log_options() -> Options {
    Options::default()
        .write_buffer_size(1 << 20)
        .target_table_size(16 << 10)
        .block_size(1024)
        .triad_log(true)
}

/// The hot/cold flush of a memtable holding every version.
#[test]
fn a_hot_cold_flush_keeps_every_write_across_a_crash_at_any_point() {
    crash_at_every_flush_op(&triad_options().triad_in_place(false));
}

/// The hot/cold flush of a C_m updated in place (TRIAD's Algorithm 1, the
/// `triad` profile's): most of the hot keys' writes replaced their entry's
/// value.
#[test]
fn a_hot_cold_flush_of_an_in_place_memtable_keeps_every_write_across_a_crash_at_any_point() {
    let options = triad_options();
    assert!(options.triad_in_place);
    crash_at_every_flush_op(&options);
}

#[test]
fn a_log_table_flush_keeps_every_write_across_a_crash_at_any_point() {
    crash_at_every_flush_op(&log_options());
}

/// A power loss after unsynced writes were flushed as log tables: the
/// flush made the log durable first, so every write survives and every
/// address of a log table reads back.
#[test]
fn a_log_table_survives_power_loss_after_unsynced_writes() {
    let fs = FaultFs::new();
    let (db, model) = write_skewed(&fs, &log_options(), false);
    db.flush().unwrap();
    assert!(db.stats().log_table_bytes > 0);
    fs.drop_unsynced();
    drop(db);
    let db = open_fault(&fs, log_options()).unwrap();
    let got = scan_model(&db).unwrap();
    assert!(got == model, "{}", diff(&got, &model));
    db.close().unwrap();
    thicketdb::check::check_store_with_fs(&fault_dir(), std::sync::Arc::new(fs.clone())).unwrap();
}

/// Recovery turns a replayed log into log tables: it syncs the log first,
/// so a power loss after the recovery (unsynced writes that survived a
/// process crash in the OS's cache) loses none of them.
#[test]
fn log_tables_made_by_recovery_survive_a_later_power_loss() {
    let fs = FaultFs::new();
    let db = open_fault(&fs, log_options()).unwrap();
    let mut model = Model::new();
    for w in skewed_writes() {
        db.write(batch_of(&w)).unwrap();
        apply(&mut model, &w);
    }
    fs.crash_process();
    drop(db);
    let db = open_fault(&fs, log_options()).unwrap();
    assert!(db.stats().log_table_bytes > 0, "recovery wrote log tables");
    db.close().unwrap();
    fs.drop_unsynced();
    let db = open_fault(&fs, log_options()).unwrap();
    let got = scan_model(&db).unwrap();
    assert!(got == model, "{}", diff(&got, &model));
}

/// A fault at every file-system operation of a flush of the skewed
/// workload, then a power loss (the writes synced) or a process crash.
fn crash_at_every_flush_op(options: &Options) {
    cut_at_every_op(&Cut {
        name: "flush",
        options: options.clone(),
        prepare: &|fs, sync| write_skewed(fs, options, sync),
        act: &|db| db.flush(),
        acted: &|_, db| flushed_as_asked(options, db),
        recovered: &|_, _, _| {},
        or_completed: None,
    });
}

#[test]
fn hot_keys_stay_in_memory_across_flushes_and_reopen() {
    let fs = FaultFs::new();
    let (db, model) = write_skewed(&fs, &triad_options(), false);
    db.flush().unwrap();
    let stats = db.stats();
    assert!(stats.hot_entries_kept >= 5, "{stats:?}");
    assert!(
        stats.flush_bytes_written > 0 && stats.runs_per_level[0] + stats.runs_per_level[1] >= 1,
        "the cold keys were flushed"
    );
    assert!(scan_model(&db).unwrap() == model);
    db.close().unwrap();
    let db = open_fault(&fs, triad_options()).unwrap();
    assert!(
        scan_model(&db).unwrap() == model,
        "recovered from the re-logged record"
    );
}

/// FLUSH_TH on a memtable holding every version: the memtable fills with
/// the log.
fn flush_th_options() -> Options {
    triad_options()
        .write_buffer_size(64 << 10)
        .triad_flush_threshold(0.5)
        .triad_in_place(false)
        .triad_log_limit(0.0)
}

/// Updates of 20 keys: the memtable fills with versions of few keys.
fn few_keys_write(i: u32) -> Vec<Op> {
    let value =
        (!i.is_multiple_of(41)).then(|| vec![b'a' + (i % 26) as u8; 200 + (i % 100) as usize]);
    vec![(format!("few{:02}", i % 20).into_bytes(), value)]
}

/// File-system operations before the first FLUSH_TH rewrite and during it,
/// with the write that triggers it.
fn first_rewrite() -> (u64, u64, u32) {
    let fs = FaultFs::new();
    let db = open_fault(&fs, flush_th_options()).unwrap();
    for i in 0.. {
        let before = fault_ops(&fs);
        db.write(batch_of(&few_keys_write(i))).unwrap();
        if db.stats().log_rewrites > 0 {
            let stats = db.stats();
            assert_eq!(stats.flushes, 0, "rewritten instead of flushed");
            return (before, fault_ops(&fs) - before, i);
        }
    }
    unreachable!()
}

#[test]
fn a_flush_th_log_rewrite_keeps_every_write_across_a_crash_at_any_point() {
    let (start, during, trigger) = first_rewrite();
    for at in 0..=during {
        for power_loss in [true, false] {
            let fs = FaultFs::new();
            let db = open_fault(&fs, flush_th_options()).unwrap();
            let mut model = Model::new();
            let mut i = 0;
            let mut armed = false;
            loop {
                if !armed && fault_ops(&fs) >= start {
                    fs.fail_after_ops(at, FaultKind::Io);
                    armed = true;
                }
                let w = few_keys_write(i);
                if db
                    .write_opt(batch_of(&w), WriteOptions { sync: power_loss })
                    .is_err()
                {
                    break;
                }
                apply(&mut model, &w);
                i += 1;
                if i > trigger + 50 {
                    break;
                }
            }
            end_process(&fs, db, power_loss);
            let what = format!("fault after {at} of {during} ops, power loss: {power_loss}");
            let db = open_fault(&fs, flush_th_options()).unwrap_or_else(|e| panic!("{what}: {e}"));
            let got = scan_model(&db).unwrap();
            assert!(got == model, "{what}: {}", diff(&got, &model));
            db.close().unwrap();
        }
    }
}

#[test]
fn flush_th_rewrites_instead_of_flushing_and_recovers() {
    let fs = FaultFs::new();
    let db = open_fault(&fs, flush_th_options()).unwrap();
    let mut model = Model::new();
    for i in 0..3000 {
        let w = few_keys_write(i);
        db.write(batch_of(&w)).unwrap();
        apply(&mut model, &w);
    }
    let stats = db.stats();
    assert!(stats.log_rewrites >= 3, "{stats:?}");
    assert_eq!(stats.flushes, 0, "nothing flushed: {stats:?}");
    assert!(scan_model(&db).unwrap() == model);
    let logs = fault_files(&fs, ".log").len();
    assert!(logs <= 2, "old logs are dropped: {logs}");
    fs.crash_process();
    drop(db);
    let db = open_fault(&fs, flush_th_options()).unwrap();
    assert!(scan_model(&db).unwrap() == model);
}

/// TRIAD's log limit over a C_m updated in place: the memtable holds a few
/// distinct keys while the log takes every write.
fn log_limit_options() -> Options {
    flush_th_options().triad_in_place(true).triad_log_limit(2.0)
}

/// Updates of 20 keys with values of one length (updated in place), a
/// delete now and then.
fn few_keys_in_place(i: u32) -> Vec<Op> {
    let value = (!i.is_multiple_of(41)).then(|| vec![b'a' + (i % 26) as u8; 200]);
    vec![(format!("few{:02}", i % 20).into_bytes(), value)]
}

/// Updates of 40 keys of 1,000 bytes: their newest values (40 KB) are
/// above FLUSH_TH (32 KiB) and within the memtable (64 KiB), so the full
/// log is flushed.
fn keys_over_flush_th(i: u32) -> Vec<Op> {
    vec![(
        format!("over{:02}", i % 40).into_bytes(),
        Some(vec![b'a' + (i % 26) as u8; 1000]),
    )]
}

/// A fault at every file-system operation from the write that first makes
/// `happened` true (in a fault-free run) on, through the fifty writes
/// after it, then a power loss (the writes synced) or a process crash:
/// every acknowledged write survives.
fn crash_around_first(
    options: &Options,
    write: fn(u32) -> Vec<Op>,
    happened: fn(&thicketdb::Stats) -> bool,
) {
    let (start, during, trigger) = {
        let fs = FaultFs::new();
        let db = open_fault(&fs, options.clone()).unwrap();
        let mut first = None;
        for i in 0..100_000 {
            let before = fault_ops(&fs);
            db.write(batch_of(&write(i))).unwrap();
            if happened(&db.stats()) {
                first = Some((before, fault_ops(&fs) - before, i));
                break;
            }
        }
        first.expect("the event happens")
    };
    assert!(during > 1, "{during} operations");
    for at in 0..=during {
        for power_loss in [true, false] {
            let fs = FaultFs::new();
            let db = open_fault(&fs, options.clone()).unwrap();
            let mut model = Model::new();
            let mut armed = false;
            for i in 0..=trigger + 50 {
                if !armed && fault_ops(&fs) >= start {
                    fs.fail_after_ops(at, FaultKind::Io);
                    armed = true;
                }
                let w = write(i);
                if db
                    .write_opt(batch_of(&w), WriteOptions { sync: power_loss })
                    .is_err()
                {
                    break;
                }
                apply(&mut model, &w);
            }
            end_process(&fs, db, power_loss);
            let what = format!("fault after {at} of {during} ops, power loss: {power_loss}");
            let db = open_fault(&fs, options.clone()).unwrap_or_else(|e| panic!("{what}: {e}"));
            let got = scan_model(&db).unwrap();
            assert!(got == model, "{what}: {}", diff(&got, &model));
            db.close().unwrap();
        }
    }
}

#[test]
fn a_log_limit_rewrite_of_an_in_place_memtable_keeps_every_write_across_a_crash_at_any_point() {
    crash_around_first(&log_limit_options(), few_keys_in_place, |s| {
        assert_eq!(s.flushes, 0, "rewritten, not flushed: {s:?}");
        if s.log_limit_rewrites > 0 {
            assert!(s.in_place_updates > 100, "{s:?}");
        }
        s.log_limit_rewrites > 0
    });
}

#[test]
fn a_log_limit_flush_keeps_every_write_across_a_crash_at_any_point() {
    crash_around_first(&log_limit_options(), keys_over_flush_th, |s| {
        assert_eq!(s.log_rewrites, 0, "{s:?}");
        s.log_limit_switches > 0
    });
}

/// TRIAD-LOG alone, compactions by hand, a compaction's values past 64
/// KiB spilled to a scratch file (`version/log_prefetch.rs`).
fn spill_options() -> Options {
    log_options()
        .disable_auto_compactions(true)
        .triad_log_compaction_batch(64 << 10)
}

/// Three flushes of 600 keys (about 130 KB of values each), keys out of
/// order in each log, a tenth of them deleted in the last round.
fn spill_store(fs: &FaultFs) -> (Db, Model) {
    let db = open_fault(fs, spill_options()).unwrap();
    let mut model = Model::new();
    for round in 0..3u32 {
        for n in 0..600u32 {
            let i = (n * 257 + round) % 600;
            let value = (round < 2 || i % 10 != 0)
                .then(|| vec![b'a' + ((i + round) % 26) as u8; 150 + (i % 200) as usize]);
            let w = vec![(format!("key{i:04}").into_bytes(), value)];
            db.write(batch_of(&w)).unwrap();
            apply(&mut model, &w);
        }
        db.flush().unwrap();
    }
    (db, model)
}

/// A fault at every file-system operation of an L0 compaction of log
/// tables that spills values (the scratch file's create, appends and
/// flush, the outputs, the MANIFEST edit, the logs' deletion), then a power
/// loss or a process crash: every write survives, no scratch file outlives
/// the next open, and the store compacts again.
#[test]
fn a_spilling_log_table_compaction_keeps_every_write_across_a_crash_at_any_point() {
    cut_at_every_op(&Cut {
        name: "spilling compaction",
        options: spill_options(),
        prepare: &|fs, _| spill_store(fs),
        act: &|db| db.compact_range(None, None),
        acted: &|fs, db| {
            let stats = db.stats();
            assert!(stats.log_spill_bytes > 0, "spilled: {stats:?}");
            assert!(fault_files(fs, ".tmp").is_empty(), "scratch file removed");
        },
        recovered: &|fs, _, what| {
            assert!(
                fault_files(fs, ".tmp").is_empty(),
                "{what}: a scratch file outlived the open"
            );
        },
        or_completed: None,
    });
}

/// A log rewrite over a C_m updated in place re-logs each key's entry with
/// its first sequence number, older than the writes that updated it. After
/// a power loss that leaves a rewritten log as the oldest one replayed (the
/// writes after the rewrite unsynced, the old log's deletion made durable
/// by the next rewrite's directory sync), the store holds the state of the
/// first rewrite: its sequence must carry on after the writes that state
/// holds, not restart below them.
#[test]
fn the_sequence_carries_on_after_a_power_loss_that_leaves_a_rewritten_log() {
    let fs = FaultFs::new();
    let options = log_limit_options();
    let db = open_fault(&fs, options.clone()).unwrap();
    let mut model = Model::new();
    let mut at_first = None;
    for i in 0.. {
        let before = db.snapshot().sequence();
        let w = few_keys_in_place(i);
        db.write(batch_of(&w)).unwrap();
        let rewrites = db.stats().log_limit_rewrites;
        if rewrites == 1 && at_first.is_none() {
            at_first = Some((before, model.clone()));
        }
        if rewrites == 2 {
            break;
        }
        apply(&mut model, &w);
    }
    let (durable, model) = at_first.unwrap();
    assert!(db.stats().in_place_updates > 500, "{:?}", db.stats());
    end_process(&fs, db, true);
    let db = open_fault(&fs, options).unwrap();
    let got = scan_model(&db).unwrap();
    assert!(
        got == model,
        "the first rewrite's state: {}",
        diff(&got, &model)
    );
    let after = db.snapshot().sequence();
    assert!(
        after >= durable,
        "sequence {after} restarted below {durable}"
    );
}
