//! `thicket stress` and `thicket crashtest`: the stress, crash and
//! power-loss harness (after RocksDB's db_stress and db_crashtest.py).
//!
//! `stress` runs random operations against a store and an expected-state
//! shadow kept in a file beside it; started on a store that has a shadow, it
//! first verifies the whole store against it. `crashtest` runs `stress`
//! over and over, SIGKILLing it at random moments, for every profile.

mod args;
mod crash;
mod crashtest;
mod expected;
mod keys;
mod spaces;
mod verify;
mod worker;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use thicketdb::io::fault::FaultFs;
use thicketdb::{Db, Durability, Options, Profile};

pub use args::{CrashtestArgs, StressArgs};
pub use crashtest::run as crashtest;

use crate::cli::GlobalArgs;
use crate::commands::{apply_overrides, build_options, db_dir, Access, Status};
use crate::error::{CliError, CliResult};
use crash::Crash;
use expected::Expected;
use spaces::Spaces;
use worker::{Checkpoints, Counts, Shared};

/// Tunables the stress test picks from per run (unless `--option` sets
/// them): small memtables and tables so that flushes and compactions run
/// all the time, and varied block and cache settings.
const TUNABLES: &[(&str, &[&str])] = &[
    ("write_buffer_size", &["65536", "131072", "262144"]),
    ("target_table_size", &["8192", "16384", "65536"]),
    ("block_size", &["256", "1024", "4096"]),
    ("block_restart_interval", &["1", "4", "16"]),
    ("bloom_bits_per_key", &["0", "10"]),
    ("compression", &["none", "lz4", "zstd"]),
    ("block_cache_size", &["65536", "1048576", "67108864"]),
    ("max_open_files", &["16", "1000"]),
    ("l0_compaction_trigger", &["2", "4"]),
    // SifrDB's parallel search (any profile): lookups and seeks on search
    // threads while compactions and early cleaning release tables.
    ("search_threads", &["1", "3"]),
    // YoDB's chunked layout (the LSM does not read them): chunks that split,
    // logs that rebalance, and munks and rows that come and go constantly.
    ("chunk_size", &["8192", "32768"]),
    ("funk_log_limit", &["2048", "8192"]),
    ("funk_log_limit_with_munk", &["4096", "16384"]),
    ("log_filter_parts", &["1", "4", "16"]),
    ("munk_cache_bytes", &["0", "32768", "1048576"]),
    ("munk_array_list", &["false", "true"]),
    ("chunk_rebalance_threads", &["0", "1", "2"]),
    ("row_cache_bytes", &["0", "4096", "1048576"]),
];

/// Tunables only the power-loss mode picks: its history tells which
/// prefix a recovery must keep, where a SIGKILL run's per-key shadow
/// cannot tell which writes a checkpoint covered.
const POWER_LOSS_TUNABLES: &[(&str, &[&str])] = &[
    // YoDB's asynchronous mode (the LSM refuses it): checkpoints often,
    // and incarnations that run out after one or three recoveries.
    ("durability", &["sync", "async"]),
    ("checkpoint_interval", &["2", "20"]),
    ("incarnation_bits", &["1", "2", "4"]),
];

