//! Crash test, under every profile: `thicket load` is killed with SIGKILL at
//! random moments; after each kill the store must pass `thicket check` and
//! hold exactly a prefix `key0 .. key(k-1)` of the keys, with `k` covering
//! every key the killed process acknowledged (printed as `acked N`). Some
//! cycles rewrite an earlier range (same values) so runs overlap and
//! compactions merge, including SifrDB's journaled merges.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use thicketdb::{Db, Options, Profile, ReadOptions};

/// Kill cycles per profile: 8 by default, so the nine profiles fit in about
/// a minute of the test suite (`thicket crashtest`, which CI also runs, adds
/// random kills of every profile); `THICKET_CRASH_CYCLES` asks for more.
fn cycles() -> usize {
    std::env::var("THICKET_CRASH_CYCLES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(8)
}
const COUNT_PER_CYCLE: u64 = 200_000;
const VALUE_SIZE: usize = 100;
const SMALL_OPTIONS: [(&str, &str); 10] = [
    ("write_buffer_size", "262144"),
    ("target_table_size", "65536"),
    ("max_bytes_for_level_base", "1048576"),
    ("early_cleaning_threshold", "2"),
    // LSbM: trim after every compaction.
    ("lsbm_trim_interval", "0"),
    // YoDB: chunks split, logs rebalance, munks come and go constantly.
    ("chunk_size", "65536"),
    ("funk_log_limit", "16384"),
    ("funk_log_limit_with_munk", "32768"),
    ("munk_cache_bytes", "262144"),
    ("row_cache_bytes", "16384"),
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

/// `thicket --db DB --profile P` with the small options and `extra`.
fn thicket(db: &Path, profile: Profile, extra: &[(&str, &str)]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_thicket"));
    cmd.arg("--db").arg(db).args(["--profile", profile.name()]);
    let small: Vec<(&str, &str)> = small_options(profile).collect();
    for (name, value) in small.iter().chain(extra) {
        cmd.args(["--option", &format!("{name}={value}")]);
    }
    cmd
}

/// Runs `thicket load` from `start` with `extra` options and SIGKILLs it
/// after `after`.
fn load_and_kill_with(
    db: &Path,
    profile: Profile,
    start: u64,
    sync: bool,
    after: Duration,
    extra: &[(&str, &str)],
) -> Run {
    let mut cmd = thicket(db, profile, extra);
    cmd.arg("load")
        .args(["--count", &COUNT_PER_CYCLE.to_string()])
        .args(["--start", &start.to_string()])
        .args(["--value-size", &VALUE_SIZE.to_string()]);
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

fn options(profile: Profile) -> Options {
    let mut o = profile.options();
    for (name, value) in small_options(profile) {
        o.set(name, value).unwrap();
    }
    o
}

/// `SMALL_OPTIONS` for `profile`: early cleaning is scaled down where the
/// profile has it, never turned on where it has not (`size-tiered`, for
/// which `validate` refuses it).
fn small_options(profile: Profile) -> impl Iterator<Item = (&'static str, &'static str)> {
    let cleans_early = profile.options().early_cleaning_threshold > 0;
    SMALL_OPTIONS
        .into_iter()
        .filter(move |(name, _)| *name != "early_cleaning_threshold" || cleans_early)
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

/// Crash tests run one at a time: a child forked for one test briefly
/// inherits the descriptors of another test's open store, including its
/// `flock`ed LOCK file, which would make that store look locked.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn crash_cycles(profile: Profile, seed: u64) {
    crash_cycles_in(profile, seed, false);
}

/// `crash_cycles`, in `durability=async` when `checkpointed` (YoDB's
/// asynchronous mode): a kill keeps a prefix through the last checkpoint,
/// which covers every write `--sync` acknowledged (it waits for one), and
/// not necessarily the others.
fn crash_cycles_in(profile: Profile, seed: u64, checkpointed: bool) {
    let _serial = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    eprintln!("{profile}: crash test seed {seed} (set THICKET_CRASH_SEED to change)");
    let mut rng = StdRng::seed_from_u64(seed);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path();
    let started = Instant::now();
    let mut k = 0;
    let cycles = cycles();
    for cycle in 0..cycles {
        let sync = cycle % 2 == 1;
        let start = if cycle % 3 == 2 {
            rng.random_range(0..=k)
        } else {
            k
        };
        let after = Duration::from_millis(rng.random_range(50..=500));
        // YoDB: in every other pair of cycles the writers build funk
        // rebalances themselves (no build thread).
        let mut extra = vec![];
        if profile == Profile::YoDb && cycle % 4 >= 2 {
            extra.push(("chunk_rebalance_threads", "0"));
        }
        if checkpointed {
            extra.extend([("durability", "async"), ("checkpoint_interval", "20")]);
        }
        let run = load_and_kill_with(path, profile, start, sync, after, &extra);
        if !path.join("CURRENT").exists() && !path.join("CHUNKS").exists() {
            // Killed before it created the store (a loaded machine can be
            // that slow to start): nothing was acknowledged, nothing to
            // check; the next run creates it afresh.
            assert_eq!(run.acked, 0, "writes acknowledged without a store");
            continue;
        }
        check(path);
        let db = Db::open(path, options(profile)).expect("reopen after crash");
        let found = verify_prefix(&db);
        // Let the reopened store finish (or resume) its work.
        db.compact_range(None, None).unwrap();
        let stats = db.stats();
        db.close().unwrap();
        eprintln!(
            "{profile} cycle {cycle}: sync={sync} kill after {after:?}: start {start}, acked {}{}, \
             found {found} ({} tables, {} flushes, {} merges, {} moves, {} checkpoints, {} resumed)",
            run.acked,
            if run.finished { " (finished)" } else { "" },
            stats.tables,
            stats.flushes,
            stats.compactions_merge,
            stats.compactions_move,
            stats.merge_checkpoints,
            stats.merges_resumed,
        );
        // Asynchronous: an acknowledgement without `--sync` promises no
        // durability; the previous cycles' keys were checkpointed at close.
        let promised = match checkpointed && !sync {
            true => k,
            false => k.max(start + run.acked),
        };
        assert!(
            found >= promised,
            "{profile} cycle {cycle}: lost acknowledged writes: {found} keys, had {k}, \
             {} acked from {start}",
            run.acked
        );
        k = found;
    }
    assert!(k > 0, "no key was ever written");
    if profile == Profile::Sifr {
        kill_journaled_merges(path, k);
    }
    eprintln!(
        "{profile}: {cycles} cycles, {k} keys in {:?}",
        started.elapsed()
    );
}

/// Piles overlapping L0 runs up (merges held back), then runs a manual
/// compaction, mostly one long journaled merge, that aborts at its second
/// checkpoint (the `merge_checkpoint` crash point, `THICKET_ABORT_AT`, of
/// the `whitebox` feature the tests build the binary with): the merge is
/// cut in the middle on every run, and the reopened store resumes it.
fn kill_journaled_merges(path: &Path, k: u64) {
    let hold = [
        ("runs_per_level", "1000"),
        ("l0_slowdown_writes_trigger", "1000"),
        ("l0_stop_writes_trigger", "1000"),
    ];
    let k = k.max(COUNT_PER_CYCLE);
    for _ in 0..2 {
        let forever = Duration::from_secs(600);
        let run = load_and_kill_with(path, Profile::Sifr, 0, false, forever, &hold);
        assert!(run.finished);
    }
    let status = thicket(path, Profile::Sifr, &[])
        .arg("compact")
        .env("THICKET_ABORT_AT", "merge_checkpoint:2")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("run thicket compact");
    assert!(
        !status.success(),
        "thicket compact finished: it never reached its second merge checkpoint ({status})"
    );
    check(path);
    let db = Db::open(path, options(Profile::Sifr)).expect("reopen after the abort");
    let before = db.stats();
    assert!(
        before.merge_in_progress,
        "no merge left to resume: {before:?}"
    );
    assert_eq!(verify_prefix(&db), k, "the prefix changed");
    db.compact_range(None, None).unwrap();
    let stats = db.stats();
    db.close().unwrap();
    eprintln!(
        "sifr merge aborted at its second checkpoint: {} checkpoints, {} resumed",
        stats.merge_checkpoints, stats.merges_resumed
    );
    assert!(
        stats.merges_resumed > 0,
        "the aborted merge was not resumed: {stats:?}"
    );
    check(path);
}

fn seed() -> u64 {
    std::env::var("THICKET_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x7431_c4a5)
}

#[test]
fn load_survives_sigkill_default() {
    crash_cycles(Profile::Default, seed());
}

#[test]
fn load_survives_sigkill_leveldb() {
    crash_cycles(Profile::LevelDb, seed());
}

#[test]
fn load_survives_sigkill_bolt() {
    crash_cycles(Profile::Bolt, seed());
}

#[test]
fn load_survives_sigkill_size_tiered() {
    crash_cycles(Profile::SizeTiered, seed());
}

#[test]
fn load_survives_sigkill_sifr_and_resumes_journaled_merges() {
    crash_cycles(Profile::Sifr, seed());
}

#[test]
fn load_survives_sigkill_sifr_bolt() {
    crash_cycles(Profile::SifrBolt, seed());
}

#[test]
fn load_survives_sigkill_lsbm() {
    crash_cycles(Profile::Lsbm, seed());
}

#[test]
fn load_survives_sigkill_triad() {
    crash_cycles(Profile::Triad, seed());
}

#[test]
fn load_survives_sigkill_yodb() {
    crash_cycles(Profile::YoDb, seed());
}

#[test]
fn load_survives_sigkill_yodb_async() {
    crash_cycles_in(Profile::YoDb, seed(), true);
}

#[test]
fn every_profile_has_a_crash_test() {
    assert_eq!(
        Profile::ALL.len(),
        9,
        "add a crash test for the new profile"
    );
}
