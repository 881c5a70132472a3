//! An iterator over one run: its tables concatenated in key order, each
//! opened only when the cursor reaches it.

use std::sync::Arc;

use crate::error::Result;
use crate::iterator::{ConcatIterator, Parts};
use crate::table::TableIterator;
use crate::version::table_cache::TableCache;
use crate::version::TableMeta;

pub type RunIterator = ConcatIterator<RunTables>;

/// A run's tables, opened through the table cache.
pub struct RunTables {
    tables: Vec<Arc<TableMeta>>,
    cache: Arc<TableCache>,
    /// Whether blocks read from files are kept in the block cache.
    fill_cache: bool,
    /// Value bytes of a log table read at once (compactions; 0: one value
    /// at a time).
    log_batch_bytes: u64,
}

impl RunIterator {
    /// A cursor over `tables`; blocks it reads from files stay in the block
    /// cache only if `fill_cache` (user reads, not compactions).
    pub fn new(tables: Vec<Arc<TableMeta>>, cache: Arc<TableCache>, fill_cache: bool) -> Self {
        ConcatIterator::over(RunTables {
            tables,
            cache,
            fill_cache,
            log_batch_bytes: 0,
        })
    }

    /// A compaction's cursor over `tables`: blocks it reads are not
    /// cached, and log tables' values are read `log_batch_bytes` at a time,
    /// in log order (`triad_log_compaction_batch`).
    pub fn for_compaction(
        tables: Vec<Arc<TableMeta>>,
        cache: Arc<TableCache>,
        log_batch_bytes: u64,
    ) -> Self {
        ConcatIterator::over(RunTables {
            tables,
            cache,
            fill_cache: false,
            log_batch_bytes,
        })
    }
}

impl Parts for RunTables {
    type Cursor = TableIterator;

    fn count(&self) -> usize {
        self.tables.len()
    }

    fn part_of(&self, target: &[u8]) -> usize {
        let order = self.cache.order();
        self.tables
            .partition_point(|t| order.internal(&t.largest, target) == std::cmp::Ordering::Less)
    }

    fn open(&self, index: usize) -> Result<TableIterator> {
        let it = self
            .cache
            .table(&self.tables[index])?
            .iter_with(self.fill_cache);
        Ok(it.with_batched_log_values(self.log_batch_bytes))
    }
}
