//! `thicket stress` and `thicket crashtest`: a killed run is verified by the
//! next one, a store that disagrees with its shadow is reported with key,
//! expected and actual value and seed, the power-loss mode and a short
//! crash test pass for every profile.

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Output};

use thicketdb::Profile;

fn thicket(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_thicket"))
        .args(args)
        .output()
        .expect("run thicket")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn stress(db: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["stress", "--db", db.to_str().unwrap(), "--keys", "2000"];
    args.extend_from_slice(extra);
    thicket(&args)
}

/// A run SIGKILLed after 300 ms, which first verified the store.
fn killed_run_verifies(db: &Path, seed: &str) {
    let args = [
        "--duration",
        "3600",
        "--kill-after-ms",
        "300",
        "--seed",
        seed,
    ];
    let o = stress(db, &args);
    assert_eq!(o.status.signal(), Some(9), "{}", text(&o));
    assert!(
        text(&o).contains("stress: verified 2000 keys"),
        "{}",
        text(&o)
    );
}

#[test]
fn a_killed_run_is_verified_by_the_next() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("store");
    let o = stress(&db, &["--duration", "0.5", "--seed", "1"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("stress: done:"), "{}", text(&o));
    let range_deletes: u64 = text(&o)
        .split(" range deletes)")
        .next()
        .and_then(|before| before.rsplit(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no range delete count: {}", text(&o)));
    assert!(range_deletes > 0, "range deletes are in the op mix");
    assert!(dir.path().join("store.expected").exists());
    for seed in ["2", "3"] {
        killed_run_verifies(&db, seed);
    }
    let o = stress(&db, &["--duration", "0", "--threads", "1"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("stress: verified 2000 keys"),
        "{}",
        text(&o)
    );
}

/// Sets key `i`'s acknowledged base in the expected-state file.
fn set_acked(expected: &Path, i: u64, base: u32) {
    let mut data = std::fs::read(expected).unwrap();
    let at = (16 + 16 * i) as usize;
    data[at..at + 4].copy_from_slice(&base.to_le_bytes());
    std::fs::write(expected, data).unwrap();
}

#[test]
fn a_store_that_disagrees_with_its_shadow_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("store");
    let o = stress(&db, &["--duration", "0.3", "--seed", "9"]);
    assert!(o.status.success(), "{}", text(&o));
    // Pretend the store acknowledged a write it does not have: key 1999
    // (outside the hot tenth, so most likely untouched) gets a value.
    let expected = dir.path().join("store.expected");
    let data = std::fs::read(&expected).unwrap();
    let i = (0..2000u64)
        .rev()
        .find(|&i| data[(16 + 16 * i) as usize..][..4] == [0; 4])
        .expect("an absent key");
    set_acked(&expected, i, 0x1234);
    let o = stress(&db, &["--duration", "1", "--seed", "77"]);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(2), "{out}");
    assert!(out.contains("MISMATCH"), "{out}");
    assert!(out.contains(&format!("k{i:08}")), "{out}");
    assert!(
        out.contains("expected value#00001234, actual absent"),
        "{out}"
    );
    assert!(out.contains("acknowledged write lost"), "{out}");
    assert!(out.contains("seed 77"), "{out}");
}

#[test]
fn a_store_without_its_shadow_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("store");
    let o = thicket(&["put", "--db", db.to_str().unwrap(), "k00000001", "v"]);
    assert!(o.status.success(), "{}", text(&o));
    let o = stress(&db, &["--duration", "0.2"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("has no expected state"), "{}", text(&o));
}

#[test]
fn power_loss_mode_survives_every_cycle() {
    let o = thicket(&[
        "stress",
        "--power-loss-cycles",
        "4",
        "--duration",
        "2",
        "--keys",
        "2000",
        "--seed",
        "5",
    ]);
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    for cycle in 0..4 {
        assert!(out.contains(&format!("stress: cycle {cycle}: ")), "{out}");
    }
    assert!(out.contains("stress: done:"), "{out}");
}

#[test]
fn crashtest_covers_every_profile() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let cycles = (2 * Profile::ALL.len()).to_string();
    let o = thicket(&[
        "crashtest",
        "--root",
        root.to_str().unwrap(),
        "--cycles",
        &cycles,
        "--duration",
        "600",
        "--max-kill-ms",
        "300",
        "--keys",
        "2000",
        "--power-loss-fraction",
        "0",
        "--seed",
        "3",
    ]);
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    assert!(
        out.contains(&format!("crashtest: passed: {cycles} SIGKILL cycles")),
        "{out}"
    );
    for p in Profile::ALL {
        assert!(root.join(p.name()).exists(), "no store for {p}: {out}");
    }
}

#[test]
fn crashtest_reports_a_failing_run() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let profile = Profile::ALL[0].name();
    let store = root.join(profile);
    let o = stress(&store, &["--profile", profile, "--duration", "0.2"]);
    assert!(o.status.success(), "{}", text(&o));
    set_acked(&root.join(format!("{profile}.expected")), 1999, 0x99);
    let o = thicket(&[
        "crashtest",
        "--root",
        root.to_str().unwrap(),
        "--profile",
        profile,
        "--cycles",
        "1",
        "--keys",
        "2000",
        "--power-loss-fraction",
        "0",
    ]);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(2), "{out}");
    assert!(out.contains("MISMATCH"), "{out}");
    assert!(out.contains("stores kept in"), "{out}");
}

