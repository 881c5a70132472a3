//! Disk full and I/O errors at random points during writes, flushes and
//! compactions (through `FaultFs`): every error reaches the caller or
//! `stats().background_error`, reads never return a value no write made,
//! and once the fault clears a reopen holds every acknowledged write.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use thicketdb::io::fault::{FaultFs, FaultKind};
use thicketdb::{Db, Options, ReadOptions, WriteBatch, WriteOptions};

const KEYS: u32 = 300;
const OPS: usize = 700;

fn key(i: u32) -> Vec<u8> {
    format!("key{i:05}").into_bytes()
}

fn options() -> Options {
    Options::default()
        .write_buffer_size(64 << 10)
        .target_table_size(8 << 10)
        .block_size(512)
        .l0_compaction_trigger(2)
}

fn open(fs: &FaultFs) -> thicketdb::Result<Db> {
    Db::open_with_fs(Path::new("db"), options(), Arc::new(fs.clone()))
}

/// A value, or `None` for absent.
type Value = Option<Vec<u8>>;

/// Per key: the last acknowledged value and the values of failed writes
/// since, any of which the store may hold instead.
#[derive(Default)]
struct Model {
    keys: HashMap<u32, (Value, Vec<Value>)>,
}

impl Model {
    fn record(&mut self, ops: &[(u32, Value)], ok: bool) {
        for (i, v) in ops {
            let entry = self.keys.entry(*i).or_default();
            if ok {
                *entry = (v.clone(), Vec::new());
            } else {
                entry.1.push(v.clone());
            }
        }
    }

    fn allows(&self, i: u32, got: &Value) -> bool {
        match self.keys.get(&i) {
            None => got.is_none(),
            Some((acked, maybe)) => got == acked || maybe.contains(got),
        }
    }
}

#[derive(Debug, Clone, Copy)]
enum Trigger {
    /// Every operation after the first N fails.
    Ops,
    /// The device fills up after N more bytes (a torn write).
    Bytes,
    /// Each operation fails with a small probability.
    Random,
}

fn arm(fs: &FaultFs, trigger: Trigger, kind: FaultKind, rng: &mut StdRng) {
    match trigger {
        Trigger::Ops => fs.fail_after_ops(rng.random_range(0..600), kind),
        Trigger::Bytes => fs.fail_after_bytes(rng.random_range(0..400_000), kind),
        Trigger::Random => {
            fs.set_random_failures(rng.random(), rng.random_range(0.002..0.03), kind)
        }
    }
}

fn value(rng: &mut StdRng, serial: usize) -> Vec<u8> {
    let len = rng.random_range(1..400);
    let mut v = format!("{serial}:").into_bytes();
    v.resize(len.max(v.len()), b'a' + (serial % 26) as u8);
    v
}

fn check_get(db: &Db, model: &Model, i: u32, what: &str) {
    if let Ok(got) = db.get(key(i)) {
        assert!(
            model.allows(i, &got),
            "{what}: key {i} reads {:?}, which no write left there",
            got.map(|v| String::from_utf8_lossy(&v).into_owned())
        );
    }
}

/// Scans the store against the model. While faults are armed a scan may
/// fail (the caller sees the injected error; only what it returned before
/// failing is checked); once they are cleared it must run to the end, so
/// that the check for missing keys always runs there.
fn check_scan(db: &Db, model: &Model, what: &str, faults_armed: bool) {
    let mut iter = match db.iter(ReadOptions::default()) {
        Ok(iter) => iter,
        Err(_) if faults_armed => return,
        Err(e) => panic!("{what}: scan with no fault armed: {e}"),
    };
    iter.seek_to_first();
    let mut seen = Vec::new();
    while iter.valid() {
        let i: u32 = std::str::from_utf8(&iter.key()[3..])
            .unwrap()
            .parse()
            .unwrap();
        assert!(
            model.allows(i, &Some(iter.value().to_vec())),
            "{what}: scan at key {i}"
        );
        seen.push(i);
        iter.next();
    }
    match iter.status() {
        Ok(()) => {
            for i in 0..KEYS {
                if !seen.contains(&i) {
                    assert!(model.allows(i, &None), "{what}: scan misses key {i}");
                }
            }
        }
        Err(_) if faults_armed => {}
        Err(e) => panic!("{what}: scan with no fault armed: {e}"),
    }
}

