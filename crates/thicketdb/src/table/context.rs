//! What a store gives every table it opens.

use std::path::Path;
use std::sync::Arc;

use super::cache::BlockCache;
use super::filter_policy::FilterPolicy;
use crate::error::Result;
use crate::format::KeyOrder;

/// Where the values of log tables (TRIAD-LOG) are read: the store's logs.
/// A log table's entry holds the encoded address of its value.
pub trait ValueLog: Send + Sync {
    /// Reads the value whose encoded address is `address` into `out`
    /// (cleared first), checksums verified. `at` (table file, block
    /// offset) names the entry in errors about the address itself.
    fn read_value(&self, address: &[u8], out: &mut Vec<u8>, at: (&Path, u64)) -> Result<()>;
}

/// A log table's values read before a compaction walks it, in the table's
/// order of puts (`version/log_prefetch.rs`: each input log read once).
pub trait PreparedValues: Send {
    /// Reads into `out` (cleared first) the value of the put whose stored
    /// address is `address`, looking from the last one served on (a cursor
    /// that skips puts skips their values); `false` if it is not there (the
    /// cursor then reads the value from the log).
    fn value_of(&mut self, address: &[u8], out: &mut Vec<u8>) -> Result<bool>;
}

/// The store-wide settings a table is opened with; the default is a
/// bytewise table read without a cache under the built-in Bloom filter.
#[derive(Clone, Default)]
pub struct TableContext {
    /// Data blocks are read through it when set.
    pub cache: Option<Arc<BlockCache>>,
    /// The order of the table's keys.
    pub order: KeyOrder,
    /// The store's filter policy (`None`: the built-in Bloom filter). The
    /// table's filter is used only if this policy built it; otherwise the
    /// table reads as if it had none.
    pub filter_policy: Option<Arc<dyn FilterPolicy>>,
    /// Reads log tables' values; a log table opened without it is refused.
    pub value_log: Option<Arc<dyn ValueLog>>,
    /// Charge the table's index, filter, range tombstones and properties to `cache`
    /// while it is open (`charge_table_metadata`).
    pub charge_metadata: bool,
}
