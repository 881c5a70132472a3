//! `thicket bench` arguments and the settings one engine run gets.

use std::path::PathBuf;

use clap::{Args, Subcommand};
use serde::{Deserialize, Serialize};

use super::crosscheck::CrosscheckArgs;
use super::direct::DirectArgs;
use super::latency::LatencyMode;
use super::plot_bars::PlotBarsArgs;
use super::plot_sweep::PlotSweepArgs;
use super::recovery::RecoveryPhase;
use super::workload::{Distribution, Params, Workload};

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct BenchArgs {
    #[command(subcommand)]
    pub command: Option<BenchCommand>,
    /// Engines to run in turn, comma-separated: thicket, rocksdb, fjall;
    /// `thicket:PROFILE` runs ThicketDB with that profile (several may be
    /// listed, e.g. `thicket:yodb,thicket:default,rocksdb`; plain `thicket`
    /// takes `--profile`).
    #[arg(
        long,
        value_delimiter = ',',
        required_unless_present = "internal_child",
        value_name = "E"
    )]
    pub engine: Vec<String>,
    /// Workloads to run in turn, comma-separated (db_bench, YCSB, papers).
    #[arg(
        long,
        value_delimiter = ',',
        required_unless_present = "internal_child",
        value_name = "W"
    )]
    pub workload: Vec<String>,
    /// Keys loaded before the run (fill workloads: keys written).
    #[arg(long, value_name = "N", default_value_t = 1_000_000)]
    pub num: u64,
    /// Bytes per value.
    #[arg(long, value_name = "B", default_value_t = 100)]
    pub value_size: usize,
    /// Bytes per key (at least 8).
    #[arg(long, value_name = "K", default_value_t = 16)]
    pub key_size: usize,
    /// Client threads.
    #[arg(long, value_name = "T", default_value_t = 1)]
    pub threads: usize,
    /// Measured operations (default: N; fill workloads always write N).
    #[arg(long, value_name = "M")]
    pub ops: Option<u64>,
    /// Stops the measured phase after S seconds.
    #[arg(long, value_name = "S")]
    pub duration: Option<f64>,
    /// Block cache, MiB.
    #[arg(long, value_name = "C", default_value_t = 64)]
    pub cache_mb: u64,
    /// Memtable (write buffer) size, MiB.
    #[arg(long, value_name = "W", default_value_t = 64)]
    pub write_buffer_mb: u64,
    /// Block compression: none, lz4 or zstd.
    #[arg(long, default_value = "none", value_parser = ["none", "lz4", "zstd"])]
    pub compression: String,
    /// fdatasync the log on every write.
    #[arg(long)]
    pub sync: bool,
    /// Bloom filter bits per key.
    #[arg(long, value_name = "BITS", default_value_t = 10)]
    pub bloom_bits: u32,
    /// Background flush/compaction threads of every engine: RocksDB's
    /// `max_background_jobs`, fjall's workers, ThicketDB's flush thread plus
    /// N-1 compaction threads (`compaction_threads`, at least 1); in the
    /// chunked layout (`yodb`), N funk build threads
    /// (`chunk_rebalance_threads`).
    #[arg(long, value_name = "N", default_value_t = 2)]
    pub background_threads: usize,
    /// ThicketDB's search threads (SifrDB's parallel search), the caller's
    /// included: 0 is one per core, 1 the serial search (the engine's
    /// default). Peers have none.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub search_threads: usize,
    /// Reads table blocks with O_DIRECT, bypassing the page cache, so that
    /// block-cache misses cost device reads: ThicketDB's
    /// `use_direct_reads`, RocksDB's option of that name (fjall has none,
    /// so it is refused with fjall).
    #[arg(long)]
    pub direct_reads: bool,
    /// Keeps the store's data off the page cache with `O_DIRECT`: reads
    /// (as `--direct-reads`), and flush and compaction writes where the
    /// engine can (`use_direct_io_for_flush_and_compaction`: RocksDB, and
    /// ThicketDB's LSM layout).
    /// An engine without direct I/O runs buffered; each run's JSON says
    /// what was applied (`direct_io_applied`).
    #[arg(long)]
    pub direct_io: bool,
    /// Runs each engine's child (prefill and measured phase) in a memory
    /// cgroup of its own capped at SIZE (e.g. `256M`, `1G`): heap, caches
    /// and the page cache of its files together, the same cap for every
    /// engine (cgroup v2 `memory.max`, else v1 `memory.limit_in_bytes`).
    #[arg(long, value_name = "SIZE", value_parser = super::cgroup::parse_size)]
    pub memory_limit: Option<u64>,
    /// Sets `MALLOC_ARENA_MAX=N` for every engine's child (glibc's malloc,
    /// used by RocksDB's C++ and by the Rust engines alike): with the
    /// default of 8 arenas per core, the memory freed by many client and
    /// background threads stays in their arenas, and a run under a tight
    /// `--memory-limit` can be killed by that fragmentation rather than by
    /// what the engine holds.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub malloc_arenas: Option<u32>,
    /// Share of reads in ws1/ws2/ws3, zipf-simple, zipf-composite, rangehot.
    #[arg(long, value_name = "R", default_value_t = 0.5)]
    pub read_ratio: f64,
    /// Entries per range read: seekrandom (default 1), e (maximum, default
    /// 100), rangehot (default: point reads), zipf-simple and
    /// zipf-composite (maximum, lengths uniform from 1; default: point
    /// reads). Comma-separated lengths run each scanning workload once per
    /// length (e.g. YoDB's E10, E100, E1000: `--scan-length 10,100,1000`).
    #[arg(long, value_name = "L", value_delimiter = ',')]
    pub scan_length: Vec<usize>,
    /// Draws the keys of the YCSB mixes (a, b, c, e, f, p) from a YoDB
    /// distribution, zipf-simple or zipf-composite (θ 0.8), instead of
    /// YCSB's: the store is loaded in key order, and e's inserts become
    /// puts of drawn keys (YoDB's evaluation: `--workload p,a,c,e
    /// --distribution zipf-composite`).
    #[arg(long, value_name = "D", value_parser = ["zipf-simple", "zipf-composite"])]
    pub distribution: Option<String>,
    /// rangehot: share of the key space in the hot range.
    #[arg(long, value_name = "F", default_value_t = 0.15)]
    pub hot_fraction: f64,
    /// rangehot: one extra thread writes uniformly at this many operations
    /// per second while `--threads` threads only read (LSbM's setup).
    #[arg(long, value_name = "OPS")]
    pub write_rate: Option<f64>,
    /// rangehot with `--write-rate`: the reader threads together read at
    /// most this many times per second (each its share, paced as the
    /// writer), so a miss is a visible share of a second's reads as in the
    /// paper's disk-bound readers (LSbM's Figure 8); unpaced without it.
    #[arg(long, value_name = "OPS")]
    pub read_rate: Option<f64>,
    /// L1's target size, MiB (ThicketDB's and RocksDB's
    /// `max_bytes_for_level_base`; default: each profile's, RocksDB's).
    /// ThicketDB then keeps it and its L0 counts as configured
    /// (`level_sizing_from_memtable=false`).
    /// fjall has no such setting, so it is refused with fjall.
    #[arg(long, value_name = "MB")]
    pub level_base_mb: Option<u64>,
    /// Target table size, KiB (ThicketDB's `target_table_size`, RocksDB's
    /// `target_file_size_base`; default: each profile's, RocksDB's).
    /// Refused with fjall, as `--level-base-mb`.
    #[arg(long, value_name = "KB")]
    pub table_size_kb: Option<u64>,
    /// Seed of every generator.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Times every measured operation (`on`), one in N (`1/N`) or none
    /// (`off`: throughput only, no clock read per operation).
    #[arg(long, value_name = "on|off|1/N", default_value = "on")]
    pub latency: LatencyMode,
    /// After the prefill, waits until the engine has no flush or compaction
    /// pending or running before measuring (not timed).
    #[arg(long)]
    pub settle: bool,
    /// A ThicketDB option set after the profile's and the shared settings
    /// (repeatable), for one technique's ablation (e.g. `triad_mem=true`
    /// on `--profile default`); other engines ignore it.
    /// `PROFILE:NAME=VALUE` sets it for that profile's runs only (e.g.
    /// `yodb:munk_cache_bytes=25165824` beside `thicket:default`).
    #[arg(long, value_name = "NAME=VALUE")]
    pub thicket_option: Vec<String>,
    /// Writes `{"runs": [...]}` to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// A run that fails (e.g. killed by the memory cap) is recorded in the
    /// JSON's `failed_runs` and the others still run; the command fails at
    /// the end. Without it the first failure ends the command.
    #[arg(long)]
    pub keep_going: bool,
    /// Internal: run one engine with these JSON settings and print the
    /// result (the parent re-executes itself with this).
    #[arg(long, hide = true, value_name = "JSON", exclusive = true)]
    pub internal_child: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Plots throughput over time and latency CDFs, one line per run.
    Plot {
        /// A `--json` result file.
        input: PathBuf,
        /// The SVG to write.
        #[arg(short = 'o', long, value_name = "FILE.svg")]
        output: PathBuf,
        /// Plots this workload's runs (default: the first run's).
        #[arg(long, value_name = "W")]
        workload: Option<String>,
    },
    /// Plots one metric of one workload against the number of keys over
    /// several result files, one line per engine/profile.
    PlotSweep(PlotSweepArgs),
    /// Plots one metric as grouped bars (a group per workload or per file,
    /// a bar per engine/profile or per file), the shape of the papers'
    /// bar figures.
    PlotBars(PlotBarsArgs),
    /// The minimal loop the driver is checked against: one engine's library
    /// called directly, one clock read before and after the loop.
    Direct(DirectArgs),
    /// Runs the direct loop and the driver on every engine, alternately,
    /// and fails when the driver's ratio thicket/peer differs from the
    /// direct loop's by more than the tolerance.
    Crosscheck(CrosscheckArgs),
}

