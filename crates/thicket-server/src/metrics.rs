//! Counters for the Prometheus endpoint: operations and latency by command,
//! connections, protocol errors; rendered with the engine's statistics.

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use thicketdb::Stats;

use crate::durability::SyncCounters;

/// Upper bounds of the latency buckets, seconds.
const BUCKETS: [f64; 15] = [
    0.000_01, 0.000_025, 0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025,
    0.05, 0.1, 0.25, 1.0,
];

#[derive(Default)]
struct CommandMetrics {
    calls: AtomicU64,
    errors: AtomicU64,
    /// Per bucket, not cumulative; the last one is `+Inf`.
    buckets: [AtomicU64; BUCKETS.len() + 1],
    micros: AtomicU64,
}

pub struct Metrics {
    names: Vec<&'static str>,
    commands: Vec<CommandMetrics>,
    pub connections_accepted: AtomicU64,
    pub connections_closed: AtomicU64,
    pub connections_rejected: AtomicU64,
    pub protocol_errors: AtomicU64,
    /// Keys the active expiry pass deleted.
    pub expired_keys: AtomicU64,
    /// Runs of pipelined commands committed as one engine batch.
    pub pipeline_batches: AtomicU64,
    /// Commands in those runs.
    pub pipeline_batched_commands: AtomicU64,
    /// Runs executed again one command at a time because one command
    /// failed.
    pub pipeline_batch_retries: AtomicU64,
}

/// What the metrics page shows besides the counters here.
pub struct Snapshot<'a> {
    pub engine: &'a Stats,
    pub sync: SyncCounters,
    pub fsync_policy: &'a str,
}

impl Metrics {
    /// `names`: the command table's names; one more slot counts unknown
    /// commands.
    pub fn new(names: Vec<&'static str>) -> Metrics {
        let commands = (0..=names.len())
            .map(|_| CommandMetrics::default())
            .collect();
        Metrics {
            names,
            commands,
            connections_accepted: AtomicU64::new(0),
            connections_closed: AtomicU64::new(0),
            connections_rejected: AtomicU64::new(0),
            protocol_errors: AtomicU64::new(0),
            expired_keys: AtomicU64::new(0),
            pipeline_batches: AtomicU64::new(0),
            pipeline_batched_commands: AtomicU64::new(0),
            pipeline_batch_retries: AtomicU64::new(0),
        }
    }

    /// Records one call of command `index` (`None`: unknown command).
    pub fn record(&self, index: Option<usize>, elapsed: Duration, error: bool) {
        let slot = &self.commands[index.unwrap_or(self.names.len())];
        slot.calls.fetch_add(1, Ordering::Relaxed);
        if error {
            slot.errors.fetch_add(1, Ordering::Relaxed);
        }
        let seconds = elapsed.as_secs_f64();
        let bucket = BUCKETS
            .iter()
            .position(|&bound| seconds <= bound)
            .unwrap_or(BUCKETS.len());
        slot.buckets[bucket].fetch_add(1, Ordering::Relaxed);
        slot.micros
            .fetch_add(elapsed.as_micros() as u64, Ordering::Relaxed);
    }

    pub fn total_calls(&self) -> u64 {
        self.commands
            .iter()
            .map(|c| c.calls.load(Ordering::Relaxed))
            .sum()
    }

    pub fn connected(&self) -> u64 {
        let accepted = self.connections_accepted.load(Ordering::Relaxed);
        accepted.saturating_sub(self.connections_closed.load(Ordering::Relaxed))
    }

