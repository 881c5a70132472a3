//! `thicket crashtest`: runs `thicket stress` again and again, for every
//! profile, killing it with SIGKILL at a random moment (the next run on the
//! same store verifies it against the shadow first), with some runs spent on
//! the in-memory power-loss mode instead.

use std::ffi::OsString;
use std::fs::File;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use thicketdb::Profile;

use super::args::CrashtestArgs;
use crate::cli::GlobalArgs;
use crate::commands::Status;
use crate::error::{CliError, CliResult};

/// How long a stress run may take beyond its planned kill or duration
/// (startup verification included) before it counts as hung.
const GRACE: Duration = Duration::from_secs(300);

struct Driver<'a> {
    exe: PathBuf,
    root: PathBuf,
    args: &'a CrashtestArgs,
    g: &'a GlobalArgs,
}

#[derive(Default)]
struct Totals {
    kills: u64,
    clean_exits: u64,
    power_loss_runs: u64,
    power_loss_cycles: u64,
    checkpoints: u64,
}

/// Checkpoints a run verified, by its log's lines.
fn checkpoints_verified(log: &Path) -> u64 {
    std::fs::read_to_string(log).map_or(0, |text| {
        text.lines()
            .filter(|l| l.starts_with("stress: checkpoint ") && l.ends_with(" verified"))
            .count() as u64
    })
}

