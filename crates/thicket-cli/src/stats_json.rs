//! `Stats` and `SpaceUsage` as JSON (every field, snake_case) and as a
//! readable summary.

use std::fmt::Write;

use serde_json::{json, Value};
use thicketdb::{SpaceUsage, Stats};

/// Every field of `Stats` and `SpaceUsage` in one object. The
/// destructurings list them all so that a field added to the library fails
/// to compile here until it is exported.
pub fn to_json(stats: &Stats, space: &SpaceUsage) -> Value {
    let Stats {
        memtables,
        immutable_memtables,
        tables_per_level,
        runs_per_level,
        bytes_per_level,
        tables,
        segments,
        live_table_bytes,
        last_sequence,
        user_bytes_written,
        user_writes,
        write_groups,
        log_bytes_written,
        flush_bytes_written,
        compaction_bytes_written,
        compaction_bytes_read,
        manifest_bytes_written,
        engine_bytes_written,
        write_amplification,
        fsyncs,
        fsyncs_log,
        fsyncs_flush,
        fsyncs_compaction,
        fsyncs_manifest,
        flushes,
        compactions_merge,
        compactions_move,
        compactions_concurrent,
        tables_moved,
        merge_checkpoints,
        merges_resumed,
        merge_in_progress,
        level_bytes_read,
        level_bytes_written,
        stall_micros,
        holes_punched,
        segments_deleted,
        block_cache_hits,
        block_cache_misses,
        block_cache_bytes,
        open_segment_files,
        background_error,
    } = stats;
    let SpaceUsage {
        disk_bytes,
        logical_bytes,
        live_keys,
        space_amplification,
    } = space;
    let mut object = json!({
        "memtables": memtables,
        "immutable_memtables": immutable_memtables,
        "tables_per_level": tables_per_level,
        "runs_per_level": runs_per_level,
        "bytes_per_level": bytes_per_level,
        "tables": tables,
        "segments": segments,
        "live_table_bytes": live_table_bytes,
        "last_sequence": last_sequence,
        "user_bytes_written": user_bytes_written,
        "user_writes": user_writes,
        "write_groups": write_groups,
        "log_bytes_written": log_bytes_written,
        "flush_bytes_written": flush_bytes_written,
        "compaction_bytes_written": compaction_bytes_written,
        "compaction_bytes_read": compaction_bytes_read,
        "manifest_bytes_written": manifest_bytes_written,
        "engine_bytes_written": engine_bytes_written,
        "write_amplification": write_amplification,
        "fsyncs": fsyncs,
        "fsyncs_by_cause": {
            "log": fsyncs_log,
            "flush": fsyncs_flush,
            "compaction": fsyncs_compaction,
            "manifest": fsyncs_manifest,
        },
        "flushes": flushes,
        "compactions_merge": compactions_merge,
        "compactions_move": compactions_move,
        "compactions_concurrent": compactions_concurrent,
        "tables_moved": tables_moved,
        "merge_checkpoints": merge_checkpoints,
        "merges_resumed": merges_resumed,
        "merge_in_progress": merge_in_progress,
        "level_bytes_read": level_bytes_read,
        "level_bytes_written": level_bytes_written,
        "stall_micros": stall_micros,
        "holes_punched": holes_punched,
        "segments_deleted": segments_deleted,
        "block_cache_hits": block_cache_hits,
        "block_cache_misses": block_cache_misses,
        "block_cache_bytes": block_cache_bytes,
        "open_segment_files": open_segment_files,
        "background_error": background_error,
    });
    // Added one by one: a longer `json!` literal exceeds its recursion limit.
    object["disk_bytes"] = json!(disk_bytes);
    object["logical_bytes"] = json!(logical_bytes);
    object["live_keys"] = json!(live_keys);
    object["space_amplification"] = json!(space_amplification);
    object
}

/// A multi-line human-readable summary.
pub fn summary(s: &Stats, space: &SpaceUsage) -> String {
    let mut out = String::new();
    // Writing to a String cannot fail.
    let mut line = |args: std::fmt::Arguments<'_>| {
        let _ = out.write_fmt(args);
        out.push('\n');
    };
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
        "flushes:          {}; compactions: {} merge, {} move ({} tables moved, {} started beside another); journaled merge checkpoints {}, resumed merges {}{}",
        s.flushes,
        s.compactions_merge,
        s.compactions_move,
        s.tables_moved,
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
        "block cache:      {} hits, {} misses, {}",
        s.block_cache_hits,
        s.block_cache_misses,
        bytes(s.block_cache_bytes)
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
        let s = Stats {
            tables_per_level: vec![1, 2],
            fsyncs: 3,
            fsyncs_log: 1,
            ..Stats::default()
        };
        let space = SpaceUsage {
            disk_bytes: 300,
            logical_bytes: 200,
            live_keys: 2,
            space_amplification: 1.5,
        };
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
        assert_eq!(v["space_amplification"], 1.5);
        let text = summary(&s, &space);
        assert!(text.contains("L1:"), "{text}");
        assert!(text.contains("space amp:        1.500"), "{text}");
    }

    #[test]
    fn byte_sizes() {
        assert_eq!(bytes(12), "12 B");
        assert_eq!(bytes(1536), "1.5 KiB");
        assert_eq!(bytes(3 << 20), "3.0 MiB");
    }
}
