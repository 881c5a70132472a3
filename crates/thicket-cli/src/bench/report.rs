//! Run results: the JSON contract and the comparison table.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use super::args::Settings;

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
    /// Keys live at the end.
    pub live_keys: u64,
    pub logical_bytes: u64,
    /// `du` of the store after close.
    pub space_bytes: u64,
    pub space_amplification: Option<f64>,
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
    pub settings: Settings,
}

/// The `--json` file.
#[derive(Debug, Serialize, Deserialize)]
pub struct Report {
    pub command: Vec<String>,
    /// Seconds since the Unix epoch at the start.
    pub unix_time: u64,
    pub cpus: usize,
    pub runs: Vec<RunResult>,
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

/// The comparison table: one row per run, then per workload the ratios
/// thicket/peer.
pub fn table(runs: &[RunResult]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<16} {:<8} {:>11} {:>8} {:>9} {:>9} {:>7} {:>7} {:>7} {:>8}",
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
            "{:<16} {:<8} {:>11.0} {:>8.1} {:>9} {:>9} {:>7} {:>7} {:>7} {:>8.0}",
            r.workload,
            r.engine,
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
            .filter(|p| p.engine != "thicket" && p.workload == t.workload)
        {
            let _ = writeln!(
                ratios,
                "{:<16} thicket/{:<8} ops/s {:>6}  p99 {:>6}  dev-WA {:>6}  space {:>6}",
                t.workload,
                p.engine,
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
