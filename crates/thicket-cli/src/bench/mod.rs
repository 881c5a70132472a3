//! `thicket bench`: db_bench, YCSB and the papers' workloads on ThicketDB
//! and its peers, each engine in its own child process (see
//! `docs/benchmarks.md`).

mod args;
mod child;
mod crosscheck;
mod direct;
mod engine;
mod generators;
mod latency;
#[cfg(feature = "peers")]
mod peers;
mod plot;
mod procfs;
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
    for e in &args.engine {
        if !engine::available().contains(&e.as_str()) {
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
    };
    let settings0 = args.settings(
        "thicket",
        g.profile.as_deref(),
        Workload::FillSeq,
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
        for e in &args.engine {
            let s = args.settings(e, g.profile.as_deref(), w, dir.join(format!("{w}-{e}")));
            eprintln!("running {e} {w}");
            let r = child::run(&exe, &s).map_err(CliError::Usage)?;
            report.runs.push(r);
            if let Some(path) = &args.json {
                let text = serde_json::to_string_pretty(&report)
                    .map_err(|e| CliError::Usage(e.to_string()))?;
                std::fs::write(path, text)?;
            }
        }
    }
    print!("{}", report::table(&report.runs));
    Ok(())
}
