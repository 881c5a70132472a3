//! Crashes and full disks, through the fault-injecting file system.

mod common;

use std::sync::Arc;

use common::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use thicketdb::check::check_store_with_fs;
use thicketdb::io::fault::{FaultFs, FaultKind};
use thicketdb::{Db, Error, Options, ReadOptions, WriteOptions};

const KEYS: u32 = 200;

fn key(i: u32) -> Vec<u8> {
    format!("key{i:05}").into_bytes()
}

/// A random write of 1..4 updates; values are unique per `serial`.
fn random_write(rng: &mut StdRng, serial: usize) -> Vec<Op> {
    let n = rng.random_range(1..4);
    (0..n)
        .map(|j| {
            let k = key(rng.random_range(0..KEYS));
            if rng.random_bool(0.15) {
                (k, None)
            } else {
                let len = rng.random_range(8..400);
                let mut v = format!("w{serial}.{j}.").into_bytes();
                v.resize(len.max(v.len()), b'a' + (serial % 26) as u8);
                (k, Some(v))
            }
        })
        .collect()
}

fn check_store_ok(fs: &FaultFs) {
    if let Err(e) = check_store_with_fs(&fault_dir(), Arc::new(fs.clone())) {
        panic!("check_store: {e}");
    }
}

// ---------------------------------------------------------------------------
// (a) power loss and process crash
// ---------------------------------------------------------------------------

/// The largest k such that applying `writes[..k]` to `base` gives `got`
/// (searched over every prefix, the empty one included, so that a state
/// missing a synced write is told apart from one that has it).
fn longest_matching_prefix(base: &Model, writes: &[Vec<Op>], got: &Model) -> Option<usize> {
    let mut m = base.clone();
    let mut longest = (&m == got).then_some(0);
    for (k, w) in writes.iter().enumerate() {
        apply(&mut m, w);
        if &m == got {
            longest = Some(k + 1);
        }
    }
    longest
}

/// How a power-loss cycle mixes sync and non-sync writes.
#[derive(Clone, Copy)]
enum SyncMix {
    /// Sync and non-sync writes interleaved.
    Mixed,
    /// Each cycle is all sync or all non-sync.
    PerCycle,
}

fn power_loss_run(seed: u64, mix: SyncMix) {
    let mut rng = StdRng::seed_from_u64(seed);
    let fs = FaultFs::new();
    let mut state = Model::new();
    let mut serial = 0;
    for cycle in 0..4 {
        let db = open_fault(&fs, small_options()).unwrap();
        let mut writes: Vec<Vec<Op>> = Vec::new();
        let mut synced_upto = 0;
        let n = rng.random_range(100..1500);
        let sync_p = match mix {
            SyncMix::Mixed => [0.02, 0.1, 0.5][rng.random_range(0..3)],
            SyncMix::PerCycle => [0.0, 1.0][rng.random_range(0..2)],
        };
        for i in 0..n {
            serial += 1;
            let ops = random_write(&mut rng, serial);
            let sync = rng.random_bool(sync_p);
            db.write_opt(batch_of(&ops), WriteOptions { sync })
                .unwrap_or_else(|e| panic!("seed {seed} cycle {cycle} write {i}: {e}"));
            writes.push(ops);
            if sync {
                synced_upto = i + 1;
            }
            if rng.random_bool(0.005) {
                db.flush().unwrap();
            }
        }
        fs.drop_unsynced();
        drop(db);
        let db = open_fault(&fs, small_options())
            .unwrap_or_else(|e| panic!("seed {seed} cycle {cycle}: reopen after power loss: {e}"));
        let got = scan_model(&db).unwrap();
        let mut synced = state.clone();
        for w in &writes[..synced_upto] {
            apply(&mut synced, w);
        }
        let Some(k) = longest_matching_prefix(&state, &writes, &got) else {
            panic!(
                "seed {seed} cycle {cycle}: state after power loss is no prefix of the \
                 {} writes; against the prefix through the last synced one (#{synced_upto}): {}",
                writes.len(),
                diff(&got, &synced)
            );
        };
        assert!(
            k >= synced_upto,
            "seed {seed} cycle {cycle}: power loss lost synced writes: the state is the \
             prefix of {k} writes, but write #{synced_upto} was synced; against that: {}",
            diff(&got, &synced)
        );
        // Point reads agree with the scan, on present and absent keys.
        for i in 0..KEYS {
            let k = key(i);
            assert_eq!(
                db.get(&k).unwrap().as_ref(),
                got.get(&k),
                "seed {seed} cycle {cycle}: get of key {i}"
            );
        }
        state = got;
        db.close().unwrap();
        check_store_ok(&fs);
    }
}

