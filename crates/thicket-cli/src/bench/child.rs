//! The parent/child protocol: the parent re-executes its own binary as
//! `thicket bench --internal-child SETTINGS_JSON`, one child per engine and
//! workload, so `/proc/self/io` and the peak RSS are that engine's alone.
//! The child prints one line `RESULT_PREFIX` + result JSON on stdout.

use std::path::Path;
use std::process::{Command, Stdio};

use super::args::Settings;
use super::cgroup::{self, MemoryCgroup, CGROUP_ENV};
use super::recovery::{self, RecoveryPhase};
use super::report::RunResult;
use super::runner;
use super::workload::Workload;

pub const RESULT_PREFIX: &str = "thicket-bench-result ";

/// The child's side: run, print the result line.
pub fn serve(settings_json: &str) -> Result<(), String> {
    let settings: Settings =
        serde_json::from_str(settings_json).map_err(|e| format!("bad child settings: {e}"))?;
    settings.validate()?;
    cgroup::join_from_env()?;
    let recovery = settings.workload()? == Workload::Recovery;
    let result = match (recovery, settings.recovery_phase) {
        (true, Some(RecoveryPhase::Load)) => match recovery::load(&settings)? {},
        (true, Some(RecoveryPhase::Open)) => recovery::open(&settings)?,
        (false, None) => runner::run(&settings)?,
        (true, None) | (false, Some(_)) => {
            return Err(
                "a recovery phase goes with the recovery workload (its parent runs both)".into(),
            )
        }
    };
    let line = serde_json::to_string(&result).map_err(|e| e.to_string())?;
    println!("{RESULT_PREFIX}{line}");
    Ok(())
}

/// Empties `dir` (creating it).
pub fn fresh_dir(dir: &Path) -> Result<(), String> {
    if dir.exists() {
        std::fs::remove_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))
}

/// The parent's side: run `settings` in a child of `exe`; the store
/// directory is created fresh and removed afterwards.
pub fn run(exe: &Path, settings: &Settings) -> Result<RunResult, String> {
    fresh_dir(&settings.db)?;
    let result = spawn(exe, settings);
    let dir = &settings.db;
    std::fs::remove_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    result
}

/// The command that runs `settings` in a child of `exe`, in a new memory
/// cgroup when they carry a cap (returned with it: keep it until the child
/// has ended).
pub fn command(exe: &Path, settings: &Settings) -> Result<(Command, Option<MemoryCgroup>), String> {
    let json = serde_json::to_string(settings).map_err(|e| e.to_string())?;
    let mut command = Command::new(exe);
    command.args(["bench", "--internal-child", &json]);
    if let Some(arenas) = settings.malloc_arenas {
        command.env("MALLOC_ARENA_MAX", arenas.to_string());
    }
    let group = settings
        .memory_limit_bytes
        .map(MemoryCgroup::create)
        .transpose()?;
    if let Some(group) = &group {
        command.env(CGROUP_ENV, group.procs_file());
    }
    Ok((command, group))
}

/// Runs `settings` in a child of `exe` on the store as it is.
pub fn spawn(exe: &Path, settings: &Settings) -> Result<RunResult, String> {
    let (mut command, group) = command(exe, settings)?;
    let out = command
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("starting {}: {e}", exe.display()))?;
    let cap = group.as_ref().map(MemoryCgroup::report);
    if let Some(cap) = cap.as_ref().filter(|c| c.oom_kills.unwrap_or(0) > 0) {
        return Err(format!(
            "{} on {} was killed by the memory cap ({} bytes, peak {:?}): raise \
             --memory-limit or lower --cache-mb / --write-buffer-mb",
            settings.engine, settings.workload, cap.limit_bytes, cap.peak_bytes
        ));
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let result = stdout
        .lines()
        .find_map(|l| l.strip_prefix(RESULT_PREFIX))
        .map(serde_json::from_str::<RunResult>);
    match result {
        Some(r) if out.status.success() => {
            let mut r = r.map_err(|e| format!("bad child result: {e}"))?;
            r.memory_cap = cap;
            Ok(r)
        }
        _ => Err(format!(
            "{} on {} failed ({})",
            settings.engine, settings.workload, out.status
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(malloc_arenas: Option<u32>) -> Settings {
        serde_json::from_value(serde_json::json!({
            "engine": "thicket", "profile": "default", "workload": "fillrandom",
            "db": "/tmp/unused", "num": 1, "ops": 1,
            "key_size": 16, "value_size": 100, "threads": 1, "duration_secs": null,
            "cache_bytes": 1 << 20, "write_buffer_bytes": 1 << 20, "compression": "none",
            "sync": false, "bloom_bits": 10, "background_threads": 1,
            "read_ratio": 0.5, "scan_length": null, "hot_fraction": 0.15, "seed": 42,
            "malloc_arenas": malloc_arenas,
        }))
        .unwrap()
    }

    fn arena_env(command: &Command) -> Option<String> {
        command
            .get_envs()
            .find(|(k, _)| *k == "MALLOC_ARENA_MAX")
            .and_then(|(_, v)| v.map(|v| v.to_string_lossy().into_owned()))
    }

    #[test]
    fn malloc_arenas_reach_the_child_environment() {
        let exe = Path::new("/bin/true");
        let (with, _) = command(exe, &settings(Some(2))).unwrap();
        assert_eq!(arena_env(&with).as_deref(), Some("2"));
        let (without, _) = command(exe, &settings(None)).unwrap();
        assert_eq!(arena_env(&without), None);
    }
}
