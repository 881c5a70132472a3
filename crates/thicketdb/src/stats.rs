//! Engine counters. Cumulative counters are persisted with every MANIFEST
//! edit (and at close), so they describe the store's whole life, not one
//! process.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::format::NUM_LEVELS;

mod fields;

pub(crate) use fields::stat_struct;
pub use fields::StatValue;

macro_rules! counters {
    ([$($name:ident: $doc:literal,)*] [$($per:ident: $per_doc:literal,)*]) => {
        /// Cumulative counters, updated lock-free by every layer.
        #[derive(Debug, Default)]
        pub struct Counters {
            $(#[doc = $doc] pub $name: AtomicU64,)*
            $(#[doc = $per_doc] pub $per: [AtomicU64; NUM_LEVELS],)*
        }

        impl Counters {
            /// `(name, value)` for every counter, in declaration order, then
            /// the per-level ones as `name.N`.
            pub fn snapshot(&self) -> Vec<(String, u64)> {
                let mut out = vec![$((stringify!($name).to_string(), self.$name.load(Ordering::Relaxed)),)*];
                for (prefix, values) in [$((stringify!($per), &self.$per),)*] {
                    for (i, v) in values.iter().enumerate() {
                        out.push((format!("{prefix}.{i}"), v.load(Ordering::Relaxed)));
                    }
                }
                out
            }

            /// Restores persisted values; unknown names are ignored so that
            /// counters can be retired without breaking old stores.
            pub fn restore(&self, values: &[(String, u64)]) {
                for (name, value) in values {
                    match name.as_str() {
                        $(stringify!($name) => self.$name.store(*value, Ordering::Relaxed),)*
                        other => {
                            let per_level = other.split_once('.').and_then(|(prefix, level)| {
                                let level: usize = level.parse().ok()?;
                                let values = match prefix {
                                    $(stringify!($per) => &self.$per,)*
                                    _ => return None,
                                };
                                values.get(level)
                            });
                            if let Some(counter) = per_level {
                                counter.store(*value, Ordering::Relaxed);
                            }
                        }
                    }
                }
            }
        }
    };
}

/// Calls `$callback! { ... [name: "doc", ...] [name: "doc", ...] }` with
/// the cumulative counters, then the per-level ones (one counter per
/// level, a `Vec<u64>` in `Stats`, L0 first): the one list that declares
/// `Counters` and their copies in `Stats`.
macro_rules! with_counters {
    ($callback:ident! { $($input:tt)* }) => {
        $callback! { $($input)* [
            user_bytes_written: "Bytes of user keys and values accepted by writes.",
            user_writes: "Write operations (puts and deletes) accepted.",
            write_groups: "Write groups committed by a leader (group commit).",
            log_bytes_written: "Bytes appended to write-ahead logs.",
            flush_bytes_written: "Bytes of tables written by flushes.",
            compaction_bytes_written: "Bytes of tables written by compactions.",
            compaction_bytes_read: "Bytes of input tables read by compactions.",
            manifest_bytes_written: "Bytes appended to MANIFEST files.",
            fsyncs_log: "fdatasync calls on logs.",
            fsyncs_flush: "fdatasync calls on flush segments.",
            fsyncs_compaction: "fdatasync calls on compaction segments.",
            fsyncs_manifest: "fdatasync calls on MANIFEST, CURRENT and the directory.",
            flushes: "Memtables flushed.",
            log_rewrites: "TRIAD FLUSH_TH: full memtables whose newest versions were rewritten to a fresh log instead of flushed.",
            hot_entries_kept: "TRIAD-MEM: hot entries a flush kept in memory (re-logged) instead of writing.",
            in_place_updates: "TRIAD C_m: writes that updated their key's newest memtable value in place instead of adding a version.",
            in_place_versions_kept: "TRIAD C_m: writes that added a version instead of updating in place because a snapshot or iterator may read the older one.",
            log_limit_rewrites: "TRIAD: logs rewritten (FLUSH_TH) because the log reached `triad_log_limit`, part of `log_rewrites`.",
            log_limit_switches: "TRIAD: memtables switched for a flush because the log reached `triad_log_limit` before they were full.",
            compactions_merge: "Compactions that merged tables.",
            compactions_move: "Compactions that moved tables by metadata only.",
            compactions_concurrent: "Background compactions that started while another was running (0 with `compaction_threads = 1`).",
            tables_moved: "Tables promoted to the next level by metadata only.",
            tables_settled: "Tables promoted by metadata only beside other victims, not as LevelDB's lone trivial move (BoLT's settled compaction).",
            compactions_grouped: "Compactions whose pick took several victims of a level by BoLT's group budget (`group_compaction_bytes`); LevelDB takes one.",
            merge_checkpoints: "Journaled merge checkpoints (SifrDB early cleaning).",
            merges_resumed: "Journaled merges resumed after a crash.",
            stall_micros: "Microseconds writers spent stalled or slowed down.",
            flush_micros: "Microseconds the flush thread spent flushing (TRIAD's time in flush).",
            compaction_micros: "Microseconds compaction threads spent in background compactions (manual ones not counted).",
            holes_punched: "Dead table ranges released with hole punching.",
            segments_deleted: "Segment files deleted after their last table died.",
            search_lookups: "Point lookups run by the search threads (SifrDB parallel search); probes per lookup is `search_probes / search_lookups`.",
            search_probes: "Candidate tables probed by parallel lookups.",
            search_probes_discarded: "Parallel probes whose answer came after the lookup's result was decided.",
            buffer_hits: "Point lookups answered by a compaction-buffer table (LSbM).",
            buffer_range_pieces: "Pieces of range reads and iterators read from a level's compaction-buffer runs instead of its own run (LSbM Algorithm 4).",
            buffer_tables_removed: "Compaction-buffer tables removed by drain, trim, the space bound or a freeze (LSbM).",
            freezes: "Times a level's compaction buffer froze on repeated data (LSbM).",
            buffer_trims: "Trims of the compaction buffer that removed tables (LSbM Algorithm 2).",
            buffer_tables_trimmed: "Compaction-buffer tables removed by trims for a low cached-block share (LSbM), part of `buffer_tables_removed`.",
            gets: "Point lookups (`get`).",
            get_blocks_read: "Blocks point lookups read from files: table blocks missing from the block cache and log blocks (TRIAD-LOG) missing from the log-block cache; read amplification is `get_blocks_read / gets` (blocks read by search threads included).",
            log_table_bytes: "TRIAD-LOG: bytes of log tables (keys and value addresses) written by flushes, part of `flush_bytes_written`; the values stay in the logs.",
            log_table_data_bytes: "TRIAD-LOG: bytes of the logs flushes turned into log tables' data (up to the last value addressed), written once, by the log.",
            log_table_live_bytes: "TRIAD-LOG: user key and value bytes of the entries flushes' log tables address (hot keys and shadowed versions left out): what reached L0 as live data, the paper's flushed bytes.",
            chunk_funk_rebalances: "Chunked layout: funk rebalances (a chunk's table and log merged into a new funk), splits included.",
            chunk_splits: "Chunked layout: chunks split into several by a funk rebalance.",
            chunk_gets_from_munk: "Chunked layout: gets answered by a munk (a chunk's image in memory).",
            chunk_gets_from_row_cache: "Chunked layout: gets answered by the row cache.",
            chunk_munk_loads: "Chunked layout: munks built from their funks (the munk cache admitted a chunk).",
            chunk_munk_evictions: "Chunked layout: munks dropped by the munk cache for hotter chunks.",
            chunk_munk_rebalances: "Chunked layout: munks rebuilt in memory without the versions no snapshot needs.",
            chunk_gets_from_log: "Chunked layout: gets answered by a chunk log.",
            chunk_gets_from_table: "Chunked layout: gets answered by (or missing in) a chunk's table.",
            chunk_log_parts_searched: "Chunked layout: chunk log parts a get read because their Bloom filter admitted the key.",
            chunk_puts_waited_for_switch: "Chunked layout: writes that found a chunk immutable (a rebalance's switch holding its `rebalance_lock`) and waited for it.",
            chunk_funk_builds_skipped: "Chunked layout: funk rebalances not started because another thread was building the chunk's new funk (`funk_change_lock`); the write went on without waiting.",
            chunk_checkpoints: "Chunked layout, `durability=async`: checkpoints taken (each syncs the chunk logs holding unsynced writes and records its point in `CHECKPOINT`).",
            chunk_funk_builds_queued: "Chunked layout: funk rebalances handed to the build threads (`chunk_rebalance_threads`) by writes that found a chunk log past its limit.",
            chunk_puts_waited_for_build: "Chunked layout: writes that found a chunk log past twice its limit while the build threads were behind, and waited for (or ran) its funk rebalance.",
        ] [
            level_bytes_read: "Bytes compactions read from each level.",
            level_bytes_written: "Bytes flushes (L0) and compactions wrote into each level.",
            get_blocks_read_per_level: "Blocks point lookups probing in turn read from files of each level's own tables (part of `get_blocks_read`; blocks the search threads read are not split by level).",
            buffer_hits_per_level: "`buffer_hits` by level: point lookups answered by a table of the level's compaction buffer (LSbM's Bᵢ; B₁ holds L0's merged tables).",
            buffer_stops_per_level: "Point lookups whose search of a level's compaction buffer stopped at a removed entry covering the key, so the level's own table answered (LSbM Algorithm 3, lines 15-16).",
            buffer_blocks_read_per_level: "Blocks point lookups probing in turn read from files of each level's compaction-buffer tables (part of `get_blocks_read`).",
            buffer_range_reads_per_level: "Pieces of range reads and iterators (Algorithm 4 decisions, see `lsbm_range_by_cache`) that read a level from its compaction buffer: `buffer_range_pieces` by level.",
            level_range_reads_per_level: "Pieces of range reads and iterators where a level's compaction buffer could serve but its own run did (`lsbm_range_by_cache`).",
            buffer_tables_removed_per_level: "`buffer_tables_removed` by level.",
            buffer_tables_trimmed_per_level: "`buffer_tables_trimmed` by level.",
            freezes_per_level: "`freezes` by level.",
        ] }
    };
}
pub(crate) use with_counters;

with_counters!(counters! {});

impl Counters {
    /// Adds `n` to `counter`.
    pub fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    /// The value of `counter`.
    pub fn get(counter: &AtomicU64) -> u64 {
        counter.load(Ordering::Relaxed)
    }

    /// The counters a MANIFEST edit records: the non-zero ones, as
    /// `snapshot` names them. Every edit carries them, and most are zero
    /// in any one profile (the per-level LSbM ones doubled a `sifr` store's
    /// MANIFEST); a counter left out restores as 0, which a cumulative
    /// counter missing from the last edit was.
    pub fn persisted(&self) -> Vec<(String, u64)> {
        self.snapshot()
            .into_iter()
            .filter(|(_, value)| *value != 0)
            .collect()
    }

    /// Adds `n` to `level`'s counter of a per-level list (levels past the
    /// list are not counted).
    pub fn add_at(counters: &[AtomicU64; NUM_LEVELS], level: usize, n: u64) {
        if let Some(c) = counters.get(level) {
            Counters::add(c, n);
        }
    }

    /// Counts `bytes` read by a compaction from `level`.
    pub fn level_read(&self, level: usize, bytes: u64) {
        if let Some(c) = self.level_bytes_read.get(level) {
            Counters::add(c, bytes);
        }
    }

    /// Counts `bytes` written by a flush or compaction into `level`.
    pub fn level_written(&self, level: usize, bytes: u64) {
        if let Some(c) = self.level_bytes_written.get(level) {
            Counters::add(c, bytes);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshot_restore_round_trip() {
        let c = Counters::default();
        Counters::add(&c.fsyncs_log, 3);
        Counters::add(&c.user_bytes_written, 100);
        c.level_written(3, 42);
        let snap = c.snapshot();
        let d = Counters::default();
        d.restore(&snap);
        d.restore(&[("retired_counter".into(), 5)]);
        assert_eq!(d.snapshot(), snap);
        assert_eq!(Counters::get(&d.fsyncs_log), 3);
        assert_eq!(Counters::get(&d.level_bytes_written[3]), 42);
    }
}
