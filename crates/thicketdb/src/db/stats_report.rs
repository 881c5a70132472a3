//! `Stats`: a point-in-time report of the engine's shape and counters.

use crate::stats::{stat_struct, with_counters};

with_counters!(stat_struct! {
    /// Engine statistics. Counters are cumulative over the store's life.
    /// `Stats::fields` lists every statistic by name.
    #[derive(Debug, Clone, Default, PartialEq)]
    pub struct Stats {
        /// Keyspaces, the default one included. The shape figures below
        /// (memtables, tables, levels, bytes) add up every keyspace.
        pub keyspaces: usize,
        /// Memtables in memory (the mutable one plus immutable ones).
        pub memtables: usize,
        /// Memtables waiting to be flushed.
        pub immutable_memtables: usize,
        /// Tables per level, L0 first.
        pub tables_per_level: Vec<usize>,
        /// Runs per level, L0 first.
        pub runs_per_level: Vec<usize>,
        /// Bytes of live tables per level.
        pub bytes_per_level: Vec<u64>,
        /// Live tables.
        pub tables: usize,
        /// Segment files holding live tables.
        pub segments: usize,
        /// Bytes of live tables.
        pub live_table_bytes: u64,
        /// Sequence number of the newest write.
        pub last_sequence: u64,
        /// Bytes of the compaction buffer's tables that hold data (LSbM);
        /// not in `live_table_bytes`, except a table moved by metadata,
        /// which is in a level and its buffer at once.
        pub compaction_buffer_bytes: u64,
        /// Tables in the compaction buffer with their data (LSbM).
        pub buffer_tables: usize,
        /// `compaction_buffer_bytes` per level (LSbM's Bᵢ; B₁ holds L0's
        /// merged tables).
        pub buffer_bytes_per_level: Vec<u64>,
        /// `buffer_tables` per level (LSbM).
        pub buffer_tables_per_level: Vec<usize>,
        /// Chunks of a chunked store (0 for an LSM store).
        pub chunks: usize,
        /// Chunks with a munk in memory (chunked layout).
        pub munks_resident: usize,
        /// Bytes of the resident munks (chunked layout).
        pub munk_bytes: u64,
        /// Bytes of the row cache's entries (chunked layout).
        pub row_cache_bytes: u64,
        /// Row cache lookups that found the key over all lookups (chunked
        /// layout; 0 before the first).
        pub row_cache_hit_ratio: f64,
        // The cumulative counters of `Counters`, one field each.
        counters,
        /// Log + tables + MANIFEST.
        pub engine_bytes_written: u64,
        /// (tables + MANIFEST) / user bytes: the work of flush and compaction.
        pub write_amplification: f64,
        /// fdatasync calls of every cause (the `fsyncs_*` counters).
        pub fsyncs: u64,
        /// A journaled merge is in progress (or was interrupted).
        pub merge_in_progress: bool,
        /// Block cache lookups that found the block (of every store
        /// sharing the cache, with the `block_cache` option), by reads that
        /// fill the cache (queries).
        pub block_cache_hits: u64,
        /// Block cache lookups that read the block from its file (of every
        /// store sharing the cache), by reads that fill the cache.
        pub block_cache_misses: u64,
        /// Block cache lookups that found the block, by reads that do not
        /// fill the cache (compactions' inputs, `fill_cache` off): not in
        /// `block_cache_hits`.
        pub block_cache_passing_hits: u64,
        /// Block cache lookups that read the block from its file, by reads
        /// that do not fill the cache: not in `block_cache_misses`.
        pub block_cache_passing_misses: u64,
        /// Bytes of blocks in the block cache (of every store sharing it).
        pub block_cache_bytes: u64,
        /// Bytes of the block cache's capacity held for open tables'
        /// indexes, filters and range tombstones (`charge_table_metadata`;
        /// of every store sharing the cache).
        pub block_cache_metadata_bytes: u64,
        /// Segment files held open by the descriptor cache (chunked: funk
        /// tables held open, at most `max_open_files`).
        pub open_segment_files: usize,
        /// TRIAD-DISK: L0 compactions deferred since open (each L0 shape
        /// counts once).
        pub l0_compactions_deferred: u64,
        /// TRIAD-DISK: the last L0 overlap ratio computed since open (-1
        /// before the first, or with `triad_disk` off).
        pub l0_overlap_ratio: f64,
        /// TRIAD-LOG: values compactions read from logs in batches sorted
        /// by their place in the log (`triad_log_compaction_batch`), since
        /// open.
        pub log_batch_values: u64,
        /// TRIAD-LOG: reads of log spans those batches took, since open
        /// (one per value without batches).
        pub log_batch_reads: u64,
        /// TRIAD-LOG: log bytes those span reads read, since open (a
        /// compaction reads each input log once: about the bytes of the
        /// logs its log tables address).
        pub log_batch_read_bytes: u64,
        /// TRIAD-LOG: value bytes compactions spilled to scratch runs
        /// beyond `triad_log_compaction_batch` held in memory, since open.
        pub log_spill_bytes: u64,
        /// TRIAD-LOG: puts of log tables whose values compactions did not
        /// read, since open: a newer version of the key in the same
        /// compaction is visible to every snapshot, so the merge drops them.
        pub log_values_shadowed: u64,
        /// The background error that stopped writes, if any.
        pub background_error: Option<String>,
    }
});

impl Stats {
    /// Block cache hits over lookups (0 before the first lookup).
    pub fn block_cache_hit_ratio(&self) -> f64 {
        let lookups = self.block_cache_hits + self.block_cache_misses;
        if lookups == 0 {
            0.0
        } else {
            self.block_cache_hits as f64 / lookups as f64
        }
    }
}
