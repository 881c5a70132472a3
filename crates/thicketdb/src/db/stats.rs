//! `Stats`: a point-in-time report of the engine's shape and counters.

use std::sync::atomic::Ordering;

use super::DbInner;
use crate::stats::Counters;

/// Engine statistics. Counters are cumulative over the store's life.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Stats {
    /// Memtables in memory (the mutable one plus immutable ones).
    pub memtables: usize,
    pub immutable_memtables: usize,
    /// Tables per level, L0 first.
    pub tables_per_level: Vec<usize>,
    /// Runs per level, L0 first.
    pub runs_per_level: Vec<usize>,
    /// Bytes of live tables per level.
    pub bytes_per_level: Vec<u64>,
    pub tables: usize,
    /// Segment files holding live tables.
    pub segments: usize,
    /// Bytes of live tables.
    pub live_table_bytes: u64,
    pub last_sequence: u64,
    pub user_bytes_written: u64,
    pub user_writes: u64,
    pub write_groups: u64,
    pub log_bytes_written: u64,
    pub flush_bytes_written: u64,
    pub compaction_bytes_written: u64,
    pub compaction_bytes_read: u64,
    pub manifest_bytes_written: u64,
    /// Log + tables + MANIFEST.
    pub engine_bytes_written: u64,
    /// (tables + MANIFEST) / user bytes: the work of flush and compaction.
    pub write_amplification: f64,
    pub fsyncs: u64,
    pub fsyncs_log: u64,
    pub fsyncs_flush: u64,
    pub fsyncs_compaction: u64,
    pub fsyncs_manifest: u64,
    pub flushes: u64,
    pub compactions_merge: u64,
    pub compactions_move: u64,
    /// Background compactions that started while another one was running
    /// (0 with `compaction_threads = 1`).
    pub compactions_concurrent: u64,
    /// Tables promoted to the next level by metadata only.
    pub tables_moved: u64,
    /// Journaled merge checkpoints (SifrDB early cleaning).
    pub merge_checkpoints: u64,
    /// Journaled merges resumed after a crash.
    pub merges_resumed: u64,
    /// A journaled merge is in progress (or was interrupted).
    pub merge_in_progress: bool,
    /// Bytes compactions read from each level.
    pub level_bytes_read: Vec<u64>,
    /// Bytes flushes (L0) and compactions wrote into each level.
    pub level_bytes_written: Vec<u64>,

    pub stall_micros: u64,
    pub holes_punched: u64,
    pub segments_deleted: u64,
    pub block_cache_hits: u64,
    pub block_cache_misses: u64,
    pub block_cache_bytes: u64,
    pub open_segment_files: usize,
    /// The background error that stopped writes, if any.
    pub background_error: Option<String>,
}

pub(crate) fn collect(inner: &DbInner) -> Stats {
    let sv = inner.super_version();
    let c = &inner.counters;
    let get = |a: &std::sync::atomic::AtomicU64| Counters::get(a);
    let levels = &sv.version.levels;
    let table_bytes = get(&c.flush_bytes_written) + get(&c.compaction_bytes_written);
    let manifest = get(&c.manifest_bytes_written);
    let user = get(&c.user_bytes_written);
    let mut s = Stats {
        memtables: 1 + sv.imms.len(),
        immutable_memtables: sv.imms.len(),
        tables_per_level: levels.iter().map(|l| l.table_count()).collect(),
        runs_per_level: levels.iter().map(|l| l.runs.len()).collect(),
        bytes_per_level: levels.iter().map(|l| l.bytes()).collect(),
        tables: sv.version.table_count(),
        segments: sv.version.segment_table_counts().len(),
        live_table_bytes: levels.iter().map(|l| l.bytes()).sum(),
        last_sequence: inner.last_sequence.load(Ordering::Acquire),
        user_bytes_written: user,
        user_writes: get(&c.user_writes),
        write_groups: get(&c.write_groups),
        log_bytes_written: get(&c.log_bytes_written),
        flush_bytes_written: get(&c.flush_bytes_written),
        compaction_bytes_written: get(&c.compaction_bytes_written),
        compaction_bytes_read: get(&c.compaction_bytes_read),
        manifest_bytes_written: manifest,
        engine_bytes_written: get(&c.log_bytes_written) + table_bytes + manifest,
        write_amplification: if user == 0 {
            0.0
        } else {
            (table_bytes + manifest) as f64 / user as f64
        },
        fsyncs_log: get(&c.fsyncs_log),
        fsyncs_flush: get(&c.fsyncs_flush),
        fsyncs_compaction: get(&c.fsyncs_compaction),
        fsyncs_manifest: get(&c.fsyncs_manifest),
        flushes: get(&c.flushes),
        compactions_merge: get(&c.compactions_merge),
        compactions_move: get(&c.compactions_move),
        compactions_concurrent: get(&c.compactions_concurrent),
        tables_moved: get(&c.tables_moved),
        merge_checkpoints: get(&c.merge_checkpoints),
        merges_resumed: get(&c.merges_resumed),
        merge_in_progress: sv.version.merge_journal.is_some(),
        level_bytes_read: c.level_bytes_read.iter().map(get).collect(),
        level_bytes_written: c.level_bytes_written.iter().map(get).collect(),
        stall_micros: get(&c.stall_micros),
        holes_punched: get(&c.holes_punched),
        segments_deleted: get(&c.segments_deleted),
        block_cache_hits: inner.table_cache.block_cache().hits(),
        block_cache_misses: inner.table_cache.block_cache().misses(),
        block_cache_bytes: inner.table_cache.block_cache().usage(),
        open_segment_files: inner.table_cache.open_files(),
        background_error: inner
            .background
            .lock()
            .error
            .as_ref()
            .map(|e| e.to_string()),
        ..Stats::default()
    };
    s.fsyncs = s.fsyncs_log + s.fsyncs_flush + s.fsyncs_compaction + s.fsyncs_manifest;
    s
}