/// `--keyspaces 3`: keys spread over the default keyspace and two more with
/// the next profiles' options; batches span them; a killed run is verified
/// per keyspace by the next, and so is every simulated power loss.
#[test]
fn keyspaces_are_stressed_and_verified_across_kills_and_power_loss() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("store");
    let o = stress(
        &db,
        &["--keyspaces", "3", "--duration", "0.5", "--seed", "1"],
    );
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    assert!(out.contains("keyspace stress-1: profile leveldb"), "{out}");
    assert!(out.contains("keyspace stress-2: profile bolt"), "{out}");
    killed_run_verifies(&db, "2");
    let listed = thicket(&["keyspace", "list", "--db", db.to_str().unwrap()]);
    assert_eq!(text(&listed), "default\nstress-1\nstress-2\n");
    let o = stress(&db, &["--duration", "0", "--threads", "1"]);
    assert!(
        text(&o).contains("stress: verified 2000 keys"),
        "{}",
        text(&o)
    );

    let o = thicket(&[
        "stress",
        "--power-loss-cycles",
        "3",
        "--keyspaces",
        "3",
        "--profile",
        "triad",
        "--duration",
        "2",
        "--keys",
        "2000",
        "--seed",
        "6",
    ]);
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    assert!(out.contains("keyspace stress-2: profile leveldb"), "{out}");
    // Three crash cycles, each a power loss or a process crash.
    assert!(
        out.contains("stress: cycle 2:") && !out.contains("stress: cycle 3:"),
        "{out}"
    );
    assert!(out.contains("stress: done:"), "{out}");
}

/// `--checkpoint-fraction`: checkpoints taken while the workers write are
/// opened and checked against the shadow, on the LSM and the chunked
/// layout, and removed once verified.
#[test]
fn checkpoints_taken_mid_run_are_verified() {
    for profile in ["default", "yodb"] {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("store");
        let o = stress(
            &db,
            &[
                "--profile",
                profile,
                "--keyspaces",
                "2",
                "--duration",
                "1",
                "--checkpoint-fraction",
                "0.01",
                "--seed",
                "4",
            ],
        );
        let out = text(&o);
        assert!(o.status.success(), "{out}");
        let verified = out
            .lines()
            .filter(|l| l.starts_with("stress: checkpoint ") && l.ends_with(" verified"))
            .count();
        assert!(verified > 0, "{profile}: {out}");
        assert!(
            out.contains(&format!("{verified} checkpoints verified")),
            "{out}"
        );
        let left = std::fs::read_dir(dir.path().join("store.checkpoints"))
            .unwrap()
            .count();
        assert_eq!(left, 0, "{profile}: verified checkpoints are removed");
    }
}

/// `crashtest --random-options` draws each store's options once, prints
/// them and passes them on; a failing run's command line carries every
/// `--option`, so it replays the run (before, the crash test's own
/// `--option`s were left out of it).
#[test]
fn crashtest_draws_store_options_and_a_failure_replays_them() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let o = thicket(&[
        "crashtest",
        "--root",
        root.to_str().unwrap(),
        "--profile",
        "sifr",
        "--cycles",
        "2",
        "--duration",
        "600",
        "--max-kill-ms",
        "300",
        "--keys",
        "2000",
        "--random-options",
        "--checkpoint-fraction",
        "0.01",
        "--seed",
        "5",
    ]);
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    let line = out
        .lines()
        .find(|l| l.starts_with("crashtest: sifr store options: "))
        .unwrap_or_else(|| panic!("{out}"));
    // SifrDB's own policy is never drawn away.
    assert!(!line.contains("compaction_policy="), "{line}");
    assert!(out.contains("checkpoints verified"), "{out}");

    let root = dir.path().join("failing");
    let o = thicket(&[
        "crashtest",
        "--root",
        root.to_str().unwrap(),
        "--profile",
        "yodb",
        "--option",
        "durability=async",
        "--cycles",
        "1",
        "--keys",
        "2000",
        "--power-loss-fraction",
        "0",
    ]);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(2), "{out}");
    assert!(
        out.contains("stress --profile yodb --option durability=async"),
        "{out}"
    );
}