/// Everything one engine run depends on; recorded in its JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Settings {
    pub engine: String,
    /// The ThicketDB profile (null for peers).
    pub profile: Option<String>,
    pub workload: String,
    pub db: PathBuf,
    pub num: u64,
    pub ops: u64,
    pub key_size: usize,
    pub value_size: usize,
    pub threads: usize,
    pub duration_secs: Option<f64>,
    pub cache_bytes: u64,
    pub write_buffer_bytes: u64,
    pub compression: String,
    pub sync: bool,
    pub bloom_bits: u32,
    pub background_threads: usize,
    /// Absent from results written before parallel search existed.
    #[serde(default)]
    pub search_threads: usize,
    /// Absent from results written before direct reads existed.
    #[serde(default)]
    pub direct_reads: bool,
    /// `--direct-io` (absent from results written before it existed).
    #[serde(default)]
    pub direct_io: bool,
    /// `--memory-limit` in bytes (absent when not given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_limit_bytes: Option<u64>,
    /// `--malloc-arenas` (absent when not given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub malloc_arenas: Option<u32>,
    pub read_ratio: f64,
    pub scan_length: Option<usize>,
    /// `--distribution` (absent when not given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub distribution: Option<String>,
    pub hot_fraction: f64,
    /// rangehot: the paced writer thread's operations per second.
    #[serde(default)]
    pub write_rate: Option<f64>,
    /// rangehot: the reader threads' paced reads per second, all together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_rate: Option<f64>,
    pub seed: u64,
    /// Absent from results written before these settings existed.
    #[serde(default)]
    pub latency: LatencyMode,
    #[serde(default)]
    pub settle: bool,
    /// L1 target bytes (default: each profile's own).
    #[serde(default)]
    pub level_base_bytes: Option<u64>,
    /// Target table size in bytes (default: each profile's own).
    #[serde(default)]
    pub table_bytes: Option<u64>,
    /// `--thicket-option` values, in order (absent when none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub thicket_options: Vec<String>,
    /// The recovery workload's child: load then be killed, or open the
    /// killed store (absent in recorded results).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovery_phase: Option<RecoveryPhase>,
}