impl Driver<'_> {
    /// Runs `thicket <args>`, output to `log`, waiting at most `limit`.
    /// `args` hold every `--option` (`stress_args`), so that a failure's
    /// command line replays the run.
    fn run(&self, args: &[OsString], log: &Path, limit: Duration) -> CliResult<ExitStatus> {
        let out = File::create(log)?;
        let mut cmd = Command::new(&self.exe);
        cmd.args(args);
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(out.try_clone()?)
            .stderr(out)
            .spawn()?;
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = child.try_wait()? {
                return Ok(status);
            }
            if Instant::now() >= deadline {
                let _ = child.kill();
                let _ = child.wait();
                return Err(self.failure(args, log, "hung (killed after the time limit)"));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    fn failure(&self, args: &[OsString], log: &Path, what: &str) -> CliError {
        let output = std::fs::read_to_string(log).unwrap_or_default();
        let tail: Vec<&str> = output.lines().rev().take(40).collect();
        for line in tail.iter().rev() {
            eprintln!("  | {line}");
        }
        let cmd: Vec<String> = args
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        CliError::Usage(format!(
            "crashtest: `{} {}` {what}; stores kept in {}",
            self.exe.display(),
            cmd.join(" "),
            self.root.display()
        ))
    }

    /// `thicket stress` for `profile` with the user's `--option`s, then
    /// the store's drawn ones (`--random-options`).
    fn stress_args(&self, profile: Profile, drawn: &[String], seed: u64) -> Vec<OsString> {
        let mut a: Vec<OsString> = vec!["stress".into(), "--profile".into(), profile.name().into()];
        for o in self.g.options.iter().chain(drawn) {
            a.push("--option".into());
            a.push(o.into());
        }
        for (flag, value) in [
            ("--seed", seed.to_string()),
            ("--threads", self.args.threads.to_string()),
            ("--keys", self.args.keys.to_string()),
            ("--keyspaces", self.args.keyspaces.to_string()),
        ] {
            a.push(flag.into());
            a.push(value.into());
        }
        a
    }

    /// One SIGKILL cycle on the profile's store; returns whether the run was killed (false: it
    /// finished first) and the checkpoints it verified.
    fn kill_cycle(
        &self,
        profile: Profile,
        drawn: &[String],
        rng: &mut StdRng,
    ) -> CliResult<(bool, u64)> {
        let dir = self.root.join(profile.name());
        let kill_ms = rng.random_range(10..=self.args.max_kill_ms.max(10));
        // Now and then let the run end cleanly before the kill.
        let duration = if rng.random_bool(0.1) {
            kill_ms as f64 / 2000.0
        } else {
            kill_ms as f64 / 1000.0 + 3600.0
        };
        let sync = [0.0, 0.05, 0.5][rng.random_range(0..3)];
        let mut args = self.stress_args(profile, drawn, rng.random());
        for (flag, value) in [
            ("--duration", format!("{duration:.3}")),
            ("--kill-after-ms", kill_ms.to_string()),
            ("--sync-fraction", sync.to_string()),
        ] {
            args.push(flag.into());
            args.push(value.into());
        }
        if self.args.checkpoint_fraction > 0.0 {
            args.push("--checkpoint-fraction".into());
            args.push(self.args.checkpoint_fraction.to_string().into());
        }
        args.push("--db".into());
        args.push(dir.clone().into());
        let log = self.root.join(format!("{}.log", profile.name()));
        let limit = Duration::from_millis(kill_ms) + GRACE;
        let status = self.run(&args, &log, limit)?;
        let killed = match (status.signal(), status.success()) {
            (Some(9), _) => true,
            (None, true) => false,
            _ => return Err(self.failure(&args, &log, &format!("failed: {status}"))),
        };
        if killed && !dir.join("CURRENT").exists() {
            // Killed before it created the store (a loaded machine can be
            // that slow to start): there is no store to check, and the next
            // run creates it afresh.
            return Ok((killed, 0));
        }
        // The store a kill leaves must pass a full checksum check.
        thicketdb::check::check_store(&dir).map_err(|e| {
            self.failure(&args, &log, &format!("left a store that fails check: {e}"))
        })?;
        Ok((killed, checkpoints_verified(&log)))
    }

    fn power_loss_run(
        &self,
        profile: Profile,
        drawn: &[String],
        rng: &mut StdRng,
    ) -> CliResult<()> {
        let mut args = self.stress_args(profile, drawn, rng.random());
        let duration = rng.random_range(0.5..3.0);
        for (flag, value) in [
            (
                "--power-loss-cycles",
                self.args.power_loss_cycles.to_string(),
            ),
            ("--duration", format!("{duration:.3}")),
            (
                "--sync-fraction",
                ["0.01", "0.1", "0.5"][rng.random_range(0..3)].to_string(),
            ),
        ] {
            args.push(flag.into());
            args.push(value.into());
        }
        let log = self.root.join(format!("{}-power-loss.log", profile.name()));
        let status = self.run(&args, &log, Duration::from_secs_f64(duration) + GRACE)?;
        if !status.success() {
            return Err(self.failure(&args, &log, &format!("failed: {status}")));
        }
        Ok(())
    }

    /// Moves the profile's store, shadow and logs to `aside`.
    fn set_aside(&self, profile: Profile, aside: &Path) -> CliResult<()> {
        std::fs::create_dir_all(aside)?;
        let name = profile.name();
        for file in [
            name.to_string(),
            format!("{name}.expected"),
            format!("{name}.log"),
            format!("{name}-power-loss.log"),
            format!("{name}.checkpoints"),
        ] {
            let from = self.root.join(&file);
            if from.exists() {
                std::fs::rename(&from, aside.join(&file))?;
            }
        }
        Ok(())
    }

    /// A final verification-only run on each store.
    fn verify_all(&self, profiles: &[Profile], drawn: &[Vec<String>]) -> CliResult<()> {
        for (&p, drawn) in profiles.iter().zip(drawn) {
            let dir = self.root.join(p.name());
            if !dir.exists() {
                continue;
            }
            let mut args = self.stress_args(p, drawn, 0);
            args.extend(["--duration".into(), "0".into(), "--db".into(), dir.into()]);
            let log = self.root.join(format!("{}-final.log", p.name()));
            let status = self.run(&args, &log, GRACE)?;
            if !status.success() {
                return Err(self.failure(&args, &log, &format!("failed: {status}")));
            }
        }
        Ok(())
    }
}

pub fn run(g: &GlobalArgs, args: &CrashtestArgs) -> CliResult<Status> {
    let seed = super::seed_of(args.seed);
    let mut rng = StdRng::seed_from_u64(seed);
    let profiles: Vec<Profile> = match g.profile.as_deref() {
        Some(p) => vec![p.parse()?],
        None => Profile::ALL.to_vec(),
    };
    if g.db.is_some() {
        return Err(CliError::Usage(
            "crashtest makes its own stores: use --root DIR, not --db".into(),
        ));
    }
    let (root, temporary) = match &args.root {
        Some(r) => (r.clone(), false),
        None => (
            std::env::temp_dir().join(format!("thicket-crashtest-{}-{seed}", std::process::id())),
            true,
        ),
    };
    std::fs::create_dir_all(&root)?;
    let exe = match &args.thicket {
        Some(p) => p.clone(),
        None => std::env::current_exe()?,
    };
    let names: Vec<&str> = profiles.iter().map(|p| p.name()).collect();
    println!(
        "crashtest: seed {seed}, profiles {}, stores in {}",
        names.join(","),
        root.display()
    );
    let driver = Driver {
        exe,
        root: root.clone(),
        args,
        g,
    };
    // The options each store keeps for its life (`--random-options`).
    let draw = |p: Profile, rng: &mut StdRng| -> Vec<String> {
        if !args.random_options {
            return Vec::new();
        }
        let drawn = super::draw_store_options(p, &g.options, rng);
        println!("crashtest: {} store options: {}", p.name(), drawn.join(" "));
        drawn
    };
    let mut drawn: Vec<Vec<String>> = profiles.iter().map(|&p| draw(p, &mut rng)).collect();
    let started = Instant::now();
    let deadline = started + Duration::from_secs_f64(args.duration.max(0.0));
    let mut totals = Totals::default();
    let mut per_profile = vec![0u64; profiles.len()];
    let mut last_report = started;
    let mut n = 0usize;
    let mut failures = Vec::new();
    while Instant::now() < deadline && args.cycles.is_none_or(|c| totals.kills < c) {
        let k = n % profiles.len();
        n += 1;
        let outcome = if rng.random_bool(args.power_loss_fraction.clamp(0.0, 1.0)) {
            driver
                .power_loss_run(profiles[k], &drawn[k], &mut rng)
                .map(|()| {
                    totals.power_loss_runs += 1;
                    totals.power_loss_cycles += u64::from(args.power_loss_cycles);
                })
        } else {
            driver
                .kill_cycle(profiles[k], &drawn[k], &mut rng)
                .map(|(killed, checkpoints)| {
                    totals.checkpoints += checkpoints;
                    if killed {
                        totals.kills += 1;
                        per_profile[k] += 1;
                    } else {
                        totals.clean_exits += 1;
                    }
                })
        };
        match outcome {
            Err(e) if args.keep_going => {
                let aside = root.join(format!("failed-{}", failures.len()));
                eprintln!("crashtest: {e} (set aside in {})", aside.display());
                driver.set_aside(profiles[k], &aside)?;
                failures.push(e.to_string());
                drawn[k] = draw(profiles[k], &mut rng);
            }
            outcome => outcome?,
        }
        if last_report.elapsed() >= Duration::from_secs(10) {
            last_report = Instant::now();
            println!(
                "crashtest: {:.0} s: {} kills, {} clean exits, {} power-loss cycles",
                started.elapsed().as_secs_f64(),
                totals.kills,
                totals.clean_exits,
                totals.power_loss_cycles
            );
        }
    }
    driver.verify_all(&profiles, &drawn)?;
    if !failures.is_empty() {
        return Err(CliError::Usage(format!(
            "crashtest: {} failing runs among {} SIGKILL cycles and {} power-loss cycles (seed {seed}); first: {}",
            failures.len(),
            totals.kills,
            totals.power_loss_cycles,
            failures[0]
        )));
    }
    let per: Vec<String> = names
        .iter()
        .zip(&per_profile)
        .map(|(name, k)| format!("{name}={k}"))
        .collect();
    println!(
        "crashtest: passed: {} SIGKILL cycles ({}), {} clean exits, {} power-loss cycles in {} runs, {} checkpoints verified, {:.0} s, seed {seed}",
        totals.kills,
        per.join(" "),
        totals.clean_exits,
        totals.power_loss_cycles,
        totals.power_loss_runs,
        totals.checkpoints,
        started.elapsed().as_secs_f64()
    );
    if temporary {
        std::fs::remove_dir_all(&root)?;
    }
    Ok(Status::Success)
}
