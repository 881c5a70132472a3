//! The counters that show each paper's technique acted, picked from
//! ThicketDB's statistics (`thicket stats --json`) into every run's JSON
//! (`mechanism_counters`), so that a table claiming a technique's effect
//! can show them beside its figures. Cumulative over the store's life, the
//! prefill included, as the statistics are.

use std::collections::BTreeMap;

use serde_json::Value;

/// Per technique, the statistics that prove it ran.
pub const MECHANISMS: &[(&str, &[&str])] = &[
    (
        "triad",
        &[
            "hot_entries_kept",
            "log_rewrites",
            "flushes",
            "l0_compactions_deferred",
            "l0_overlap_ratio",
            "log_table_bytes",
            "log_table_data_bytes",
            "log_table_live_bytes",
            "log_batch_values",
            "log_batch_reads",
            "log_batch_read_bytes",
            "log_spill_bytes",
        ],
    ),
    (
        "lsbm",
        &[
            "compaction_buffer_bytes",
            "buffer_tables",
            "buffer_hits",
            "buffer_range_pieces",
            "buffer_tables_removed",
            "freezes",
            "buffer_bytes_per_level",
            "buffer_tables_per_level",
            "buffer_trims",
            "buffer_tables_trimmed",
        ],
    ),
    (
        "sifrdb",
        &[
            "search_lookups",
            "search_probes",
            "search_probes_discarded",
            "merge_checkpoints",
            "merges_resumed",
            "compactions_merge",
            "level_bytes_written",
        ],
    ),
    (
        "bolt",
        &[
            "fsyncs_by_cause",
            "compactions_move",
            "tables_moved",
            "holes_punched",
            "segments_deleted",
            "open_segment_files",
        ],
    ),
    (
        "yodb",
        &[
            "chunk_gets_from_munk",
            "chunk_gets_from_row_cache",
            "chunk_funk_rebalances",
            "chunk_munk_rebalances",
            "chunk_munk_loads",
            "chunk_munk_evictions",
            "chunk_splits",
            "chunk_checkpoints",
        ],
    ),
];

/// The counters of every technique, from an engine's statistics object.
pub fn pick(stats: &Value) -> BTreeMap<String, BTreeMap<String, Value>> {
    MECHANISMS
        .iter()
        .map(|(technique, names)| {
            let counters = names
                .iter()
                .filter_map(|name| Some((name.to_string(), stats.get(*name)?.clone())))
                .collect();
            (technique.to_string(), counters)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every name is a statistic ThicketDB reports: a renamed counter
    /// fails here instead of vanishing from the runs' JSON.
    #[test]
    fn every_counter_is_a_statistic() {
        let dir = tempfile::tempdir().unwrap();
        let db = thicketdb::Db::open(dir.path(), thicketdb::Options::default()).unwrap();
        let stats = crate::stats_json::to_json(&db.stats(), &db.space_usage().unwrap());
        for (technique, names) in MECHANISMS {
            for name in *names {
                assert!(
                    stats.get(*name).is_some(),
                    "{technique}: no statistic {name}"
                );
            }
        }
        let picked = pick(&stats);
        assert_eq!(picked.len(), MECHANISMS.len());
        assert_eq!(picked["triad"].len(), MECHANISMS[0].1.len());
        db.close().unwrap();
    }
}
