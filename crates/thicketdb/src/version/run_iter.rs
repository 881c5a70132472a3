//! An iterator over one run: its tables concatenated in key order, each
//! opened only when the cursor reaches it.

use std::sync::Arc;

use crate::error::Result;
use crate::iterator::{ConcatIterator, Parts};
use crate::table::TableIterator;
use crate::version::log_prefetch::PreparedTables;
use crate::version::table_cache::TableCache;
use crate::version::TableMeta;

pub type RunIterator = ConcatIterator<RunTables>;

/// A run's tables, opened through the table cache.
pub struct RunTables {
    tables: Vec<Arc<TableMeta>>,
    cache: Arc<TableCache>,
    /// Whether blocks read from files are kept in the block cache.
    fill_cache: bool,
    /// A compaction's cursor (`TableCache::compaction_iter`): blocks not
    /// cached, read ahead as the store says.
    compaction: bool,
    /// Log tables' values a compaction read before the merge (each input
    /// log once), taken by each table as it opens.
    prepared: Option<Arc<PreparedTables>>,
}

impl RunIterator {
    /// A cursor over `tables`; blocks it reads from files stay in the block
    /// cache only if `fill_cache` (user reads, not compactions).
    pub fn new(tables: Vec<Arc<TableMeta>>, cache: Arc<TableCache>, fill_cache: bool) -> Self {
        ConcatIterator::over(RunTables {
            tables,
            cache,
            fill_cache,
            compaction: false,
            prepared: None,
        })
    }

    /// A compaction's cursor over `tables`: blocks it reads are not
    /// cached, tables are read ahead (`compaction_readahead_bytes`), and
    /// log tables' values are served from `prepared` when it holds them
    /// (`version/log_prefetch.rs`: each input log read once), else read
    /// from the log one by one.
    pub fn for_compaction(
        tables: Vec<Arc<TableMeta>>,
        cache: Arc<TableCache>,
        prepared: Option<Arc<PreparedTables>>,
    ) -> Self {
        ConcatIterator::over(RunTables {
            tables,
            cache,
            fill_cache: false,
            compaction: true,
            prepared,
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
        let meta = &self.tables[index];
        let it = match self.compaction {
            true => self.cache.compaction_iter(meta)?,
            false => self.cache.table(meta)?.iter_with(self.fill_cache),
        };
        Ok(match self.prepared.as_ref().and_then(|p| p.take(meta.id)) {
            Some(values) => it.with_prepared_log_values(values),
            None => it,
        })
    }
}
