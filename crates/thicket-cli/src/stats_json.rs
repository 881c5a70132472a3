//! `Stats` and `SpaceUsage` as JSON (every field, snake_case) and as a
//! readable summary.

use std::fmt::Write;

use serde_json::{json, Map, Value};
use thicketdb::StatValue;
use thicketdb::{SpaceUsage, Stats};

/// Counters named `fsyncs_<cause>` go into this object as `<cause>`.
const FSYNC_CAUSES: &str = "fsyncs_by_cause";

/// Every field of `Stats` and `SpaceUsage` in one object, named as in the
/// library (`Stats::fields`, `SpaceUsage::fields`), except the per-cause
/// fsync counters, which are grouped under `fsyncs_by_cause`.
pub fn to_json(stats: &Stats, space: &SpaceUsage) -> Value {
    fields_json(stats.fields().into_iter().chain(space.fields()))
}

/// `to_json` without the space figures (which scan the store): cheap
/// enough to sample while a benchmark runs.
pub fn stats_to_json(stats: &Stats) -> Value {
    fields_json(stats.fields().into_iter())
}

/// The space figures of `to_json` alone.
pub fn space_to_json(space: &SpaceUsage) -> Value {
    fields_json(space.fields().into_iter())
}

/// `stats_to_json`'s object with `space_to_json`'s figures added: what
/// `to_json` gives for the two (a key of `stats` is never replaced).
pub fn with_space(stats: Value, space: Value) -> Value {
    match (stats, space) {
        (Value::Object(mut stats), Value::Object(space)) => {
            for (name, value) in space {
                stats.entry(name).or_insert(value);
            }
            Value::Object(stats)
        }
        (stats, _) => stats,
    }
}

fn fields_json(fields: impl Iterator<Item = (&'static str, StatValue)>) -> Value {
    let mut object = Map::new();
    let mut fsyncs_by_cause = Map::new();
    for (name, value) in fields {
        let value = stat_json(value);
        match name.strip_prefix("fsyncs_") {
            Some(cause) => fsyncs_by_cause.insert(cause.to_string(), value),
            None => object.insert(name.to_string(), value),
        };
    }
    // The space figures alone have no fsyncs: no empty map that would
    // replace the stats' own when the two are joined.
    if !fsyncs_by_cause.is_empty() {
        object.insert(FSYNC_CAUSES.to_string(), Value::Object(fsyncs_by_cause));
    }
    Value::Object(object)
}

fn stat_json(value: StatValue) -> Value {
    match value {
        StatValue::U64(v) => json!(v),
        StatValue::Usize(v) => json!(v),
        StatValue::F64(v) => json!(v),
        StatValue::Bool(v) => json!(v),
        StatValue::U64List(v) => json!(v),
        StatValue::UsizeList(v) => json!(v),
        StatValue::Text(v) => json!(v),
    }
}

/// A multi-line human-readable summary.
pub fn summary(s: &Stats, space: &SpaceUsage) -> String {
    let mut out = String::new();
    // Writing to a String cannot fail.
    let mut line = |args: std::fmt::Arguments<'_>| {
        let _ = out.write_fmt(args);
        out.push('\n');
    };
    line(format_args!("keyspaces:        {}", s.keyspaces));
    line(format_args!(
        "memtables:        {} ({} immutable)",
        s.memtables, s.immutable_memtables
    ));
    line(format_args!(
        "tables:           {} in {} segments, {}",
        s.tables,
        s.segments,
        bytes(s.live_table_bytes)
    ));
    for (level, tables) in s.tables_per_level.iter().enumerate() {
        let runs = s.runs_per_level.get(level).copied().unwrap_or(0);
        let size = s.bytes_per_level.get(level).copied().unwrap_or(0);
        let read = s.level_bytes_read.get(level).copied().unwrap_or(0);
        let written = s.level_bytes_written.get(level).copied().unwrap_or(0);
        line(format_args!(
            "  L{level}:             {tables} tables, {runs} runs, {}; compaction read {}, written {}",
            bytes(size),
            bytes(read),
            bytes(written)
        ));
    }
    line(format_args!("last sequence:    {}", s.last_sequence));
    line(format_args!(
        "user writes:      {} in {} groups, {}",
        s.user_writes,
        s.write_groups,
        bytes(s.user_bytes_written)
    ));
    line(format_args!(
        "engine writes:    {} (log {}, flush {}, compaction {}, MANIFEST {})",
        bytes(s.engine_bytes_written),
        bytes(s.log_bytes_written),
        bytes(s.flush_bytes_written),
        bytes(s.compaction_bytes_written),
        bytes(s.manifest_bytes_written)
    ));
    line(format_args!(
        "write amp:        {:.3}",
        s.write_amplification
    ));
    line(format_args!(
        "compaction read:  {}",
        bytes(s.compaction_bytes_read)
    ));
    line(format_args!(
        "space amp:        {:.3} ({} on disk for {} in {} live keys)",
        space.space_amplification,
        bytes(space.disk_bytes),
        bytes(space.logical_bytes),
        space.live_keys
    ));
    line(format_args!(
        "fsyncs:           {} (log {}, flush {}, compaction {}, MANIFEST {})",
        s.fsyncs, s.fsyncs_log, s.fsyncs_flush, s.fsyncs_compaction, s.fsyncs_manifest
    ));
    line(format_args!(
        "flushes:          {}; compactions: {} merge, {} move ({} tables moved, {} of them settled beside other victims; {} picked as groups; {} started beside another); journaled merge checkpoints {}, resumed merges {}{}",
        s.flushes,
        s.compactions_merge,
        s.compactions_move,
        s.tables_moved,
        s.tables_settled,
        s.compactions_grouped,
        s.compactions_concurrent,
        s.merge_checkpoints,
        s.merges_resumed,
        if s.merge_in_progress { " (one in progress)" } else { "" }
    ));
    line(format_args!(
        "stalls:           {:.3} s",
        s.stall_micros as f64 / 1e6
    ));
    line(format_args!(
        "space reclaimed:  {} holes punched, {} segments deleted",
        s.holes_punched, s.segments_deleted
    ));
    line(format_args!(
        "block cache:      {} hits, {} misses, {} of blocks, {} held for table metadata",
        s.block_cache_hits,
        s.block_cache_misses,
        bytes(s.block_cache_bytes),
        bytes(s.block_cache_metadata_bytes)
    ));
    line(format_args!("open segments:    {}", s.open_segment_files));
    line(format_args!(
        "background error: {}",
        s.background_error.as_deref().unwrap_or("none")
    ));
    out
}

fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_has_required_keys() {
        let mut s = Stats::default();
        s.tables_per_level = vec![1, 2];
        s.fsyncs = 3;
        s.fsyncs_log = 1;
        let mut space = SpaceUsage::default();
        space.disk_bytes = 300;
        space.logical_bytes = 200;
        space.live_keys = 2;
        space.space_amplification = 1.5;
        let v = to_json(&s, &space);
        for key in [
            "tables",
            "segments",
            "user_bytes_written",
            "engine_bytes_written",
            "write_amplification",
            "fsyncs",
            "compactions_merge",
            "compactions_move",
            "tables_per_level",
            "runs_per_level",
            "bytes_per_level",
            "stall_micros",
            "compactions_concurrent",
            "disk_bytes",
            "logical_bytes",
        ] {
            assert!(v.get(key).is_some(), "missing {key}");
        }
        assert_eq!(v["fsyncs_by_cause"]["log"], 1);
        assert_eq!(v["tables_per_level"], json!([1, 2]));
        // The benchmark driver reads the two halves apart (the space
        // figures from a reopen) and joins them.
        assert_eq!(
            with_space(stats_to_json(&s), space_to_json(&space)),
            v,
            "joined halves differ from the whole"
        );
        assert_eq!(v["space_amplification"], 1.5);
        let text = summary(&s, &space);
        assert!(text.contains("L1:"), "{text}");
        assert!(text.contains("space amp:        1.500"), "{text}");
    }

    /// Every key and value of `stats --json`, pinned: scripts read them,
    /// so a rename or a new nesting must show up here.
    #[test]
    fn json_keys_and_values_are_pinned() {
        let mut stats = Stats::default();
        stats.keyspaces = 3;
        stats.memtables = 1;
        stats.immutable_memtables = 2;
        stats.tables_per_level = vec![3, 4];
        stats.runs_per_level = vec![5];
        stats.bytes_per_level = vec![6, 7];
        stats.tables = 8;
        stats.segments = 9;
        stats.live_table_bytes = 10;
        stats.last_sequence = 11;
        stats.user_bytes_written = 12;
        stats.user_writes = 13;
        stats.write_groups = 14;
        stats.log_bytes_written = 15;
        stats.flush_bytes_written = 16;
        stats.compaction_bytes_written = 17;
        stats.compaction_bytes_read = 18;
        stats.manifest_bytes_written = 19;
        stats.engine_bytes_written = 20;
        stats.write_amplification = 2.5;
        stats.fsyncs = 21;
        stats.fsyncs_log = 22;
        stats.fsyncs_flush = 23;
        stats.fsyncs_compaction = 24;
        stats.fsyncs_manifest = 25;
        stats.flushes = 26;
        stats.compactions_merge = 27;
        stats.compactions_move = 28;
        stats.compactions_concurrent = 29;
        stats.tables_moved = 30;
        stats.merge_checkpoints = 31;
        stats.merges_resumed = 32;
        stats.merge_in_progress = true;
        stats.level_bytes_read = vec![33];
        stats.level_bytes_written = vec![34, 35];
        stats.block_cache_passing_hits = 101;
        stats.block_cache_passing_misses = 102;
        stats.tables_settled = 103;
        stats.compactions_grouped = 108;
        stats.get_blocks_read_per_level = vec![90];
        stats.buffer_hits_per_level = vec![91];
        stats.buffer_stops_per_level = vec![92];
        stats.buffer_blocks_read_per_level = vec![93];
        stats.buffer_range_reads_per_level = vec![95];
        stats.level_range_reads_per_level = vec![96];
        stats.buffer_tables_removed_per_level = vec![97];
        stats.buffer_tables_trimmed_per_level = vec![98];
        stats.freezes_per_level = vec![99];
        stats.stall_micros = 36;
        stats.holes_punched = 37;
        stats.segments_deleted = 38;
        stats.search_lookups = 51;
        stats.search_probes = 52;
        stats.search_probes_discarded = 53;
        stats.buffer_hits = 46;
        stats.buffer_range_pieces = 54;
        stats.buffer_tables_removed = 47;
        stats.freezes = 48;
        stats.buffer_trims = 80;
        stats.buffer_tables_trimmed = 81;
        stats.buffer_bytes_per_level = vec![0, 82];
        stats.buffer_tables_per_level = vec![0, 83];
        stats.gets = 54;
        stats.get_blocks_read = 55;
        stats.log_table_bytes = 56;
        stats.log_table_data_bytes = 57;
        stats.log_table_live_bytes = 58;
        stats.compaction_buffer_bytes = 49;
        stats.buffer_tables = 50;
        stats.block_cache_hits = 39;
        stats.block_cache_misses = 40;
        stats.block_cache_bytes = 41;
        stats.block_cache_metadata_bytes = 74;
        stats.open_segment_files = 42;
        stats.l0_compactions_deferred = 46;
        stats.hot_entries_kept = 47;
        stats.log_rewrites = 48;
        stats.in_place_updates = 104;
        stats.in_place_versions_kept = 105;
        stats.log_limit_rewrites = 106;
        stats.log_limit_switches = 107;
        stats.flush_micros = 49;
        stats.compaction_micros = 50;
        stats.l0_overlap_ratio = 0.5;
        stats.log_batch_values = 75;
        stats.log_batch_reads = 76;
        stats.log_batch_read_bytes = 77;
        stats.log_spill_bytes = 78;
        stats.log_values_shadowed = 79;
        stats.background_error = Some("disk full".into());
        stats.chunks = 60;
        stats.munks_resident = 61;
        stats.munk_bytes = 62;
        stats.row_cache_bytes = 63;
        stats.row_cache_hit_ratio = 0.25;
        stats.chunk_funk_rebalances = 64;
        stats.chunk_splits = 65;
        stats.chunk_gets_from_munk = 66;
        stats.chunk_gets_from_row_cache = 67;
        stats.chunk_gets_from_log = 68;
        stats.chunk_gets_from_table = 69;
        stats.chunk_log_parts_searched = 70;
        stats.chunk_munk_loads = 71;
        stats.chunk_munk_evictions = 72;
        stats.chunk_munk_rebalances = 73;
        stats.chunk_puts_waited_for_switch = 75;
        stats.chunk_funk_builds_skipped = 76;
        stats.chunk_funk_builds_queued = 77;
        stats.chunk_checkpoints = 79;
        stats.chunk_puts_waited_for_build = 78;
        let mut space = SpaceUsage::default();
        space.disk_bytes = 43;
        space.logical_bytes = 44;
        space.live_keys = 45;
        space.space_amplification = 0.75;
        let expected: Value = serde_json::from_str(
            r#"{
                "keyspaces": 3,
                "memtables": 1,
                "immutable_memtables": 2,
                "tables_per_level": [3, 4],
                "runs_per_level": [5],
                "bytes_per_level": [6, 7],
                "tables": 8,
                "segments": 9,
                "live_table_bytes": 10,
                "last_sequence": 11,
                "user_bytes_written": 12,
                "user_writes": 13,
                "write_groups": 14,
                "log_bytes_written": 15,
                "flush_bytes_written": 16,
                "compaction_bytes_written": 17,
                "compaction_bytes_read": 18,
                "manifest_bytes_written": 19,
                "engine_bytes_written": 20,
                "write_amplification": 2.5,
                "fsyncs": 21,
                "fsyncs_by_cause": {"log": 22, "flush": 23, "compaction": 24, "manifest": 25},
                "flushes": 26,
                "compactions_merge": 27,
                "compactions_move": 28,
                "compactions_concurrent": 29,
                "tables_moved": 30,
                "tables_settled": 103,
                "compactions_grouped": 108,
                "merge_checkpoints": 31,
                "merges_resumed": 32,
                "merge_in_progress": true,
                "level_bytes_read": [33],
                "level_bytes_written": [34, 35],
                "block_cache_passing_hits": 101,
                "block_cache_passing_misses": 102,
                "get_blocks_read_per_level": [90],
                "buffer_hits_per_level": [91],
                "buffer_stops_per_level": [92],
                "buffer_blocks_read_per_level": [93],
                "buffer_range_reads_per_level": [95],
                "level_range_reads_per_level": [96],
                "buffer_tables_removed_per_level": [97],
                "buffer_tables_trimmed_per_level": [98],
                "freezes_per_level": [99],
                "stall_micros": 36,
                "holes_punched": 37,
                "segments_deleted": 38,
                "search_lookups": 51,
                "search_probes": 52,
                "search_probes_discarded": 53,
                "buffer_hits": 46,
                "buffer_range_pieces": 54,
                "buffer_tables_removed": 47,
                "freezes": 48,
                "buffer_trims": 80,
                "buffer_tables_trimmed": 81,
                "buffer_bytes_per_level": [0, 82],
                "buffer_tables_per_level": [0, 83],
                "gets": 54,
                "get_blocks_read": 55,
                "log_table_bytes": 56,
                "log_table_data_bytes": 57,
                "log_table_live_bytes": 58,
                "compaction_buffer_bytes": 49,
                "buffer_tables": 50,
                "block_cache_hits": 39,
                "block_cache_misses": 40,
                "block_cache_bytes": 41,
                "block_cache_metadata_bytes": 74,
                "open_segment_files": 42,
                "l0_compactions_deferred": 46,
                "hot_entries_kept": 47,
                "log_rewrites": 48,
                "in_place_updates": 104,
                "in_place_versions_kept": 105,
                "log_limit_rewrites": 106,
                "log_limit_switches": 107,
                "flush_micros": 49,
                "compaction_micros": 50,
                "l0_overlap_ratio": 0.5,
                "log_batch_values": 75,
                "log_batch_reads": 76,
                "log_batch_read_bytes": 77,
                "log_spill_bytes": 78,
                "log_values_shadowed": 79,
                "background_error": "disk full",
                "chunks": 60,
                "munks_resident": 61,
                "munk_bytes": 62,
                "row_cache_bytes": 63,
                "row_cache_hit_ratio": 0.25,
                "chunk_funk_rebalances": 64,
                "chunk_splits": 65,
                "chunk_gets_from_munk": 66,
                "chunk_gets_from_row_cache": 67,
                "chunk_gets_from_log": 68,
                "chunk_gets_from_table": 69,
                "chunk_log_parts_searched": 70,
                "chunk_munk_loads": 71,
                "chunk_munk_evictions": 72,
                "chunk_munk_rebalances": 73,
                "chunk_puts_waited_for_switch": 75,
                "chunk_funk_builds_skipped": 76,
                "chunk_funk_builds_queued": 77,
                "chunk_puts_waited_for_build": 78,
                "chunk_checkpoints": 79,
                "disk_bytes": 43,
                "logical_bytes": 44,
                "live_keys": 45,
                "space_amplification": 0.75
            }"#,
        )
        .unwrap();
        assert_eq!(to_json(&stats, &space), expected);
        let healthy = to_json(&Stats::default(), &SpaceUsage::default());
        assert_eq!(healthy["background_error"], Value::Null);
        assert_eq!(healthy["tables_per_level"], json!([]));
    }

    #[test]
    fn byte_sizes() {
        assert_eq!(bytes(12), "12 B");
        assert_eq!(bytes(1536), "1.5 KiB");
        assert_eq!(bytes(3 << 20), "3.0 MiB");
    }
}
