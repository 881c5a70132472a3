//! The LSM's reports: `Db::stats` (its shape summed over keyspaces, and the
//! counters) and `Db::space_usage` (every live key scanned).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::DbInner;
use crate::db::call_options::ReadOptions;
use crate::db::space_usage::{measure, SpaceUsage};
use crate::db::stats_report::Stats;
use crate::error::Result;

/// The store's statistics.
pub(crate) fn stats(inner: &DbInner) -> Stats {
    let trees = inner.trees();
    let svs: Vec<_> = trees.iter().map(|t| t.super_version()).collect();
    let c = &inner.counters;
    let levels = || {
        svs.iter()
            .flat_map(|sv| sv.version.levels.iter().enumerate())
    };
    let per_level = |f: &dyn Fn(&crate::version::Level) -> u64| {
        let mut out = vec![0u64; crate::version::NUM_LEVELS];
        for (i, l) in levels() {
            out[i] += f(l);
        }
        out
    };
    let as_counts = |v: Vec<u64>| v.into_iter().map(|n| n as usize).collect();
    let block_cache = inner.table_cache.block_cache();
    let triad_disk = inner.default.policy.triad_disk();
    let mut segments = std::collections::HashSet::new();
    for sv in &svs {
        segments.extend(sv.version.segment_table_counts().into_keys());
    }
    let mut s = Stats {
        keyspaces: trees.len(),
        memtables: svs.iter().map(|sv| 1 + sv.imms.len()).sum(),
        immutable_memtables: svs.iter().map(|sv| sv.imms.len()).sum(),
        tables_per_level: as_counts(per_level(&|l| l.table_count() as u64)),
        runs_per_level: as_counts(per_level(&|l| l.runs.len() as u64)),
        bytes_per_level: per_level(&|l| l.bytes()),
        tables: svs.iter().map(|sv| sv.version.table_count()).sum(),
        segments: segments.len(),
        live_table_bytes: levels().map(|(_, l)| l.bytes()).sum(),
        last_sequence: inner.last_sequence.load(Ordering::Acquire),
        compaction_buffer_bytes: svs.iter().map(|sv| sv.version.buffer_bytes()).sum(),
        buffer_tables: levels().map(|(_, l)| l.buffer_tables().count()).sum(),
        buffer_bytes_per_level: per_level(&|l| l.buffer_bytes()),
        buffer_tables_per_level: as_counts(per_level(&|l| l.buffer_tables().count() as u64)),
        merge_in_progress: svs.iter().any(|sv| sv.version.merge_journal.is_some()),
        block_cache_hits: block_cache.hits(),
        block_cache_misses: block_cache.misses(),
        block_cache_passing_hits: block_cache.passing_lookups().0,
        block_cache_passing_misses: block_cache.passing_lookups().1,
        block_cache_bytes: block_cache.usage(),
        block_cache_metadata_bytes: block_cache.reserved(),
        open_segment_files: inner.table_cache.open_files(),
        l0_compactions_deferred: triad_disk.map_or(0, |t| t.deferred()),
        l0_overlap_ratio: triad_disk.and_then(|t| t.last_ratio()).unwrap_or(-1.0),
        log_batch_values: inner.table_cache.logs().batch_values(),
        log_batch_reads: inner.table_cache.logs().batch_reads(),
        log_batch_read_bytes: inner.table_cache.logs().batch_read_bytes(),
        log_spill_bytes: inner.table_cache.logs().spill_bytes(),
        log_values_shadowed: inner.table_cache.logs().shadowed(),
        background_error: inner
            .background
            .lock()
            .error
            .as_ref()
            .map(|e| e.to_string()),
        ..Stats::default()
    };
    s.copy_counters(c);
    let table_bytes = s.flush_bytes_written + s.compaction_bytes_written;
    s.engine_bytes_written = s.log_bytes_written + table_bytes + s.manifest_bytes_written;
    s.write_amplification = if s.user_bytes_written == 0 {
        0.0
    } else {
        (table_bytes + s.manifest_bytes_written) as f64 / s.user_bytes_written as f64
    };
    s.fsyncs = s.fsyncs_log + s.fsyncs_flush + s.fsyncs_compaction + s.fsyncs_manifest;
    s
}

/// Scans every live key of every keyspace, then adds up the directory's
/// allocated bytes. Background work running meanwhile may change both a
/// little.
pub(crate) fn space_usage(inner: &Arc<DbInner>) -> Result<SpaceUsage> {
    // A one-off scan of everything: it must not evict the blocks the
    // store's reads use, nor churn the cache (`stats` and the benchmarks
    // ask for this at the end of every run).
    let opts = ReadOptions {
        fill_cache: false,
        ..ReadOptions::default()
    };
    let cursors = inner
        .trees()
        .iter()
        .map(|tree| super::iter_sources::new(inner, tree, opts.clone()))
        .collect::<Result<Vec<_>>>()?;
    measure(cursors, inner.fs.as_ref(), &inner.dir)
}