#[test]
fn power_loss_keeps_synced_writes_and_a_prefix() {
    for seed in 0..8 {
        power_loss_run(seed, SyncMix::Mixed);
    }
}

/// As above, but without a sync write following unsynced writes of an
/// older log (which the test above shows is broken).
#[test]
fn power_loss_keeps_synced_writes_and_a_prefix_unmixed() {
    for seed in 0..8 {
        power_loss_run(seed, SyncMix::PerCycle);
    }
}

#[test]
fn process_crash_keeps_every_acknowledged_write() {
    for seed in 100..106 {
        let mut rng = StdRng::seed_from_u64(seed);
        let fs = FaultFs::new();
        let mut model = Model::new();
        let mut serial = 0;
        for cycle in 0..4 {
            let db = open_fault(&fs, small_options()).unwrap();
            let got = scan_model(&db).unwrap();
            assert!(
                got == model,
                "seed {seed} cycle {cycle}: after crash: {}",
                diff(&got, &model)
            );
            for _ in 0..rng.random_range(100..1500) {
                serial += 1;
                let ops = random_write(&mut rng, serial);
                let sync = rng.random_bool(0.05);
                db.write_opt(batch_of(&ops), WriteOptions { sync }).unwrap();
                apply(&mut model, &ops);
            }
            fs.crash_process();
            drop(db);
        }
        let db = open_fault(&fs, small_options()).unwrap();
        assert!(scan_model(&db).unwrap() == model, "seed {seed}: final");
    }
}

