//! Knobs for building tables.

use std::sync::Arc;

use super::compression::CompressionType;
use super::filter_policy::FilterPolicy;
use crate::format::KeyOrder;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableOptions {
    /// Target uncompressed size of a data block; a block is cut once it
    /// reaches this size.
    pub block_size: usize,
    /// End data blocks near page boundaries and pad to them, at most 512
    /// bytes at a time (`Options::block_align`).
    pub block_align: bool,
    /// Entries between restart points in data blocks: larger values shrink
    /// blocks, smaller ones shorten the scan after a binary search.
    pub restart_interval: usize,
    /// Bloom filter bits per user key; 0 writes no filter. Unused when
    /// `filter_policy` is set.
    pub bloom_bits_per_key: u32,
    pub compression: CompressionType,
    /// Builds each table's filter instead of the built-in Bloom filter.
    pub filter_policy: Option<Arc<dyn FilterPolicy>>,
    /// The order entries are added in, checked by the builder.
    pub order: KeyOrder,
    /// `Some(logs)` builds a log table (TRIAD-LOG): each value is the
    /// encoded address of the value in one of `logs`.
    pub log_refs: Option<Vec<u64>>,
    /// The keyspace the table is written for, recorded in its properties.
    pub keyspace: u32,
}

impl TableOptions {
    /// The defaults, also the defaults of the store's options of the same
    /// names (`crate::options::Options`).
    pub const DEFAULT: TableOptions = TableOptions {
        block_size: 4096,
        block_align: false,
        restart_interval: 16,
        bloom_bits_per_key: 10,
        compression: CompressionType::None,
        filter_policy: None,
        order: KeyOrder::Bytewise,
        log_refs: None,
        keyspace: 0,
    };
}

impl Default for TableOptions {
    fn default() -> TableOptions {
        TableOptions::DEFAULT
    }
}