    /// The Prometheus text exposition format.
    pub fn render(&self, snapshot: &Snapshot) -> String {
        let mut out = String::new();
        self.render_commands(&mut out);
        let gauge = |out: &mut String, name: &str, help: &str, value: f64| {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {value}"
            );
        };
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        gauge(
            &mut out,
            "thicket_connected_clients",
            "Open client connections.",
            self.connected() as f64,
        );
        let counters = [
            (
                "thicket_connections_total",
                "Client connections accepted.",
                load(&self.connections_accepted),
            ),
            (
                "thicket_connections_rejected_total",
                "Connections refused over the client limit.",
                load(&self.connections_rejected),
            ),
            (
                "thicket_protocol_errors_total",
                "Connections closed for a malformed or oversized request.",
                load(&self.protocol_errors),
            ),
            (
                "thicket_expired_keys_total",
                "Expired keys deleted by the active expiry pass.",
                load(&self.expired_keys),
            ),
            (
                "thicket_pipeline_batches_total",
                "Runs of pipelined commands committed as one engine batch.",
                load(&self.pipeline_batches),
            ),
            (
                "thicket_pipeline_batched_commands_total",
                "Commands committed in pipeline batches.",
                load(&self.pipeline_batched_commands),
            ),
            (
                "thicket_pipeline_batch_retries_total",
                "Pipeline runs executed again unbatched because a command failed.",
                load(&self.pipeline_batch_retries),
            ),
            (
                "thicket_sync_rounds_total",
                "Log syncs made for replies waiting on durability (group commits).",
                snapshot.sync.rounds,
            ),
            (
                "thicket_sync_waiters_total",
                "Replies that waited for a log sync.",
                snapshot.sync.waiters,
            ),
        ];
        for (name, help, value) in counters {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} counter\n{name} {value}"
            );
        }
        let _ = writeln!(
            out,
            "# HELP thicket_appendfsync The durability policy (label).\n# TYPE thicket_appendfsync gauge\nthicket_appendfsync{{policy=\"{}\"}} 1",
            snapshot.fsync_policy
        );
        render_engine(&mut out, snapshot.engine);
        out
    }

    fn render_commands(&self, out: &mut String) {
        out.push_str("# HELP thicket_commands_total Commands executed, by command.\n# TYPE thicket_commands_total counter\n");
        for (name, c) in self.labelled() {
            let _ = writeln!(
                out,
                "thicket_commands_total{{command=\"{name}\"}} {}",
                c.calls.load(Ordering::Relaxed)
            );
        }
        out.push_str("# HELP thicket_command_errors_total Commands that replied with an error, by command.\n# TYPE thicket_command_errors_total counter\n");
        for (name, c) in self.labelled() {
            let _ = writeln!(
                out,
                "thicket_command_errors_total{{command=\"{name}\"}} {}",
                c.errors.load(Ordering::Relaxed)
            );
        }
        out.push_str("# HELP thicket_command_duration_seconds Command execution time (without the wait for a log sync), by command.\n# TYPE thicket_command_duration_seconds histogram\n");
        for (name, c) in self.labelled() {
            let mut cumulative = 0;
            for (i, bound) in BUCKETS.iter().enumerate() {
                cumulative += c.buckets[i].load(Ordering::Relaxed);
                let _ = writeln!(out, "thicket_command_duration_seconds_bucket{{command=\"{name}\",le=\"{bound}\"}} {cumulative}");
            }
            cumulative += c.buckets[BUCKETS.len()].load(Ordering::Relaxed);
            let _ = writeln!(out, "thicket_command_duration_seconds_bucket{{command=\"{name}\",le=\"+Inf\"}} {cumulative}");
            let seconds = c.micros.load(Ordering::Relaxed) as f64 / 1e6;
            let _ = writeln!(
                out,
                "thicket_command_duration_seconds_sum{{command=\"{name}\"}} {seconds}"
            );
            let _ = writeln!(
                out,
                "thicket_command_duration_seconds_count{{command=\"{name}\"}} {cumulative}"
            );
        }
    }

    /// Commands called at least once, with their label.
    fn labelled(&self) -> impl Iterator<Item = (&str, &CommandMetrics)> {
        self.names
            .iter()
            .copied()
            .chain(std::iter::once("unknown"))
            .zip(&self.commands)
            .filter(|(_, c)| c.calls.load(Ordering::Relaxed) > 0)
    }
}