/// Returns the failures injected and whether a background job failed.
fn run(seed: u64, trigger: Trigger, kind: FaultKind) -> (u64, bool) {
    let what = format!("seed {seed} {trigger:?} {kind:?}");
    let mut rng = StdRng::seed_from_u64(seed);
    let fs = FaultFs::new();
    let db = open(&fs).unwrap();
    let mut model = Model::default();
    let mut errors = 0;
    let armed_at = rng.random_range(0..OPS / 2);
    for serial in 0..OPS {
        if serial == armed_at {
            arm(&fs, trigger, kind, &mut rng);
        }
        let ok = match rng.random_range(0..100) {
            0..60 => {
                let n = if rng.random_bool(0.2) {
                    rng.random_range(2..8)
                } else {
                    1
                };
                let ops: Vec<(u32, Value)> = (0..n)
                    .map(|_| {
                        let i = rng.random_range(0..KEYS);
                        let v = (!rng.random_bool(0.15)).then(|| value(&mut rng, serial));
                        (i, v)
                    })
                    .collect();
                let mut batch = WriteBatch::new();
                for (i, v) in &ops {
                    match v {
                        Some(v) => batch.put(key(*i), v).unwrap(),
                        None => batch.delete(key(*i)).unwrap(),
                    }
                }
                let opts = WriteOptions {
                    sync: rng.random_bool(0.1),
                };
                let ok = db.write_opt(batch, opts).is_ok();
                // A failed batch may have reached the log: its keys may hold
                // the new values (a batch is applied in order).
                model.record(&ops, ok);
                ok
            }
            60..90 => {
                let i = rng.random_range(0..KEYS);
                check_get(&db, &model, i, &what);
                true
            }
            90..95 => {
                check_scan(&db, &model, &what, true);
                true
            }
            95..98 => db.flush().is_ok(),
            _ => {
                let a = rng.random_range(0..KEYS);
                let b = rng.random_range(a..KEYS);
                db.compact_range(Some(&key(a)), Some(&key(b))).is_ok()
            }
        };
        if !ok {
            errors += 1;
        }
    }
    let injected = fs.stats().injected_failures;
    let background = db.stats().background_error;
    if injected > 0 {
        assert!(
            errors > 0 || background.is_some(),
            "{what}: {injected} injected failures, but no caller saw an error"
        );
    }
    check_scan(&db, &model, &what, true);
    let background_failed = background.is_some();
    fs.clear_faults();
    if rng.random_bool(0.5) {
        fs.crash_process();
        drop(db);
    } else {
        let _ = db.close();
    }
    let db = open(&fs).unwrap_or_else(|e| panic!("{what}: reopen after the fault cleared: {e}"));
    for i in 0..KEYS {
        let got = db.get(key(i)).unwrap();
        assert!(
            model.allows(i, &got),
            "{what}: after reopen key {i} holds {:?}; acknowledged {:?}",
            got.map(|v| String::from_utf8_lossy(&v).into_owned()),
            model.keys.get(&i).map(|e| e.0.clone())
        );
    }
    check_scan(&db, &model, &what, false);
    // The store works again.
    db.put(b"after", b"fault").unwrap();
    db.flush().unwrap();
    assert_eq!(db.get(b"after").unwrap().as_deref(), Some(&b"fault"[..]));
    db.close().unwrap();
    (injected, background_failed)
}

fn run_all(trigger: Trigger) {
    let base: u64 = std::env::var("THICKET_IO_ERRORS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x10e7);
    let (mut injected, mut background) = (0, 0);
    for n in 0..12 {
        for kind in [FaultKind::NoSpace, FaultKind::Io] {
            let (i, b) = run(base + n, trigger, kind);
            injected += i;
            background += u32::from(b);
        }
    }
    // The faults did hit, and some hit flushes or compactions.
    assert!(injected > 0 && background > 0, "{injected} {background}");
}

#[test]
fn failures_after_an_operation_budget() {
    run_all(Trigger::Ops);
}

#[test]
fn disk_full_after_a_byte_budget() {
    run_all(Trigger::Bytes);
}

#[test]
fn random_failures() {
    run_all(Trigger::Random);
}