/// Concurrent writers (group commit, sync and non-sync writers mixed), then
/// a process crash: every acknowledged write survives.
#[test]
fn process_crash_with_concurrent_writers() {
    for seed in 0..4u64 {
        let fs = FaultFs::new();
        let db = open_fault(&fs, small_options()).unwrap();
        let models: Vec<Model> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..4u64)
                .map(|t| {
                    let db = db.clone();
                    s.spawn(move || {
                        let mut rng = StdRng::seed_from_u64(seed * 10 + t);
                        let mut model = Model::new();
                        for i in 0..600 {
                            let ops: Vec<Op> = random_write(&mut rng, i)
                                .into_iter()
                                .map(|(mut k, v)| {
                                    k.extend_from_slice(format!("/t{t}").as_bytes());
                                    (k, v)
                                })
                                .collect();
                            let sync = rng.random_bool(0.2);
                            db.write_opt(batch_of(&ops), WriteOptions { sync }).unwrap();
                            apply(&mut model, &ops);
                        }
                        model
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let mut model = Model::new();
        for m in models {
            model.extend(m);
        }
        fs.crash_process();
        drop(db);
        let db = open_fault(&fs, small_options()).unwrap();
        let got = scan_model(&db).unwrap();
        assert!(got == model, "seed {seed}: {}", diff(&got, &model));
    }
}

/// A sync write must make every earlier write durable too, including
/// writes in a log that was switched out and not flushed yet.
#[test]
fn sync_write_after_memtable_switch_keeps_earlier_writes() {
    for round in 0..20u32 {
        let fs = FaultFs::new();
        let db = open_fault(&fs, small_options()).unwrap();
        let mut model = Model::new();
        // Non-sync writes filling more than one memtable: memtables switch
        // and the switched-out logs hold unsynced data.
        for i in 0..700u32 {
            let (k, v) = (key(i), vec![b'x'; 200]);
            db.put(&k, &v).unwrap();
            model.insert(k, v);
        }
        let (k, v) = (b"synced".to_vec(), round.to_le_bytes().to_vec());
        db.put_opt(&k, &v, WriteOptions { sync: true }).unwrap();
        model.insert(k, v);
        fs.drop_unsynced();
        drop(db);
        let db = open_fault(&fs, small_options()).unwrap();
        let got = scan_model(&db).unwrap();
        assert!(
            got == model,
            "round {round}: a synced write survived but earlier writes did not: {}",
            diff(&got, &model)
        );
    }
}

// ---------------------------------------------------------------------------
// (b) full disk
// ---------------------------------------------------------------------------

/// What the test knows about writes: acknowledged ones, and failed ones
/// that may or may not have reached the log.
enum Event {
    Acked(Vec<Op>),
    Uncertain(Vec<Op>),
}

#[derive(Default)]
struct History {
    events: Vec<Event>,
}

impl History {
    /// The state the acknowledged writes make.
    fn acked(&self) -> Model {
        let mut m = Model::new();
        for e in &self.events {
            if let Event::Acked(ops) = e {
                apply(&mut m, ops);
            }
        }
        m
    }

    /// Whether `got` is the acknowledged writes plus some of the uncertain ones.
    fn admits(&self, got: &Model) -> bool {
        let uncertain = self
            .events
            .iter()
            .filter(|e| matches!(e, Event::Uncertain(_)))
            .count();
        assert!(uncertain <= 10, "too many uncertain writes to enumerate");
        (0u32..1 << uncertain).any(|mask| {
            let mut m = Model::new();
            let mut u = 0;
            for e in &self.events {
                match e {
                    Event::Acked(ops) => apply(&mut m, ops),
                    Event::Uncertain(ops) => {
                        if mask & (1 << u) != 0 {
                            apply(&mut m, ops);
                        }
                        u += 1;
                    }
                }
            }
            &m == got
        })
    }

    /// Records the outcome of a write.
    fn record(&mut self, ops: Vec<Op>, result: &Result<(), Error>) {
        match result {
            Ok(()) => self.events.push(Event::Acked(ops)),
            // Refused up front: certainly not applied.
            Err(Error::Background(_)) | Err(Error::Closed) => {}
            Err(_) => self.events.push(Event::Uncertain(ops)),
        }
    }
}

fn assert_fault_error(e: &Error, kind: FaultKind, what: &str) {
    let ok = match kind {
        FaultKind::NoSpace => e.is_no_space(),
        FaultKind::Io => {
            let inner = match e {
                Error::Background(inner) => inner.as_ref(),
                e => e,
            };
            matches!(inner, Error::Io { .. })
        }
    };
    assert!(ok, "{what}: expected the injected {kind:?}, got {e:?}");
}

/// Reads of the live store match the acknowledged writes exactly.
fn assert_reads(db: &Db, history: &History, what: &str) {
    let acked = history.acked();
    for i in 0..KEYS {
        let k = key(i);
        let got = db
            .get(&k)
            .unwrap_or_else(|e| panic!("{what}: get after a write failure: {e}"));
        assert_eq!(got.as_ref(), acked.get(&k), "{what}: get {i}");
    }
    let got = scan_model(db).unwrap();
    assert!(got == acked, "{what}: scan: {}", diff(&got, &acked));
}

/// After a failure: the store refuses writes cleanly or keeps working.
fn probe_after_failure(db: &Db, history: &mut History, serial: usize, what: &str) {
    let ops = vec![(b"after".to_vec(), Some(format!("{serial}").into_bytes()))];
    let result = db.write(batch_of(&ops));
    if result.is_ok() {
        assert_eq!(
            db.get(b"after").unwrap(),
            ops[0].1,
            "{what}: write accepted after a failure is not visible"
        );
    }
    history.record(ops, &result);
    // Flush either fails or works; it must not panic or hang.
    let _ = db.flush();
}

/// Clears faults, drops the store, reopens it: the acknowledged writes are
/// all there (plus possibly failed ones).
fn reopen_and_verify(fs: &FaultFs, db: Db, history: &History, clear_first: bool, what: &str) {
    if clear_first {
        fs.clear_faults();
        drop(db);
    } else {
        drop(db);
        fs.clear_faults();
    }
    let db = open_fault(fs, small_options())
        .unwrap_or_else(|e| panic!("{what}: reopen after clearing faults: {e}"));
    let got = scan_model(&db).unwrap();
    assert!(
        history.admits(&got),
        "{what}: after reopen: {}",
        diff(&got, &history.acked())
    );
    // The reopened store works and is clean.
    db.put(b"reopened", b"yes").unwrap();
    db.flush().unwrap();
    assert_eq!(db.get(b"reopened").unwrap(), Some(b"yes".to_vec()));
    db.close().unwrap();
    check_store_ok(fs);
}

/// Writes until one fails under a byte budget on the device (log writes,
/// and flushes/compactions in the background).
#[test]
fn no_space_during_writes() {
    let budgets = [0u64, 1, 100, 4_000, 40_000, 70_000, 150_000, 400_000];
    for (n, &budget) in budgets.iter().enumerate() {
        for seed in 0..3u64 {
            let what = format!("budget {budget} seed {seed}");
            let mut rng = StdRng::seed_from_u64(seed * 1000 + budget);
            let fs = FaultFs::new();
            let db = open_fault(&fs, small_options()).unwrap();
            let mut history = History::default();
            let mut serial = 0;
            for _ in 0..50 {
                serial += 1;
                let ops = random_write(&mut rng, serial);
                db.write(batch_of(&ops)).unwrap();
                history.events.push(Event::Acked(ops));
            }
            fs.fail_after_bytes(budget, FaultKind::NoSpace);
            let mut failed = false;
            for _ in 0..5000 {
                serial += 1;
                let ops = random_write(&mut rng, serial);
                let sync = rng.random_bool(0.1);
                let result = db.write_opt(batch_of(&ops), WriteOptions { sync });
                history.record(ops, &result);
                if let Err(e) = result {
                    assert_fault_error(&e, FaultKind::NoSpace, &what);
                    failed = true;
                    break;
                }
            }
            assert!(failed, "{what}: no write failed");
            assert_reads(&db, &history, &what);
            probe_after_failure(&db, &mut history, serial, &what);
            assert_reads(&db, &history, &what);
            reopen_and_verify(&fs, db, &history, n % 2 == 0, &what);
        }
    }
}

/// Options where only `compact_range` compacts.
fn no_background_compaction() -> Options {
    small_options()
        .l0_compaction_trigger(1000)
        .l0_slowdown_writes_trigger(1000)
        .l0_stop_writes_trigger(1000)
}

/// Fills a fresh store with acknowledged writes that stay in the memtable
/// (about 30 KiB, under the 64 KiB write buffer), on top of `flushes`
/// flushed rounds.
fn prepared_store(seed: u64, flushes: usize) -> (FaultFs, Db, History, usize) {
    let mut rng = StdRng::seed_from_u64(seed);
    let fs = FaultFs::new();
    let db = open_fault(&fs, no_background_compaction()).unwrap();
    let mut history = History::default();
    let mut serial = 0;
    for round in 0..=flushes {
        for _ in 0..60 {
            serial += 1;
            let ops = random_write(&mut rng, serial);
            db.write(batch_of(&ops)).unwrap();
            history.events.push(Event::Acked(ops));
        }
        if round < flushes {
            db.flush().unwrap();
        }
    }
    assert_eq!(db.stats().runs_per_level[0], flushes);
    (fs, db, history, serial)
}

/// Fails the n-th file operation of a flush, for every n until the flush
/// succeeds.
#[test]
fn faults_during_flush_at_every_operation() {
    for kind in [FaultKind::NoSpace, FaultKind::Io] {
        let mut succeeded = false;
        for n in 0..400u64 {
            let what = format!("{kind:?} after {n} ops during flush");
            let (fs, db, mut history, serial) = prepared_store(n, 0);
            fs.fail_after_ops(n, kind);
            match db.flush() {
                Ok(()) => {
                    succeeded = n > 3;
                    eprintln!("{what}: succeeded");
                    fs.clear_faults();
                    assert_reads(&db, &history, &what);
                    break;
                }
                Err(e) => {
                    assert_fault_error(&e, kind, &what);
                    assert!(db.stats().background_error.is_some(), "{what}");
                    assert_reads(&db, &history, &what);
                    probe_after_failure(&db, &mut history, serial, &what);
                    assert_reads(&db, &history, &what);
                    reopen_and_verify(&fs, db, &history, n % 2 == 0, &what);
                }
            }
        }
        assert!(succeeded, "{kind:?}: flush never succeeded");
    }
}

/// Tears the segment (or MANIFEST) write of a flush at several byte budgets.
#[test]
fn no_space_during_flush_at_byte_budgets() {
    for budget in [0u64, 1, 10, 16, 100, 1000, 5000, 20_000, 35_000, 60_000] {
        let what = format!("flush with {budget} bytes left");
        let (fs, db, mut history, serial) = prepared_store(budget, 0);
        fs.fail_after_bytes(budget, FaultKind::NoSpace);
        match db.flush() {
            Ok(()) => {
                fs.clear_faults();
                assert_reads(&db, &history, &what);
                reopen_and_verify(&fs, db, &history, true, &what);
            }
            Err(e) => {
                assert_fault_error(&e, FaultKind::NoSpace, &what);
                assert_reads(&db, &history, &what);
                probe_after_failure(&db, &mut history, serial, &what);
                reopen_and_verify(&fs, db, &history, budget % 2 == 0, &what);
            }
        }
    }
}

/// Fails the n-th file operation of a manual compaction, for every n until
/// it succeeds.
#[test]
fn faults_during_compaction_at_every_operation() {
    for kind in [FaultKind::NoSpace, FaultKind::Io] {
        let mut succeeded = false;
        for n in 0..600u64 {
            let what = format!("{kind:?} after {n} ops during compaction");
            let (fs, db, mut history, serial) = prepared_store(n, 3);
            db.flush().unwrap();
            fs.fail_after_ops(n, kind);
            match db.compact_range(None, None) {
                Ok(()) => {
                    succeeded = n > 3;
                    eprintln!("{what}: succeeded");
                    fs.clear_faults();
                    assert_eq!(db.stats().tables_per_level[0], 0);
                    assert_reads(&db, &history, &what);
                    break;
                }
                Err(e) => {
                    assert_fault_error(&e, kind, &what);
                    assert_reads(&db, &history, &what);
                    probe_after_failure(&db, &mut history, serial, &what);
                    assert_reads(&db, &history, &what);
                    reopen_and_verify(&fs, db, &history, n % 2 == 1, &what);
                }
            }
        }
        assert!(succeeded, "{kind:?}: compaction never succeeded");
    }
}

/// Random failures of any file operation under a mixed workload with
/// background flushes and compactions.
#[test]
fn random_no_space_failures() {
    let mut seeds_with_failures = 0;
    for seed in 0..24u64 {
        let what = format!("seed {seed}");
        let mut rng = StdRng::seed_from_u64(seed);
        let fs = FaultFs::new();
        let db = open_fault(&fs, small_options()).unwrap();
        let mut history = History::default();
        let mut serial = 0;
        let p = [0.001, 0.005, 0.02][seed as usize % 3];
        fs.set_random_failures(seed, p, FaultKind::NoSpace);
        let mut failures = 0;
        for _ in 0..3000 {
            serial += 1;
            let ops = random_write(&mut rng, serial);
            let sync = rng.random_bool(0.1);
            let result = db.write_opt(batch_of(&ops), WriteOptions { sync });
            history.record(ops, &result);
            if let Err(e) = &result {
                assert_fault_error(e, FaultKind::NoSpace, &what);
                failures += 1;
            }
            if rng.random_bool(0.01) {
                if let Err(e) = db.flush() {
                    assert_fault_error(&e, FaultKind::NoSpace, &what);
                    failures += 1;
                }
            }
            if failures > 0 && rng.random_bool(0.1) {
                break;
            }
            if rng.random_bool(0.02) {
                // Reads never fail and never show unacknowledged data.
                let k = key(rng.random_range(0..KEYS));
                assert_eq!(
                    db.get(&k).unwrap().as_ref(),
                    history.acked().get(&k),
                    "{what}"
                );
            }
        }
        assert_reads(&db, &history, &what);
        if let Some(e) = db.stats().background_error {
            assert!(e.contains("no space"), "{what}: {e}");
        }
        if failures > 0 {
            seeds_with_failures += 1;
        }
        reopen_and_verify(&fs, db, &history, seed % 2 == 0, &what);
    }
    assert!(
        seeds_with_failures >= 12,
        "{seeds_with_failures} of 24 seeds failed"
    );
}

/// A store whose writes fail keeps serving snapshots and iterators.
#[test]
fn reads_keep_working_on_a_full_disk() {
    let (fs, db, history, _) = prepared_store(7, 2);
    let snap = db.snapshot();
    let mut it = db.iter(ReadOptions::default()).unwrap();
    fs.set_write_error(Some(FaultKind::NoSpace));
    let err = db.put(b"x", b"y").unwrap_err();
    assert!(err.is_no_space(), "{err:?}");
    let err = db.flush().unwrap_err();
    assert!(err.is_no_space(), "{err:?}");
    let err = db.compact_range(None, None).unwrap_err();
    assert!(err.is_no_space(), "{err:?}");
    assert_reads(&db, &history, "full disk");
    it.seek_to_first();
    let (got, status) = drain(&mut it, true);
    status.unwrap();
    assert_eq!(got, model_vec(&history.acked()));
    let opts = ReadOptions {
        snapshot: Some(snap),
        ..ReadOptions::default()
    };
    assert_eq!(scan(&db, opts).unwrap(), model_vec(&history.acked()));
    reopen_and_verify(&fs, db, &history, false, "full disk");
}