fn render_engine(out: &mut String, s: &Stats) {
    let hit_ratio = s.block_cache_hit_ratio();
    let gauges: [(&str, &str, f64); 8] = [
        (
            "thicket_engine_write_amplification",
            "Bytes flush and compaction wrote per user byte.",
            s.write_amplification,
        ),
        (
            "thicket_engine_block_cache_hit_ratio",
            "Block cache hits over lookups.",
            hit_ratio,
        ),
        (
            "thicket_engine_block_cache_bytes",
            "Bytes held by the block cache.",
            s.block_cache_bytes as f64,
        ),
        (
            "thicket_engine_live_table_bytes",
            "Bytes of live tables.",
            s.live_table_bytes as f64,
        ),
        ("thicket_engine_tables", "Live tables.", s.tables as f64),
        (
            "thicket_engine_memtables",
            "Memtables in memory.",
            s.memtables as f64,
        ),
        (
            "thicket_engine_last_sequence",
            "Sequence number of the last write.",
            s.last_sequence as f64,
        ),
        (
            "thicket_engine_merge_in_progress",
            "A journaled merge is in progress.",
            f64::from(u8::from(s.merge_in_progress)),
        ),
    ];
    for (name, help, value) in gauges {
        let _ = writeln!(
            out,
            "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {value}"
        );
    }
    let counters: [(&str, &str, u64); 13] = [
        (
            "thicket_engine_user_bytes_written_total",
            "Key and value bytes written by users.",
            s.user_bytes_written,
        ),
        (
            "thicket_engine_user_writes_total",
            "Writes (batch entries) by users.",
            s.user_writes,
        ),
        (
            "thicket_engine_write_groups_total",
            "Log records written (one per write group).",
            s.write_groups,
        ),
        (
            "thicket_engine_bytes_written_total",
            "Bytes the engine wrote: log, tables, MANIFEST.",
            s.engine_bytes_written,
        ),
        (
            "thicket_engine_compaction_bytes_read_total",
            "Bytes compactions read.",
            s.compaction_bytes_read,
        ),
        (
            "thicket_engine_flushes_total",
            "Memtable flushes.",
            s.flushes,
        ),
        (
            "thicket_engine_compactions_merge_total",
            "Merging compactions.",
            s.compactions_merge,
        ),
        (
            "thicket_engine_compactions_move_total",
            "Compactions that moved tables by metadata only.",
            s.compactions_move,
        ),
        (
            "thicket_engine_stall_microseconds_total",
            "Time writers stalled for flushes and compactions.",
            s.stall_micros,
        ),
        (
            "thicket_engine_fsyncs_total",
            "fsync and fdatasync calls.",
            s.fsyncs,
        ),
        (
            "thicket_engine_log_fsyncs_total",
            "Log syncs.",
            s.fsyncs_log,
        ),
        (
            "thicket_engine_block_cache_hits_total",
            "Block cache hits.",
            s.block_cache_hits,
        ),
        (
            "thicket_engine_block_cache_misses_total",
            "Block cache misses.",
            s.block_cache_misses,
        ),
    ];
    for (name, help, value) in counters {
        let _ = writeln!(
            out,
            "# HELP {name} {help}\n# TYPE {name} counter\n{name} {value}"
        );
    }
    out.push_str("# HELP thicket_engine_level_bytes Bytes of live tables per level.\n# TYPE thicket_engine_level_bytes gauge\n");
    for (level, bytes) in s.bytes_per_level.iter().enumerate() {
        let _ = writeln!(
            out,
            "thicket_engine_level_bytes{{level=\"{level}\"}} {bytes}"
        );
    }
    out.push_str("# HELP thicket_engine_level_tables Live tables per level.\n# TYPE thicket_engine_level_tables gauge\n");
    for (level, tables) in s.tables_per_level.iter().enumerate() {
        let _ = writeln!(
            out,
            "thicket_engine_level_tables{{level=\"{level}\"}} {tables}"
        );
    }
    let failed = u8::from(s.background_error.is_some());
    let _ = writeln!(out, "# HELP thicket_engine_background_error A flush or compaction failed; writes are refused.\n# TYPE thicket_engine_background_error gauge\nthicket_engine_background_error {failed}");
}
