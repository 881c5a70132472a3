//! A scan's cursor over its chunks: the chunks hold disjoint key ranges in
//! order, so it reads them one after another (`iterator::ConcatIterator`,
//! as a run's tables are read), each opened only when the cursor reaches
//! it: the chunk's munk, or the merge of its funk's sorted log and table.

use std::sync::Arc;

use super::chunk_views::ChunkViews;
use crate::error::Result;
use crate::format::internal_key::user_key;
use crate::format::KeyOrder;
use crate::iterator::{ConcatIterator, InternalIterator, MergingIterator, Parts};

pub(super) type ChunkRunIterator = ConcatIterator<ScanChunks>;

/// The chunks of one scan, as the cursor opens them.
pub(super) struct ScanChunks {
    views: Arc<ChunkViews>,
    order: KeyOrder,
    /// Whether table blocks read from files stay in the block cache.
    fill_cache: bool,
}

impl ChunkRunIterator {
    /// A cursor over the chunks of `views`; table blocks read from files
    /// stay in the block cache only if `fill_cache`.
    pub fn new(views: Arc<ChunkViews>, order: KeyOrder, fill_cache: bool) -> Self {
        ConcatIterator::over(ScanChunks {
            views,
            order,
            fill_cache,
        })
    }
}

impl Parts for ScanChunks {
    type Cursor = Box<dyn InternalIterator>;

    fn count(&self) -> usize {
        self.views.len()
    }

    fn part_of(&self, target: &[u8]) -> usize {
        self.views.locate(user_key(target))
    }

    fn open(&self, index: usize) -> Result<Box<dyn InternalIterator>> {
        let view = self.views.view(index)?;
        if let Some(munk) = &view.munk {
            return Ok(munk.iter());
        }
        let chunk = self.views.chunk(index);
        // The log before the table: every version in the log is newer.
        let mut sources: Vec<Box<dyn InternalIterator>> = vec![Box::new(chunk.log.sorted_iter()?)];
        if let Some(table) = chunk.table_iter(self.fill_cache)? {
            sources.push(table);
        }
        Ok(Box::new(MergingIterator::new(sources, self.order.clone())))
    }
}