/// The shape checks a run's settings must pass, from the command line or
/// in a child's settings (a child given 0 keys used to hang: its streams'
/// arithmetic assumes keys).
fn check_shape(num: u64, key_size: usize, threads: usize, background: usize) -> Result<(), String> {
    if num == 0 {
        return Err("--num must be at least 1".into());
    }
    if key_size < 8 {
        return Err("--key-size must be at least 8".into());
    }
    if threads == 0 || background == 0 {
        return Err("--threads and --background-threads must be at least 1".into());
    }
    Ok(())
}

impl Settings {
    /// Checks the settings a child was given.
    pub fn validate(&self) -> Result<(), String> {
        check_shape(
            self.num,
            self.key_size,
            self.threads,
            self.background_threads,
        )
    }

    pub fn workload(&self) -> Result<Workload, String> {
        self.workload.parse()
    }

    pub fn params(&self) -> Result<Params, String> {
        let distribution = self
            .distribution
            .as_deref()
            .map(str::parse::<Distribution>)
            .transpose()?;
        Ok(Params {
            workload: self.workload()?,
            num: self.num,
            ops: self.ops,
            threads: self.threads,
            key_size: self.key_size,
            value_size: self.value_size,
            read_ratio: self.read_ratio,
            scan_length: self.scan_length,
            hot_fraction: self.hot_fraction,
            write_rate: self.write_rate,
            read_rate: self.read_rate,
            distribution,
            seed: self.seed,
        })
    }
}

