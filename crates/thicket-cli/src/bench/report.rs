//! Run results: the JSON contract and the comparison table.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use super::args::Settings;
use super::cgroup::MemoryCapReport;
use super::engine::{ChunkGets, DirectIo};
use super::workload::Workload;

/// Latency percentiles, microseconds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    pub count: u64,
    pub p50: f64,
    pub p95: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
}

impl Latency {
    /// From a histogram of nanoseconds.
    pub fn from_histogram(h: &Histogram<u64>) -> Latency {
        let us = |q: f64| h.value_at_quantile(q) as f64 / 1000.0;
        Latency {
            count: h.len(),
            p50: us(0.5),
            p95: us(0.95),
            p99: us(0.99),
            p999: us(0.999),
            max: h.max() as f64 / 1000.0,
        }
    }
}

/// Points of the latency CDF: (quantile, microseconds).
pub fn cdf(h: &Histogram<u64>) -> Vec<(f64, f64)> {
    const QUANTILES: &[f64] = &[
        0.0, 0.01, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.98, 0.99, 0.995,
        0.999, 0.9995, 0.9999, 1.0,
    ];
    if h.is_empty() {
        return Vec::new();
    }
    QUANTILES
        .iter()
        .map(|&q| (q, h.value_at_quantile(q) as f64 / 1000.0))
        .collect()
}