/// Options `crashtest --random-options` draws once per store, from what
/// `Options::validate` accepts (after RocksDB's db_crashtest.py, which
/// draws its options the same way): the policy, the papers' techniques
/// and their knobs, threads, caches and the logs. A draw holds for a
/// store's whole life (some of these are fixed when the store is
/// created); every profile of the store's layout must accept it, since
/// the extra keyspaces run the layout's other profiles. Left out:
/// `use_direct_*` (refused on tmpfs), `disable_auto_compactions` (L0 grows
/// without bound in a long run), `wal_recovery_mode` (a stricter mode
/// refuses a torn tail by design).
pub(super) const WIDE_TUNABLES: &[(&str, &[&str])] = &[
    ("max_immutable_memtables", &["1", "2", "4"]),
    ("charge_table_metadata", &["false", "true"]),
    ("log_mmap", &["false", "true"]),
    ("compaction_policy", &["leveled", "tiered"]),
    ("runs_per_level", &["2", "4"]),
    ("tiered_split_storing", &["false", "true"]),
    ("compaction_threads", &["1", "2", "4"]),
    ("early_cleaning_threshold", &["0", "2", "10"]),
    ("level_size_multiplier", &["4", "10"]),
    ("dynamic_level_bytes", &["false", "true"]),
    ("level_sizing_from_memtable", &["false", "true"]),
    ("compaction_file", &["false", "true"]),
    ("group_compaction_bytes", &["0", "65536", "67108864"]),
    ("settled_compaction", &["false", "true"]),
    ("grandparent_overlap_factor", &["0", "10"]),
    ("max_mem_compact_level", &["0", "2"]),
    ("flush_one_table", &["false", "true"]),
    ("segment_descriptor_cache", &["false", "true"]),
    ("lsbm_buffer", &["false", "true"]),
    ("lsbm_trim_interval", &["0", "100"]),
    ("lsbm_superfile_tables", &["1", "4"]),
    ("triad_disk", &["false", "true"]),
    ("triad_mem", &["false", "true"]),
    ("triad_flush_threshold", &["0", "0.5"]),
    ("triad_log", &["false", "true"]),
    ("triad_in_place", &["false", "true"]),
    ("triad_log_limit", &["0", "2", "4"]),
    ("triad_log_cache_size", &["0", "65536"]),
    ("triad_log_compaction_batch", &["0", "65536"]),
    ("compaction_readahead_bytes", &["0", "65536"]),
    ("memtable_bloom_size_ratio", &["0", "0.01", "0.25"]),
    ("parallel_search_min_candidates", &["1", "2", "8"]),
    ("chunk_fill_factor", &["0.5", "0.7", "0.9"]),
    ("row_cache_tables", &["2", "3", "8"]),
    ("chunk_log_buffer_bytes", &["0", "4096", "4194304"]),
];

/// Draws a combination of `WIDE_TUNABLES` for a store of `profile` (the
/// user's `--option`s win, and so do the options the profile sets to other
/// than the default: a profile keeps its policy and techniques): each choice is kept only when every profile of
/// the layout accepts it with the user's options and the choices before
/// it. Returns them as `NAME=VALUE`.
pub(super) fn draw_store_options(
    profile: Profile,
    user: &[String],
    rng: &mut StdRng,
) -> Vec<String> {
    let layout = profile.options().layout;
    let same_layout: Vec<Profile> = Profile::ALL
        .iter()
        .copied()
        .filter(|p| p.options().layout == layout)
        .collect();
    let accepted = |specs: &[String]| {
        same_layout.iter().all(|p| {
            let mut options = p.options();
            apply_overrides(&mut options, specs).is_ok()
        })
    };
    let (own, defaults) = (profile.options(), Options::default());
    let mut chosen: Vec<String> = Vec::new();
    for (name, values) in WIDE_TUNABLES {
        let value = values[rng.random_range(0..values.len())];
        let set_by_user = user
            .iter()
            .any(|o| o.split('=').next().map(str::trim) == Some(name));
        let set_by_profile = own.get(name) != defaults.get(name);
        if set_by_user || set_by_profile || !Options::is_read_by(name, layout) {
            continue;
        }
        let spec = format!("{name}={value}");
        let mut specs: Vec<String> = user.to_vec();
        specs.extend(chosen.iter().cloned());
        specs.push(spec.clone());
        if accepted(&specs) {
            chosen.push(spec);
        }
    }
    chosen
}

/// Applies randomly chosen `tunables` the user did not set; returns them
/// as `NAME=VALUE`. Choices a profile rejects, and options its layout does
/// not read, are left out (each still draws its value, so a seed picks the
/// same values whatever the layout).
fn pick_tunables(
    options: &mut Options,
    user: &[String],
    rng: &mut StdRng,
    tunables: &[(&str, &[&str])],
) -> Vec<String> {
    let mut chosen = Vec::new();
    for (name, values) in tunables {
        let value = values[rng.random_range(0..values.len())];
        let set_by_user = user
            .iter()
            .any(|o| o.split('=').next().map(str::trim) == Some(name));
        if set_by_user || !Options::is_read_by(name, options.layout) {
            continue;
        }
        let before = options.clone();
        if options.set(name, value).is_ok() && options.validate().is_ok() {
            chosen.push(format!("{name}={value}"));
        } else {
            *options = before;
        }
    }
    chosen
}

