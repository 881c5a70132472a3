//! The counters that show each paper's technique acted, picked from
//! ThicketDB's statistics (`thicket stats --json`) into every run's JSON
//! (`mechanism_counters`), so that a table claiming a technique's effect
//! can show them beside its figures. Cumulative over the store's life, the
//! prefill included, as the statistics are.

use std::collections::BTreeMap;

use serde_json::Value;

/// Per technique, the statistics that prove it ran. A name ending in `*`
/// picks every statistic it begins (so a counter added under the prefix,
/// e.g. a per-level `buffer_*_per_level`, reaches the runs' JSON without
/// being listed here).
pub const MECHANISMS: &[(&str, &[&str])] = &[
    (
        "triad",
        &[
            "hot_entries_kept",
            "in_place_updates",
            "in_place_versions_kept",
            "log_rewrites",
            "log_limit_rewrites",
            "log_limit_switches",
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
            "log_values_shadowed",
        ],
    ),
    (
        "lsbm",
        &[
            "compaction_buffer_bytes",
            "buffer_*",
            "freezes*",
            "level_range_reads_per_level",
            "get_blocks_read_per_level",
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
            "tables_settled",
            "compactions_grouped",
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
                .flat_map(|name| matching(stats, name))
                .map(|(name, value)| (name.to_string(), value.clone()))
                .collect();
            (technique.to_string(), counters)
        })
        .collect()
}

/// The statistics `name` picks: the one of that name, or with a trailing
/// `*` every one it begins.
fn matching<'a>(stats: &'a Value, name: &'a str) -> Vec<(&'a str, &'a Value)> {
    let Some(object) = stats.as_object() else {
        return Vec::new();
    };
    match name.strip_suffix('*') {
        Some(prefix) => object
            .iter()
            .filter(|(k, _)| k.starts_with(prefix))
            .map(|(k, v)| (k.as_str(), v))
            .collect(),
        None => object
            .get_key_value(name)
            .map(|(k, v)| (k.as_str(), v))
            .into_iter()
            .collect(),
    }
}

/// Every technique's counters, sampled once per second of a measured
/// phase: `name -> value at the end of each second` (cumulative counters
/// as they stood, gauges such as `buffer_tables_per_level` as they were).
/// Series that never changed are left out when the phase ends.
#[derive(Debug, Default)]
pub struct MechanismTimeline {
    seconds: usize,
    series: BTreeMap<String, Vec<Value>>,
}

impl MechanismTimeline {
    /// Closes seconds up to `elapsed_secs` with `stats` (several at once
    /// share the sample).
    pub fn tick(&mut self, elapsed_secs: usize, stats: impl FnOnce() -> Option<Value>) {
        if elapsed_secs <= self.seconds {
            return;
        }
        let Some(stats) = stats() else {
            return;
        };
        for counters in pick(&stats).into_values() {
            for (name, value) in counters {
                let series = self.series.entry(name).or_default();
                // A counter first seen late (none is) repeats its value back.
                if series.is_empty() {
                    series.resize(self.seconds, value.clone());
                }
                series.resize(elapsed_secs, value);
            }
        }
        self.seconds = elapsed_secs;
    }

    /// The series that changed during the phase.
    pub fn finish(self) -> BTreeMap<String, Vec<Value>> {
        self.series
            .into_iter()
            .filter(|(_, values)| values.windows(2).any(|w| w[0] != w[1]))
            .collect()
    }
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
                    !matching(&stats, name).is_empty(),
                    "{technique}: no statistic {name}"
                );
            }
        }
        let picked = pick(&stats);
        assert_eq!(picked.len(), MECHANISMS.len());
        assert_eq!(picked["triad"].len(), MECHANISMS[0].1.len());
        // The prefixes pick the per-level counters without listing them.
        for name in [
            "buffer_hits_per_level",
            "buffer_stops_per_level",
            "freezes_per_level",
        ] {
            assert!(picked["lsbm"].contains_key(name), "lsbm: {name} not picked");
        }
        db.close().unwrap();
    }

    #[test]
    fn the_timeline_keeps_the_series_that_changed() {
        let mut t = MechanismTimeline::default();
        let stats = |hits: u64| {
            Some(serde_json::json!({"buffer_hits": hits, "freezes": 1, "unrelated": hits}))
        };
        t.tick(1, || stats(5));
        t.tick(1, || panic!("a second is sampled once"));
        t.tick(3, || stats(9));
        let series = t.finish();
        assert_eq!(series.len(), 1, "{series:?}");
        assert_eq!(
            series["buffer_hits"],
            [5, 9, 9].map(|v| serde_json::json!(v))
        );
    }
}