/// One engine running one workload.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunResult {
    pub engine: String,
    pub profile: Option<String>,
    pub workload: String,
    /// Measured operations completed.
    pub ops: u64,
    pub seconds: f64,
    pub ops_per_sec: f64,
    /// Key and value bytes written or read per second.
    pub mb_per_sec: f64,
    /// Operations per kind (get, put, insert, scan, rmw, next).
    pub op_counts: BTreeMap<String, u64>,
    /// Point reads (gets and the read of read-modify-write) that found / did
    /// not find their key.
    pub found: u64,
    pub not_found: u64,
    /// Entries returned by scans and sequential reads.
    pub entries_read: u64,
    /// All timed operations (null with `--latency off`).
    pub latency_us: Option<Latency>,
    pub latency_by_op: BTreeMap<String, Latency>,
    /// (quantile, µs) points of all operations' latency.
    pub latency_cdf: Vec<(f64, f64)>,
    /// Key plus value bytes of the measured writes.
    pub user_bytes_written: u64,
    /// `/proc/self/io` write_bytes from the start of the measured phase to
    /// the engine's close.
    pub device_write_bytes: u64,
    pub device_write_amplification: Option<f64>,
    /// The engine's own count of bytes written (log, tables, metadata).
    pub engine_write_bytes: Option<u64>,
    pub engine_write_amplification: Option<f64>,
    pub fsyncs: Option<u64>,
    /// Blocks read from files per point lookup in the measured phase
    /// (ThicketDB: table blocks and log fragments; RocksDB: its perf
    /// context's block reads); null for engines without the counts.
    #[serde(default)]
    pub read_amplification: Option<f64>,
    /// Bytes flushes and compactions wrote since the engine opened (the
    /// prefill included); null for engines without the counts.
    #[serde(default)]
    pub flush_bytes_written: Option<u64>,
    #[serde(default)]
    pub compaction_bytes_written: Option<u64>,
    /// `/proc/self/io` over the measured phase, in the child that runs
    /// only this engine (its background threads included): bytes read
    /// from the device (`read_bytes`), read system calls (`syscr`) and
    /// the bytes they returned from the page cache or the device
    /// (`rchar`). Absent from results written before they existed.
    #[serde(default)]
    pub device_read_bytes: u64,
    #[serde(default)]
    pub read_syscalls: u64,
    #[serde(default)]
    pub read_syscall_bytes: u64,
    /// The same per point read (gets and read-modify-writes' reads; null
    /// without point reads): YoDB's Table 3 read amplification.
    #[serde(default)]
    pub device_read_bytes_per_get: Option<f64>,
    #[serde(default)]
    pub read_syscalls_per_get: Option<f64>,
    #[serde(default)]
    pub read_syscall_bytes_per_get: Option<f64>,
    /// Where ThicketDB's chunked layout served the measured gets (YoDB's
    /// Figure 4a); null for peers, the LSM layout and runs without gets.
    #[serde(default)]
    pub chunk_get_shares: Option<ChunkGetShares>,
    /// Major page faults of the child over the measured phase (null in
    /// results written before they were counted).
    #[serde(default)]
    pub major_faults: Option<u64>,
    /// Read and write requests the store's block device completed over
    /// the measured phase (the device's own counters: every process on
    /// it; null where the store is not on a block device).
    #[serde(default)]
    pub device_read_ops: Option<u64>,
    #[serde(default)]
    pub device_write_ops: Option<u64>,
    #[serde(default)]
    pub device_read_ops_per_get: Option<f64>,
    /// `--memory-limit`: the cap and what its cgroup saw over the whole
    /// child, prefill included (absent without a cap).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_cap: Option<MemoryCapReport>,
    /// What `--direct-reads` / `--direct-io` gave this engine.
    #[serde(default)]
    pub direct_io_applied: DirectIo,
    /// The counters that show each technique acted
    /// (`bench/mechanisms.rs`), picked from `engine_stats`; null for peers.
    #[serde(default)]
    pub mechanism_counters: Option<BTreeMap<String, BTreeMap<String, serde_json::Value>>>,
    /// Every statistic of the engine at the end of the measured phase
    /// (ThicketDB: `thicket stats --json`); null for peers.
    #[serde(default)]
    pub engine_stats: Option<serde_json::Value>,
    /// The recovery workload's figures (absent for other workloads).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovery: Option<Recovery>,
    /// Keys live at the end.
    pub live_keys: u64,
    pub logical_bytes: u64,
    /// `du` of the store after close.
    pub space_bytes: u64,
    pub space_amplification: Option<f64>,
    /// The largest `du` of the store seen during the measured phase
    /// (sampled every 100 ms) and after close: the space a compaction
    /// reserves (SifrDB's Figure 9c). Absent in older reports.
    #[serde(default)]
    pub peak_space_bytes: Option<u64>,
    /// `peak_space_bytes` over the live keys' key+value bytes at the end.
    #[serde(default)]
    pub peak_space_amplification: Option<f64>,
    pub peak_rss_bytes: u64,
    pub block_cache_hit_ratio: Option<f64>,
    /// Seconds spent loading the store before the measured phase.
    pub prefill_seconds: Option<f64>,
    /// Seconds spent waiting for background work after the prefill
    /// (`--settle`).
    pub settle_seconds: Option<f64>,
    /// Operations completed in each second of the measured phase (the last,
    /// partial second scaled to a full one).
    pub timeline: Vec<u64>,
    /// With a writer thread (readwhilewriting, rangehot with
    /// `--write-rate`): operations of the other threads in each second.
    #[serde(default)]
    pub reader_timeline: Vec<u64>,
    /// Block-cache hit ratio in each second of the measured phase (null
    /// for a second without lookups; empty for engines without counters).
    #[serde(default)]
    pub hit_ratio_timeline: Vec<Option<f64>>,
    /// The techniques' counters (`mechanism_counters`' names) at the end of
    /// each second of the measured phase, those that changed (empty for
    /// peers).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub mechanism_timeline: BTreeMap<String, Vec<serde_json::Value>>,
    pub settings: Settings,
}

/// Shares of the chunked layout's gets, by the component that answered:
/// the munk, the row cache, the chunk's log, its table (or none: a miss).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ChunkGetShares {
    pub gets: u64,
    pub munk: f64,
    pub row_cache: f64,
    pub log: f64,
    pub table: f64,
}

impl ChunkGetShares {
    /// The shares of `gets`, `None` when there were none.
    pub fn of(gets: ChunkGets) -> Option<ChunkGetShares> {
        let total = gets.total();
        let share = |n: u64| n as f64 / total as f64;
        (total > 0).then(|| ChunkGetShares {
            gets: total,
            munk: share(gets.munk),
            row_cache: share(gets.row_cache),
            log: share(gets.log),
            table: share(gets.table),
        })
    }
}

