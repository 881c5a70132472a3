//! What a store gives every table it opens.

use std::sync::Arc;

use super::cache::BlockCache;
use super::filter_policy::FilterPolicy;
use crate::format::KeyOrder;

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
}