/// The expected-state file of the store in `dir`: `DIR.expected`.
fn default_expected_path(dir: &Path) -> PathBuf {
    let mut s = dir.components().collect::<PathBuf>().into_os_string();
    s.push(".expected");
    PathBuf::from(s)
}

fn seed_of(seed: Option<u64>) -> u64 {
    seed.unwrap_or_else(|| rand::rng().random())
}

fn failed(problems: &[String], seed: u64) -> CliError {
    for p in problems.iter().take(50) {
        eprintln!("MISMATCH: {p} (seed {seed})");
    }
    CliError::Usage(format!(
        "stress: {} problem(s) found (seed {seed}); first: {}",
        problems.len(),
        problems.first().map_or("", String::as_str)
    ))
}

pub fn run(g: &GlobalArgs, args: &StressArgs) -> CliResult<Status> {
    let seed = seed_of(args.seed);
    if args.threads == 0 {
        return Err(CliError::Usage("--threads must be at least 1".into()));
    }
    if args.keys == 0 {
        return Err(CliError::Usage("--keys must be at least 1".into()));
    }
    match args.power_loss_cycles {
        Some(cycles) => power_loss(g, args, seed, cycles),
        None => on_disk(g, args, seed),
    }
}

/// Runs the workers until `deadline` (then calls `on_deadline`) or a
/// failure.
fn run_workers(shared: &Shared, threads: usize, deadline: Instant, on_deadline: impl FnOnce()) {
    std::thread::scope(|scope| {
        for id in 0..threads {
            scope.spawn(move || worker::run(shared, id));
        }
        while Instant::now() < deadline && !shared.stop.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(2).min(deadline - Instant::now()));
        }
        if !shared.stop.load(Ordering::SeqCst) {
            on_deadline();
        }
        shared.stop.store(true, Ordering::SeqCst);
    });
}

fn new_shared(
    db: Db,
    spaces: Spaces,
    expected: Arc<Expected>,
    seed: u64,
    args: &StressArgs,
    checkpoints: Option<Checkpoints>,
) -> Shared {
    Shared {
        checkpoints,
        db,
        spaces,
        expected,
        seed,
        sync_fraction: args.sync_fraction,
        stop: AtomicBool::new(false),
        crashed: AtomicBool::new(false),
        failures: Mutex::new(Vec::new()),
        counts: Counts::default(),
    }
}