/// Open after a crash: a child loaded the store without syncing and was
/// killed with SIGKILL; a fresh child opened it and read one key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Recovery {
    /// Keys and key plus value bytes the killed child had written.
    pub loaded_keys: u64,
    pub loaded_bytes: u64,
    pub load_seconds: f64,
    /// `du` of the store right after the kill.
    pub store_bytes_at_kill: u64,
    /// Seconds to open the killed store, then for one get (of the first
    /// key loaded).
    pub open_seconds: f64,
    pub first_get_seconds: f64,
    pub first_get_found: bool,
    /// `/proc/self/io` over the open: device bytes read, read system calls,
    /// the bytes they returned (a log replay reads the log).
    pub open_device_read_bytes: u64,
    pub open_read_syscalls: u64,
    pub open_read_syscall_bytes: u64,
    /// `open_seconds` over RocksDB's in the same invocation, with the same
    /// settings (null without a RocksDB run).
    pub open_vs_rocksdb: Option<f64>,
}

/// Sets every recovery run's `open_vs_rocksdb` from the RocksDB recovery
/// run of the same settings in `runs`.
pub fn link_recovery_ratios(runs: &mut [RunResult]) {
    let rocks: Vec<(Settings, f64)> = runs
        .iter()
        .filter(|r| r.engine == "rocksdb")
        .filter_map(|r| Some((comparable(&r.settings), r.recovery.as_ref()?.open_seconds)))
        .collect();
    for r in runs.iter_mut() {
        let key = comparable(&r.settings);
        if let Some(rec) = r.recovery.as_mut() {
            rec.open_vs_rocksdb = rocks
                .iter()
                .find(|(s, secs)| *s == key && *secs > 0.0)
                .map(|(_, secs)| rec.open_seconds / secs);
        }
    }
}

/// `s` without what differs between engines of one comparison.
fn comparable(s: &Settings) -> Settings {
    Settings {
        engine: String::new(),
        profile: None,
        db: Default::default(),
        thicket_options: Vec::new(),
        ..s.clone()
    }
}

/// The `--json` file.
#[derive(Debug, Serialize, Deserialize)]
pub struct Report {
    pub command: Vec<String>,
    /// Seconds since the Unix epoch at the start.
    pub unix_time: u64,
    pub cpus: usize,
    pub runs: Vec<RunResult>,
    /// Runs that failed under `--keep-going`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed_runs: Vec<FailedRun>,
}

/// A run that failed under `--keep-going`: what ran, and why it failed.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FailedRun {
    pub engine: String,
    pub profile: Option<String>,
    pub workload: String,
    pub scan_length: Option<usize>,
    pub error: String,
}

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or("-".to_string(), |v| format!("{v:.digits$}"))
}

fn ratio(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => format!("{:.2}x", a / b),
        _ => "-".to_string(),
    }
}

fn p99(r: &RunResult) -> Option<f64> {
    r.latency_us.as_ref().map(|l| l.p99)
}

fn p95_of(r: &RunResult, op: &str) -> Option<f64> {
    r.latency_by_op.get(op).map(|l| l.p95)
}

/// The workload of a row: its name, then `--distribution` and the scan
/// length of a scanning workload when set (e.g. `e/zipf-composite/L100`).
pub(super) fn workload_label(r: &RunResult) -> String {
    let mut label = r.workload.clone();
    if let Some(d) = &r.settings.distribution {
        label = format!("{label}/{d}");
    }
    let scans = r.workload.parse::<Workload>().is_ok_and(Workload::scans);
    if let (true, Some(len)) = (scans, r.settings.scan_length) {
        label = format!("{label}/L{len}");
    }
    label
}

/// The engine of a row: `thicket:PROFILE` when the runs hold several
/// ThicketDB profiles, else the engine.
fn engine_label(r: &RunResult, runs: &[RunResult]) -> String {
    let mut profiles = runs
        .iter()
        .filter(|o| o.engine == "thicket")
        .map(|o| &o.profile);
    let first = profiles.next();
    match &r.profile {
        Some(p) if profiles.any(|o| Some(o) != first) => format!("{}:{p}", r.engine),
        _ => r.engine.clone(),
    }
}

/// The comparison tables: one row per run (throughput, latency, write
/// and space amplification), per workload the ratios thicket/peer, then
/// the read side (per-operation p95, read amplification per get, where the
/// chunked layout served gets), and the recovery runs.
pub fn table(runs: &[RunResult]) -> String {
    let (recovery, measured): (Vec<RunResult>, Vec<RunResult>) =
        runs.iter().cloned().partition(|r| r.recovery.is_some());
    let mut out = String::new();
    if !measured.is_empty() {
        out.push_str(&throughput_table(&measured));
        out.push('\n');
        out.push_str(&read_table(&measured));
    }
    if !recovery.is_empty() {
        if !measured.is_empty() {
            out.push('\n');
        }
        out.push_str(&recovery_table(&recovery));
    }
    out
}

