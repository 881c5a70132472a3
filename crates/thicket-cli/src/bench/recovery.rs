//! The recovery workload: open time after a crash. A child loads the
//! store without syncing (the settings' keys, as a prefill) and reports it
//! is done; the parent kills it with SIGKILL, so nothing is closed,
//! flushed or checkpointed past what the engine did on its own; then a
//! fresh child times the open of the killed store and one get.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::Stdio;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::args::Settings;
use super::child;
use super::engine;
use super::procfs;
use super::report::{Recovery, RunResult};
use super::runner;
use super::workload::{prefill_order, prefill_streams, KeySpace, Op, Shared};

/// Which child of the recovery workload a settings JSON starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RecoveryPhase {
    /// Load the store, report, wait to be killed.
    Load,
    /// Open the killed store and read one key.
    Open,
}

/// The line the loading child prints when its writes are done.
const LOADED_PREFIX: &str = "thicket-bench-loaded ";

/// What the loading child wrote.
#[derive(Debug, Serialize, Deserialize)]
struct Loaded {
    keys: u64,
    bytes: u64,
    seconds: f64,
}

/// SIGKILL's number.
const SIGKILL: i32 = 9;

/// The loading child: loads, reports, then blocks on its stdin until the
/// parent kills it. It never closes the store; should the parent die
/// first, stdin's end makes it exit without closing either.
pub fn load(s: &Settings) -> Result<Infallible, String> {
    let engine = engine::open(s)?;
    let seconds = runner::load(&*engine, s)?;
    let space = KeySpace::new(&s.params()?);
    let loaded = Loaded {
        keys: space.count,
        bytes: space.logical_bytes(space.count),
        seconds,
    };
    let line = serde_json::to_string(&loaded).map_err(|e| e.to_string())?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{LOADED_PREFIX}{line}")
        .and_then(|()| out.flush())
        .map_err(|e| format!("reporting the load: {e}"))?;
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
    std::process::exit(1)
}

/// The opening child: times the open of the killed store and a get of the
/// first key loaded, then closes it (not timed).
pub fn open(s: &Settings) -> Result<RunResult, String> {
    let p = s.params()?;
    let space = KeySpace::new(&p);
    let order = prefill_order(&p, &space);
    let first = prefill_streams(&p, &space, &order)
        .into_iter()
        .next()
        .and_then(|mut stream| stream.next(&Shared::default()));
    let Some(Op::Put(first)) = first else {
        return Err("the recovery load wrote no key".into());
    };
    let mut key = Vec::new();
    space.key_into(&mut key, first);

    let writes_before = procfs::write_bytes()?;
    let reads_before = procfs::read_counters()?;
    let start = Instant::now();
    let engine = engine::open(s)?;
    let open_seconds = start.elapsed().as_secs_f64();
    let reads = procfs::read_counters()?.since(reads_before);
    let start = Instant::now();
    let found = engine.get(&key)?;
    let first_get_seconds = start.elapsed().as_secs_f64();
    engine.close()?;
    let device_write_bytes = procfs::write_bytes()?.saturating_sub(writes_before);

    let seconds = open_seconds + first_get_seconds;
    let logical_bytes = space.logical_bytes(space.count);
    let space_bytes = procfs::disk_usage(&s.db)?;
    Ok(RunResult {
        engine: s.engine.clone(),
        profile: s.profile.clone(),
        workload: s.workload.clone(),
        ops: 1,
        seconds,
        ops_per_sec: 1.0 / seconds.max(1e-9),
        mb_per_sec: 0.0,
        op_counts: BTreeMap::from([("get".to_string(), 1)]),
        found: u64::from(found.is_some()),
        not_found: u64::from(found.is_none()),
        entries_read: 0,
        latency_us: None,
        latency_by_op: BTreeMap::new(),
        latency_cdf: Vec::new(),
        user_bytes_written: 0,
        device_write_bytes,
        device_write_amplification: None,
        engine_write_bytes: None,
        engine_write_amplification: None,
        fsyncs: None,
        read_amplification: None,
        flush_bytes_written: None,
        compaction_bytes_written: None,
        device_read_bytes: reads.device_bytes,
        read_syscalls: reads.syscalls,
        read_syscall_bytes: reads.syscall_bytes,
        device_read_bytes_per_get: None,
        read_syscalls_per_get: None,
        read_syscall_bytes_per_get: None,
        chunk_get_shares: None,
        major_faults: None,
        device_read_ops: None,
        device_write_ops: None,
        device_read_ops_per_get: None,
        memory_cap: None,
        direct_io_applied: engine::direct_io_applied(s),
        mechanism_counters: None,
        engine_stats: None,
        recovery: Some(Recovery {
            loaded_keys: 0,
            loaded_bytes: 0,
            load_seconds: 0.0,
            store_bytes_at_kill: 0,
            open_seconds,
            first_get_seconds,
            first_get_found: found.is_some(),
            open_device_read_bytes: reads.device_bytes,
            open_read_syscalls: reads.syscalls,
            open_read_syscall_bytes: reads.syscall_bytes,
            open_vs_rocksdb: None,
        }),
        live_keys: space.count,
        logical_bytes,
        space_bytes,
        space_amplification: (logical_bytes > 0).then(|| space_bytes as f64 / logical_bytes as f64),
        peak_space_bytes: None,
        peak_space_amplification: None,
        peak_rss_bytes: procfs::peak_rss()?,
        block_cache_hit_ratio: None,
        prefill_seconds: None,
        settle_seconds: None,
        timeline: Vec::new(),
        reader_timeline: Vec::new(),
        hit_ratio_timeline: Vec::new(),
        mechanism_timeline: Default::default(),
        settings: s.clone(),
    })
}