impl BenchArgs {
    /// Checks the shared settings.
    pub fn validate(&self) -> Result<(), String> {
        check_shape(
            self.num,
            self.key_size,
            self.threads,
            self.background_threads,
        )?;
        if !(0.0..=1.0).contains(&self.read_ratio) || !(0.0..=1.0).contains(&self.hot_fraction) {
            return Err("--read-ratio and --hot-fraction must be within 0..1".into());
        }
        if self.write_rate.is_some_and(|r| !(r > 0.0 && r.is_finite())) {
            return Err("--write-rate must be a positive number".into());
        }
        if self.read_rate.is_some_and(|r| !(r > 0.0 && r.is_finite())) {
            return Err("--read-rate must be a positive number".into());
        }
        if self.read_rate.is_some() && self.write_rate.is_none() {
            return Err("--read-rate paces rangehot's readers beside --write-rate's writer".into());
        }
        let sizes_set = self.level_base_mb.is_some() || self.table_size_kb.is_some();
        if sizes_set && self.engine.iter().any(|e| e == "fjall") {
            return Err("--level-base-mb and --table-size-kb: fjall has no such settings".into());
        }
        if let Some(limit) = self.memory_limit {
            let floor = (self.cache_mb + 2 * self.write_buffer_mb) << 20;
            if limit < floor {
                return Err(format!(
                    "--memory-limit {limit} bytes is below the block cache plus two memtables \
                     ({floor} bytes): every engine would be killed by the cap"
                ));
            }
        }
        if self.direct_reads && self.engine.iter().any(|e| e == "fjall") {
            return Err("--direct-reads: fjall has no direct reads".into());
        }
        for e in &self.engine {
            engine_spec(e)?;
        }
        for option in &self.thicket_option {
            if let Some((profile, _)) = scoped_option(option) {
                profile
                    .parse::<thicketdb::Profile>()
                    .map_err(|e| format!("--thicket-option {option:?}: {e}"))?;
            }
        }
        if self.scan_length.contains(&0) && self.scan_length.len() > 1 {
            return Err("--scan-length: a list of lengths takes no 0".into());
        }
        for w in &self.workload {
            let w = w.parse::<Workload>()?;
            if self.distribution.is_some() && !w.takes_distribution() {
                return Err(format!(
                    "--distribution draws the keys of the YCSB mixes a, b, c, e, f and p, not {w}'s"
                ));
            }
        }
        Ok(())
    }

    /// The scan lengths `workload` runs with, one run each: every length
    /// of `--scan-length` for a scanning workload, else the first (it has
    /// no effect there, and keeps every run's settings alike).
    pub fn scan_lengths(&self, workload: Workload) -> Vec<Option<usize>> {
        if workload.scans() && self.scan_length.len() > 1 {
            self.scan_length.iter().copied().map(Some).collect()
        } else {
            vec![self.scan_length.first().copied()]
        }
    }

    /// The settings of `engine` running `workload` (with `scan_length`) in
    /// `db`.
    pub fn settings(
        &self,
        engine: &str,
        profile: Option<&str>,
        workload: Workload,
        scan_length: Option<usize>,
        db: PathBuf,
    ) -> Settings {
        Settings {
            engine: engine.to_string(),
            profile: (engine == "thicket").then(|| profile.unwrap_or("default").to_string()),
            workload: workload.name().to_string(),
            db,
            num: self.num,
            ops: if workload.is_fill() {
                self.num
            } else {
                self.ops.unwrap_or(self.num)
            },
            key_size: self.key_size,
            value_size: self.value_size,
            threads: self.threads,
            duration_secs: self.duration,
            cache_bytes: self.cache_mb << 20,
            write_buffer_bytes: self.write_buffer_mb << 20,
            compression: self.compression.clone(),
            sync: self.sync,
            bloom_bits: self.bloom_bits,
            background_threads: self.background_threads,
            search_threads: self.search_threads,
            direct_reads: self.direct_reads,
            direct_io: self.direct_io,
            memory_limit_bytes: self.memory_limit,
            malloc_arenas: self.malloc_arenas,
            read_ratio: self.read_ratio,
            scan_length,
            distribution: self.distribution.clone(),
            hot_fraction: self.hot_fraction,
            write_rate: self.write_rate,
            read_rate: self.read_rate,
            seed: self.seed,
            latency: self.latency,
            settle: self.settle,
            level_base_bytes: self.level_base_mb.map(|mb| mb << 20),
            table_bytes: self.table_size_kb.map(|kb| kb << 10),
            thicket_options: self.thicket_option.clone(),
            recovery_phase: None,
        }
    }
}

/// An `--engine` entry: the engine, and the profile of `thicket:PROFILE`.
pub fn engine_spec(spec: &str) -> Result<(&str, Option<&str>), String> {
    match spec.split_once(':') {
        None => Ok((spec, None)),
        Some(("thicket", profile)) => {
            profile
                .parse::<thicketdb::Profile>()
                .map_err(|e| format!("--engine {spec:?}: {e}"))?;
            Ok(("thicket", Some(profile)))
        }
        Some(_) => Err(format!(
            "--engine {spec:?}: only thicket takes a profile (thicket:PROFILE)"
        )),
    }
}

/// The profile and the option of a `PROFILE:NAME=VALUE` thicket option
/// (`None` for a plain `NAME=VALUE`, even one whose value holds a colon).
pub fn scoped_option(option: &str) -> Option<(&str, &str)> {
    option
        .split_once(':')
        .filter(|(profile, _)| !profile.contains('='))
}