fn throughput_table(runs: &[RunResult]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<24} {:<15} {:>11} {:>8} {:>9} {:>9} {:>7} {:>7} {:>7} {:>8}",
        "workload",
        "engine",
        "ops/s",
        "MB/s",
        "p50 us",
        "p99 us",
        "dev-WA",
        "eng-WA",
        "space",
        "RSS MB"
    );
    for r in runs {
        let _ = writeln!(
            out,
            "{:<24} {:<15} {:>11.0} {:>8.1} {:>9} {:>9} {:>7} {:>7} {:>7} {:>8.0}",
            workload_label(r),
            engine_label(r, runs),
            r.ops_per_sec,
            r.mb_per_sec,
            opt(r.latency_us.as_ref().map(|l| l.p50), 1),
            opt(r.latency_us.as_ref().map(|l| l.p99), 1),
            opt(r.device_write_amplification, 2),
            opt(r.engine_write_amplification, 2),
            opt(r.space_amplification, 2),
            r.peak_rss_bytes as f64 / (1 << 20) as f64,
        );
    }
    let mut ratios = String::new();
    for t in runs.iter().filter(|r| r.engine == "thicket") {
        for p in runs
            .iter()
            .filter(|p| p.engine != "thicket" && workload_label(p) == workload_label(t))
        {
            let _ = writeln!(
                ratios,
                "{:<24} {:<24} ops/s {:>6}  p99 {:>6}  dev-WA {:>6}  space {:>6}",
                workload_label(t),
                format!("{}/{}", engine_label(t, runs), p.engine),
                ratio(Some(t.ops_per_sec), Some(p.ops_per_sec)),
                ratio(p99(t), p99(p)),
                ratio(t.device_write_amplification, p.device_write_amplification),
                ratio(t.space_amplification, p.space_amplification),
            );
        }
    }
    if !ratios.is_empty() {
        out.push('\n');
        out.push_str(&ratios);
    }
    out
}

/// Per-operation p95, read amplification per point read (device bytes,
/// read system calls, bytes they returned) and the chunked layout's get
/// sources.
fn read_table(runs: &[RunResult]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<24} {:<15} {:>9} {:>9} {:>9} {:>10} {:>8} {:>10} {:>6} {:>6} {:>6} {:>6}",
        "workload",
        "engine",
        "get p95",
        "put p95",
        "scan p95",
        "dev-B/get",
        "rd/get",
        "rd-B/get",
        "munk%",
        "rowc%",
        "log%",
        "tbl%"
    );
    let pct = |v: Option<f64>| opt(v.map(|v| v * 100.0), 1);
    for r in runs {
        let shares = r.chunk_get_shares.as_ref();
        let _ = writeln!(
            out,
            "{:<24} {:<15} {:>9} {:>9} {:>9} {:>10} {:>8} {:>10} {:>6} {:>6} {:>6} {:>6}",
            workload_label(r),
            engine_label(r, runs),
            opt(p95_of(r, "get"), 1),
            opt(p95_of(r, "put"), 1),
            opt(p95_of(r, "scan"), 1),
            opt(r.device_read_bytes_per_get, 1),
            opt(r.read_syscalls_per_get, 2),
            opt(r.read_syscall_bytes_per_get, 1),
            pct(shares.map(|s| s.munk)),
            pct(shares.map(|s| s.row_cache)),
            pct(shares.map(|s| s.log)),
            pct(shares.map(|s| s.table)),
        );
    }
    out
}