/// The parent: a fresh store, the loading child killed once it reports,
/// the opening child's result with the load's figures; the store is
/// removed afterwards.
pub fn run(exe: &Path, s: &Settings) -> Result<RunResult, String> {
    child::fresh_dir(&s.db)?;
    let result = load_kill_open(exe, s);
    std::fs::remove_dir_all(&s.db).map_err(|e| format!("{}: {e}", s.db.display()))?;
    result
}

fn load_kill_open(exe: &Path, s: &Settings) -> Result<RunResult, String> {
    let loaded = load_and_kill(exe, s)?;
    let store_bytes_at_kill = procfs::disk_usage(&s.db)?;
    let open = Settings {
        recovery_phase: Some(RecoveryPhase::Open),
        ..s.clone()
    };
    let mut result = child::spawn(exe, &open)?;
    result.settings = s.clone();
    let recovery = result
        .recovery
        .as_mut()
        .ok_or("the opening child reported no recovery")?;
    recovery.loaded_keys = loaded.keys;
    recovery.loaded_bytes = loaded.bytes;
    recovery.load_seconds = loaded.seconds;
    recovery.store_bytes_at_kill = store_bytes_at_kill;
    Ok(result)
}

/// Starts the loading child, waits for its report and kills it with
/// SIGKILL; fails unless it was that signal that ended it.
fn load_and_kill(exe: &Path, s: &Settings) -> Result<Loaded, String> {
    let settings = Settings {
        recovery_phase: Some(RecoveryPhase::Load),
        ..s.clone()
    };
    // The cap's group lives until the child has been killed and reaped.
    let (mut command, _group) = child::command(exe, &settings)?;
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("starting {}: {e}", exe.display()))?;
    let stdout = child
        .stdout
        .take()
        .ok_or("the loading child has no stdout")?;
    let loaded = BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .find_map(|l| l.strip_prefix(LOADED_PREFIX).map(str::to_string));
    // `Child::kill` sends SIGKILL.
    let killed = child.kill();
    let status = child
        .wait()
        .map_err(|e| format!("waiting for the loading child: {e}"))?;
    let Some(line) = loaded else {
        return Err(format!(
            "{} recovery: the loading child ended before its report ({status})",
            s.engine
        ));
    };
    killed.map_err(|e| format!("killing the loading child: {e}"))?;
    if status.signal() != Some(SIGKILL) {
        return Err(format!(
            "{} recovery: the loading child was not killed ({status})",
            s.engine
        ));
    }
    serde_json::from_str(&line).map_err(|e| format!("bad load report: {e}"))
}