fn on_disk(g: &GlobalArgs, args: &StressArgs, seed: u64) -> CliResult<Status> {
    let dir = db_dir(g)?;
    let mut rng = StdRng::seed_from_u64(seed);
    let mut options = build_options(g, dir, Access::Create)?;
    if options.durability == Durability::Async {
        return Err(CliError::Usage(
            "stress: durability=async is checked with --power-loss-cycles (a crash loses the \
             writes since the last checkpoint, which only that mode's history can tell)"
                .into(),
        ));
    }
    let chosen = pick_tunables(&mut options, &g.options, &mut rng, TUNABLES);
    println!(
        "stress: {} profile {} seed {seed} threads {} options {}",
        dir.display(),
        options.profile,
        args.threads,
        chosen.join(" ")
    );
    let db = Db::open(dir, options)?;
    let path = args
        .expected_state
        .clone()
        .unwrap_or_else(|| default_expected_path(dir));
    let (expected, spaces) = if path.exists() {
        let e = Expected::open(&path)?;
        let spaces = Spaces::open(&db, e.keyspaces(), &g.options, &mut rng)?;
        verify_after_crash(&spaces, &e, seed)?;
        (e, spaces)
    } else {
        // A crash can come between creating the store and its shadow; an
        // empty store is fine, anything else has lost its shadow.
        let mut iter = db.iter(thicketdb::ReadOptions::default())?;
        iter.seek_to_first();
        iter.status()?;
        if iter.valid() {
            return Err(CliError::Usage(format!(
                "{} holds data but has no expected state at {}",
                dir.display(),
                path.display()
            )));
        }
        // Keyspaces before the shadow: a shadow always finds its keyspaces.
        let spaces = Spaces::open(&db, args.keyspaces, &g.options, &mut rng)?;
        (Expected::create(&path, args.keys, args.keyspaces)?, spaces)
    };
    let checkpoints = if args.checkpoint_fraction > 0.0 {
        // A kill can leave a checkpoint half made: each run starts afresh.
        let mut root = dir.components().collect::<PathBuf>().into_os_string();
        root.push(".checkpoints");
        let root = PathBuf::from(root);
        if root.exists() {
            std::fs::remove_dir_all(&root)?;
        }
        std::fs::create_dir_all(&root)?;
        Some(Checkpoints::new(
            root,
            db.options().clone(),
            args.checkpoint_fraction,
        ))
    } else {
        None
    };
    let shared = new_shared(db, spaces, Arc::new(expected), seed, args, checkpoints);
    if let Some(ms) = args.kill_after_ms {
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(ms));
            let _ = rustix::process::kill_process(
                rustix::process::getpid(),
                rustix::process::Signal::KILL,
            );
        });
    }
    let deadline = Instant::now() + Duration::from_secs_f64(args.duration.max(0.0));
    run_workers(&shared, args.threads, deadline, || ());
    let failures = shared.failures();
    if !failures.is_empty() {
        return Err(failed(&failures, seed));
    }
    let state =
        verify::read_state(&shared.spaces, shared.expected.keys()).map_err(|p| failed(&p, seed))?;
    let problems = verify::check_recovered(&state, &shared.expected);
    if !problems.is_empty() {
        return Err(failed(&problems, seed));
    }
    println!("stress: done: {}", shared.counts.summary());
    let Shared { db, spaces, .. } = shared;
    drop(spaces);
    db.close()?;
    Ok(Status::Success)
}

/// The first thing a run on an existing shadow does: check every key, then
/// settle in-flight writes to what the store holds.
fn verify_after_crash(spaces: &Spaces, expected: &Expected, seed: u64) -> CliResult<()> {
    let state = verify::read_state(spaces, expected.keys()).map_err(|p| failed(&p, seed))?;
    let in_flight = (0..expected.keys())
        .filter(|&i| expected.slot(i).pending != expected::NONE)
        .count();
    let problems = verify::check_recovered(&state, expected);
    if !problems.is_empty() {
        return Err(failed(&problems, seed));
    }
    expected.reset(&state)?;
    let present = state.iter().filter(|&&b| b != keys::ABSENT).count();
    println!(
        "stress: verified {} keys ({present} present, {in_flight} writes were in flight)",
        expected.keys()
    );
    Ok(())
}

/// Options of the power-loss mode: the profile's, then `--option`s.
fn memory_options(g: &GlobalArgs) -> CliResult<Options> {
    let profile: Profile = g
        .profile
        .as_deref()
        .map(str::parse)
        .transpose()?
        .unwrap_or_default();
    let mut options = profile.options();
    apply_overrides(&mut options, &g.options)?;
    Ok(options)
}

