//! `layout`: how a store organises its data on disk. An option value, so
//! it lives with the options; the layouts themselves are in `db`
//! (`db/chunked/` for the chunked one).

/// How a store organises its data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Layout {
    /// A log-structured merge tree: a write-ahead log, memtables and levels
    /// of runs (`compaction_policy` picks leveled or tiered).
    #[default]
    Lsm,
    /// YoDB's range-partitioned chunks: each chunk owns a key range and a
    /// funk (one table plus an append-only chunk log); no global log.
    Chunked,
}

named_values!(Layout, "layout", {
    Lsm => "lsm",
    Chunked => "chunked",
});