/// Open time after SIGKILL per engine, and against RocksDB's.
fn recovery_table(runs: &[RunResult]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<24} {:<15} {:>10} {:>10} {:>10} {:>10} {:>12} {:>10}",
        "recovery",
        "engine",
        "loaded MB",
        "store MB",
        "open ms",
        "get ms",
        "open rd MB",
        "vs rocksdb"
    );
    let mb = |b: u64| b as f64 / (1 << 20) as f64;
    for r in runs {
        let Some(rec) = &r.recovery else { continue };
        let _ = writeln!(
            out,
            "{:<24} {:<15} {:>10.1} {:>10.1} {:>10.1} {:>10.3} {:>12.1} {:>10}",
            format!("{} keys", rec.loaded_keys),
            engine_label(r, runs),
            mb(rec.loaded_bytes),
            mb(rec.store_bytes_at_kill),
            rec.open_seconds * 1e3,
            rec.first_get_seconds * 1e3,
            mb(rec.open_read_syscall_bytes),
            rec.open_vs_rocksdb
                .map_or("-".to_string(), |v| format!("{v:.2}x")),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A recovery run of `engine` (`profile`) that opened in `open` s.
    fn recovery_run(engine: &str, profile: Option<&str>, num: u64, open: f64) -> RunResult {
        let settings = serde_json::json!({
            "engine": engine, "profile": profile, "workload": "recovery",
            "db": format!("/tmp/recovery-{engine}"), "num": num, "ops": num,
            "key_size": 16, "value_size": 100, "threads": 1, "duration_secs": null,
            "cache_bytes": 1, "write_buffer_bytes": 1, "compression": "none",
            "sync": false, "bloom_bits": 10, "background_threads": 2,
            "read_ratio": 0.5, "scan_length": null, "hot_fraction": 0.15, "seed": 42,
        });
        let recovery = Recovery {
            loaded_keys: num,
            loaded_bytes: num * 116,
            load_seconds: 1.0,
            store_bytes_at_kill: num * 116,
            open_seconds: open,
            first_get_seconds: 0.001,
            first_get_found: true,
            open_device_read_bytes: 0,
            open_read_syscalls: 0,
            open_read_syscall_bytes: 0,
            open_vs_rocksdb: None,
        };
        serde_json::from_value(serde_json::json!({
            "engine": engine, "profile": profile, "workload": "recovery",
            "ops": 1, "seconds": open, "ops_per_sec": 1.0 / open, "mb_per_sec": 0.0,
            "op_counts": {"get": 1}, "found": 1, "not_found": 0, "entries_read": 0,
            "latency_us": null, "latency_by_op": {}, "latency_cdf": [],
            "user_bytes_written": 0, "device_write_bytes": 0,
            "live_keys": num, "logical_bytes": num * 116, "space_bytes": num * 116,
            "peak_rss_bytes": 1, "timeline": [], "settings": settings,
            "recovery": recovery,
        }))
        .unwrap()
    }

    #[test]
    fn recovery_ratios_pair_runs_of_the_same_settings() {
        let mut runs = vec![
            recovery_run("thicket", Some("yodb"), 1000, 0.01),
            recovery_run("thicket", Some("default"), 1000, 0.5),
            recovery_run("rocksdb", None, 1000, 1.0),
            // Another size, no RocksDB run of it.
            recovery_run("thicket", Some("yodb"), 2000, 0.02),
        ];
        link_recovery_ratios(&mut runs);
        let ratio = |i: usize| runs[i].recovery.as_ref().unwrap().open_vs_rocksdb;
        assert_eq!(ratio(0), Some(0.01));
        assert_eq!(ratio(1), Some(0.5));
        assert_eq!(ratio(2), Some(1.0));
        assert_eq!(ratio(3), None);
        let text = table(&runs);
        assert!(
            text.contains("thicket:yodb") && text.contains("thicket:default"),
            "{text}"
        );
        assert!(text.contains("0.01x") && text.contains("0.50x"), "{text}");
        assert!(
            !text.contains("ops/s"),
            "no throughput table without measured runs: {text}"
        );
    }

    #[test]
    fn one_profile_keeps_the_plain_engine_label_and_shares_need_gets() {
        let runs = vec![
            recovery_run("thicket", Some("yodb"), 10, 0.1),
            recovery_run("rocksdb", None, 10, 0.1),
        ];
        assert_eq!(engine_label(&runs[0], &runs), "thicket");
        assert_eq!(ChunkGetShares::of(ChunkGets::default()), None);
        let shares = ChunkGetShares::of(ChunkGets {
            munk: 3,
            row_cache: 1,
            log: 0,
            table: 0,
        })
        .unwrap();
        assert_eq!(
            (shares.gets, shares.munk, shares.row_cache),
            (4, 0.75, 0.25)
        );
    }
}