fn power_loss(g: &GlobalArgs, args: &StressArgs, seed: u64, cycles: u32) -> CliResult<Status> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut options = memory_options(g)?;
    let mut chosen = pick_tunables(&mut options, &g.options, &mut rng, TUNABLES);
    chosen.extend(pick_tunables(
        &mut options,
        &g.options,
        &mut rng,
        POWER_LOSS_TUNABLES,
    ));
    // Asynchronous: a process crash, too, keeps only what a checkpoint
    // (or a synced write, which waits for one) made durable.
    let only_synced_kept = options.durability == Durability::Async;
    println!(
        "stress: in-memory power-loss mode, profile {} seed {seed} threads {} options {}",
        options.profile,
        args.threads,
        chosen.join(" ")
    );
    let dir = Path::new("stress-db");
    let fault = FaultFs::new();
    let expected = Arc::new(Expected::in_memory(args.keys, args.keyspaces));
    let per_cycle = args.duration.max(0.0) / f64::from(cycles.max(1));
    let (mut power_losses, mut process_crashes) = (0, 0);
    let mut db = Db::open_with_fs(dir, options.clone(), Arc::new(fault.clone()))?;
    let mut spaces = Spaces::open(&db, args.keyspaces, &g.options, &mut rng)?;
    for cycle in 0..cycles {
        let how = if rng.random_bool(0.75) {
            Crash::PowerLoss
        } else {
            Crash::Process
        };
        let start = verify::acked_bases(&expected.capture(|| ()).1);
        expected.start_history();
        let shared = new_shared(
            db,
            spaces,
            expected.clone(),
            seed ^ u64::from(cycle),
            args,
            None,
        );
        let run_for = Duration::from_secs_f64(per_cycle * rng.random_range(0.2..1.0));
        run_workers(&shared, args.threads, Instant::now() + run_for, || {
            shared.crashed.store(true, Ordering::SeqCst);
            how.strike(&fault);
        });
        let failures = shared.failures();
        let history = expected.take_history();
        if !failures.is_empty() {
            return Err(failed(&failures, seed));
        }
        let Shared {
            db: dead,
            spaces: dead_spaces,
            counts,
            ..
        } = shared;
        // Dropping the dead process's handle: its shutdown fails, harmlessly.
        drop((dead, dead_spaces));
        db = Db::open_with_fs(dir, options.clone(), Arc::new(fault.clone()))
            .map_err(|e| failed(&[format!("reopen after a simulated crash: {e}")], seed))?;
        // The keyspaces were created before the first cycle: none is missing.
        spaces = Spaces::open(&db, args.keyspaces, &g.options, &mut rng)?;
        let state = verify::read_state(&spaces, args.keys).map_err(|p| failed(&p, seed))?;
        let min = verify::required_prefix(&history, how == Crash::PowerLoss || only_synced_kept);
        let kept = verify::check_prefix(&start, &history, min, &state).map_err(|mut p| {
            p.insert(0, format!("cycle {cycle} ({how:?})"));
            failed(&p, seed)
        })?;
        expected.reset(&state)?;
        match how {
            Crash::PowerLoss => power_losses += 1,
            Crash::Process => process_crashes += 1,
        }
        println!(
            "stress: cycle {cycle}: {how:?} after {run_for:?}: {} writes, recovered {kept} (at least {min} required); {}",
            history.len(),
            counts.summary()
        );
    }
    drop(spaces);
    db.close()?;
    println!(
        "stress: done: {power_losses} power losses, {process_crashes} process crashes survived"
    );
    Ok(Status::Success)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every draw, for every profile, is accepted by every profile of the
    /// layout (the extra keyspaces run them), leaves the profile's own
    /// settings alone, and the same seed draws the same options.
    #[test]
    fn drawn_store_options_validate_and_keep_the_profile() {
        let defaults = Options::default();
        for &profile in Profile::ALL {
            let layout = profile.options().layout;
            for seed in 0..40 {
                let drawn = draw_store_options(profile, &[], &mut StdRng::seed_from_u64(seed));
                let again = draw_store_options(profile, &[], &mut StdRng::seed_from_u64(seed));
                assert_eq!(drawn, again);
                for &other in Profile::ALL.iter().filter(|p| p.options().layout == layout) {
                    let mut options = other.options();
                    apply_overrides(&mut options, &drawn)
                        .unwrap_or_else(|e| panic!("{profile} draw {drawn:?} on {other}: {e}"));
                }
                let own = profile.options();
                for spec in &drawn {
                    let name = spec.split('=').next().unwrap();
                    assert_eq!(own.get(name), defaults.get(name), "{profile}: {spec}");
                }
            }
        }
        // The user's options win.
        let user = vec!["compaction_threads=3".to_string()];
        let drawn = draw_store_options(Profile::Default, &user, &mut StdRng::seed_from_u64(1));
        assert!(!drawn.iter().any(|o| o.starts_with("compaction_threads=")));
        assert!(!drawn.is_empty());
    }
}
