//! Crash test: `thicket load` is killed with SIGKILL at random moments; after
//! each kill the store must pass `thicket check` and hold exactly a prefix
//! `key0 .. key(k-1)` of the keys, with `k` at least every key the killed
//! process acknowledged (printed as `acked N`).

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use thicketdb::{Db, Options, ReadOptions};

const CYCLES: usize = 20;
const COUNT_PER_CYCLE: u64 = 200_000;
const VALUE_SIZE: usize = 100;
const SMALL_OPTIONS: [(&str, &str); 2] = [
    ("write_buffer_size", "262144"),
    ("target_table_size", "65536"),
];

/// The key and value `thicket load` writes for index `i` (the CLI contract).
fn key(i: u64) -> Vec<u8> {
    format!("key{i:016}").into_bytes()
}

fn value(i: u64) -> Vec<u8> {
    format!("v{i:016}|").repeat(VALUE_SIZE / 18 + 1).as_bytes()[..VALUE_SIZE].to_vec()
}

struct Run {
    /// Keys acknowledged by the killed process (its last `acked N`).
    acked: u64,
    /// Whether the process finished before the kill.
    finished: bool,
}

/// Runs `thicket load` from `start` and SIGKILLs it after `after`.
fn load_and_kill(db: &Path, start: u64, sync: bool, after: Duration) -> Run {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_thicket"));
    cmd.arg("load")
        .arg("--db")
        .arg(db)
        .args(["--count", &COUNT_PER_CYCLE.to_string()])
        .args(["--start", &start.to_string()])
        .args(["--value-size", &VALUE_SIZE.to_string()]);
    for (name, value) in SMALL_OPTIONS {
        cmd.args(["--option", &format!("{name}={value}")]);
    }
    if sync {
        cmd.arg("--sync");
    }
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn thicket load");
    let stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let reader = thread::spawn(move || {
        let mut acked = 0;
        for line in BufReader::new(stdout).lines() {
            let line = line.expect("read child stdout");
            if let Some(n) = line.strip_prefix("acked ") {
                acked = n.parse().expect("acked N");
            }
        }
        acked
    });
    let errors = thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let deadline = Instant::now() + after;
    let mut finished = false;
    while Instant::now() < deadline {
        if child.try_wait().expect("poll child").is_some() {
            finished = true;
            break;
        }
        thread::sleep(Duration::from_millis(5));
    }
    if !finished {
        // Kill sends SIGKILL on Unix. The child may have just exited.
        let _ = child.kill();
    }
    let status = child.wait().expect("wait for child");
    let acked = reader.join().expect("stdout reader");
    let errors = errors.join().expect("stderr reader");
    if finished || status.success() {
        assert!(status.success(), "load failed: {status}\n{errors}");
        assert_eq!(acked, COUNT_PER_CYCLE);
    } else {
        assert_eq!(status.code(), None, "load failed: {status}\n{errors}");
    }
    Run {
        acked,
        finished: status.success(),
    }
}

fn check(db: &Path) {
    let o = Command::new(env!("CARGO_BIN_EXE_thicket"))
        .arg("check")
        .arg("--db")
        .arg(db)
        .output()
        .expect("run thicket check");
    assert!(
        o.status.success(),
        "check failed: {}\n{}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
}

fn options() -> Options {
    let mut o = Options::default();
    for (name, value) in SMALL_OPTIONS {
        o.set(name, value).unwrap();
    }
    o
}

/// Returns `k` when the store holds exactly `key0 .. key(k-1)` with the
/// right values; panics otherwise.
fn verify_prefix(db: &Db) -> u64 {
    let mut iter = db.iter(ReadOptions::default()).unwrap();
    iter.seek_to_first();
    let mut k = 0;
    while iter.valid() {
        assert_eq!(
            iter.key(),
            key(k).as_slice(),
            "expected key {k} (a gap or a stray key)"
        );
        assert_eq!(iter.value(), value(k).as_slice(), "wrong value of key {k}");
        k += 1;
        iter.next();
    }
    iter.status().unwrap();
    k
}

#[test]
fn load_survives_sigkill() {
    let seed = std::env::var("THICKET_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x7431_c4a5);
    eprintln!("crash test seed {seed} (set THICKET_CRASH_SEED to change)");
    let mut rng = StdRng::seed_from_u64(seed);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path();
    let started = Instant::now();
    let mut k = 0;
    for cycle in 0..CYCLES {
        let sync = cycle % 2 == 1;
        let after = Duration::from_millis(rng.random_range(50..=500));
        let run = load_and_kill(path, k, sync, after);
        check(path);
        let db = Db::open(path, options()).expect("reopen after crash");
        let found = verify_prefix(&db);
        let stats = db.stats();
        db.close().unwrap();
        eprintln!(
            "cycle {cycle}: sync={sync} kill after {after:?}: start {k}, acked {}{}, found {found} \
             ({} tables, {} flushes, {} merges)",
            run.acked,
            if run.finished { " (finished)" } else { "" },
            stats.tables,
            stats.flushes,
            stats.compactions_merge,
        );
        assert!(
            found >= k + run.acked,
            "cycle {cycle}: lost acknowledged writes: {found} keys < {k} + {} acked",
            run.acked
        );
        k = found;
    }
    assert!(k > 0, "no key was ever written");
    eprintln!("{CYCLES} cycles, {k} keys in {:?}", started.elapsed());
}
