//! The parent/child protocol: the parent re-executes its own binary as
//! `thicket bench --internal-child SETTINGS_JSON`, one child per engine and
//! workload, so `/proc/self/io` and the peak RSS are that engine's alone.
//! The child prints one line `RESULT_PREFIX` + result JSON on stdout.

use std::path::Path;
use std::process::{Command, Stdio};

use super::args::Settings;
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

/// Runs `settings` in a child of `exe` on the store as it is.
pub fn spawn(exe: &Path, settings: &Settings) -> Result<RunResult, String> {
    let json = serde_json::to_string(settings).map_err(|e| e.to_string())?;
    let out = Command::new(exe)
        .args(["bench", "--internal-child", &json])
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("starting {}: {e}", exe.display()))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let result = stdout
        .lines()
        .find_map(|l| l.strip_prefix(RESULT_PREFIX))
        .map(serde_json::from_str::<RunResult>);
    match result {
        Some(r) if out.status.success() => r.map_err(|e| format!("bad child result: {e}")),
        _ => Err(format!(
            "{} on {} failed ({})",
            settings.engine, settings.workload, out.status
        )),
    }
}
