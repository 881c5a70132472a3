//! `thicket bench`: db_bench, YCSB and the papers' workloads on ThicketDB
//! and its peers, each engine in its own child process (see
//! `docs/benchmarks.md`).

mod args;
mod cgroup;
mod child;
mod crosscheck;
mod direct;
mod engine;
mod generators;
mod latency;
mod mechanisms;
#[cfg(feature = "peers")]
mod peers;
mod plot;
mod plot_bars;
mod plot_sweep;
mod procfs;
mod recovery;
mod report;
mod runner;
mod workload;

use std::time::{SystemTime, UNIX_EPOCH};

pub use args::{BenchArgs, BenchCommand};

use crate::cli::GlobalArgs;
use crate::error::{CliError, CliResult};
use report::Report;
use workload::Workload;

/// The direct loop sets every engine's options by hand, mirroring what the
/// driver gives `default` (that is what the cross-check compares), so a
/// global `--profile` or `--option` would be silently ignored: refuse it.
fn refuse_store_options(g: &GlobalArgs, command: &str) -> CliResult<()> {
    if g.profile.is_some() || !g.options.is_empty() {
        return Err(CliError::Usage(format!(
            "{command} runs ThicketDB's default profile with fixed options \
             (docs/benchmarks.md, \"Cross-check\"): --profile and --option are not applied"
        )));
    }
    Ok(())
}

pub fn run(g: &GlobalArgs, args: BenchArgs) -> CliResult<()> {
    match &args.command {
        Some(BenchCommand::Plot {
            input,
            output,
            workload,
        }) => return plot::plot(input, output, workload.as_deref()).map_err(CliError::Usage),
        Some(BenchCommand::PlotSweep(a)) => {
            return plot_sweep::plot_sweep(a).map_err(CliError::Usage)
        }
        Some(BenchCommand::PlotBars(a)) => return plot_bars::plot_bars(a).map_err(CliError::Usage),
        Some(BenchCommand::Direct(a)) => {
            refuse_store_options(g, "bench direct")?;
            return direct::serve(a, crate::commands::db_dir(g)?).map_err(CliError::Usage);
        }
        Some(BenchCommand::Crosscheck(a)) => {
            refuse_store_options(g, "bench crosscheck")?;
            let exe = std::env::current_exe()?;
            let text =
                crosscheck::run(a, &exe, crate::commands::db_dir(g)?).map_err(CliError::Usage)?;
            print!("{text}");
            return Ok(());
        }
        None => {}
    }
    if let Some(json) = &args.internal_child {
        return child::serve(json).map_err(CliError::Usage);
    }
    if !g.options.is_empty() {
        return Err(CliError::Usage(
            "bench applies the same settings to every engine: use its flags, not --option".into(),
        ));
    }
    args.validate().map_err(CliError::Usage)?;
    for spec in &args.engine {
        let (e, _) = args::engine_spec(spec).map_err(CliError::Usage)?;
        if !engine::available().contains(&e) {
            return Err(CliError::Usage(format!(
                "engine {e:?} is not available in this build (available: {}; peers need --features peers)",
                engine::available().join(", ")
            )));
        }
    }
    let dir = crate::commands::db_dir(g)?;
    let exe = std::env::current_exe()?;
    let mut report = Report {
        command: std::env::args().collect(),
        unix_time: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
        runs: Vec::new(),
        failed_runs: Vec::new(),
    };
    let settings0 = args.settings(
        "thicket",
        g.profile.as_deref(),
        Workload::FillSeq,
        None,
        dir.into(),
    );
    eprintln!(
        "settings: memtable {} MiB, block cache {} MiB, compression {}, sync {}, bloom {} bits/key, \
         {} client thread(s), {} background thread(s), {} keys of {}+{} bytes, latency {}{}",
        settings0.write_buffer_bytes >> 20,
        settings0.cache_bytes >> 20,
        settings0.compression,
        settings0.sync,
        settings0.bloom_bits,
        settings0.threads,
        settings0.background_threads,
        settings0.num,
        settings0.key_size,
        settings0.value_size,
        settings0.latency,
        if settings0.settle {
            ", reads on settled trees"
        } else {
            ""
        },
    );
    for w in &args.workload {
        let w: Workload = w.parse().map_err(CliError::Usage)?;
        let lengths = args.scan_lengths(w);
        let several_lengths = lengths.len() > 1;
        for scan_length in lengths {
            for spec in &args.engine {
                let (e, profile) = args::engine_spec(spec).map_err(CliError::Usage)?;
                let profile = profile.or(g.profile.as_deref());
                let name = match scan_length.filter(|_| several_lengths) {
                    Some(len) => format!("{w}-L{len}-{}", spec.replace(':', "-")),
                    None => format!("{w}-{}", spec.replace(':', "-")),
                };
                eprintln!("running {name}");
                let s = args.settings(e, profile, w, scan_length, dir.join(name));
                let r = if w == Workload::Recovery {
                    recovery::run(&exe, &s)
                } else {
                    child::run(&exe, &s)
                };
                match r {
                    Ok(r) => report.runs.push(r),
                    Err(error) if args.keep_going => {
                        eprintln!("failed: {error}");
                        report.failed_runs.push(report::FailedRun {
                            engine: s.engine.clone(),
                            profile: s.profile.clone(),
                            workload: s.workload.clone(),
                            scan_length: s.scan_length,
                            error,
                        });
                    }
                    Err(error) => return Err(CliError::Usage(error)),
                }
                report::link_recovery_ratios(&mut report.runs);
                if let Some(path) = &args.json {
                    let text = serde_json::to_string_pretty(&report)
                        .map_err(|e| CliError::Usage(e.to_string()))?;
                    std::fs::write(path, text)?;
                }
            }
        }
    }
    print!("{}", report::table(&report.runs));
    match report.failed_runs.as_slice() {
        [] => Ok(()),
        failed => Err(CliError::Usage(format!(
            "{} run(s) failed: {}",
            failed.len(),
            failed
                .iter()
                .map(|f| format!("{} on {}: {}", f.engine, f.workload, f.error))
                .collect::<Vec<_>>()
                .join("; ")
        ))),
    }
}
