//! A scan's cursor over its chunks: the chunks hold disjoint key ranges in
//! order, so it reads them one after another (as a run's tables are read,
//! `version/run_iter.rs`), each opened only when the cursor reaches it:
//! the chunk's munk, or the merge of its funk's sorted log and table.

use std::sync::Arc;

use super::chunk_views::{ChunkView, ChunkViews};
use crate::error::{Error, Result};
use crate::format::internal_key::user_key;
use crate::format::KeyOrder;
use crate::iterator::MergingIterator;
use crate::iterator::{EntryLocation, InternalIterator};

pub(super) struct ChunkRunIterator {
    views: Arc<ChunkViews>,
    /// Index of the chunk `inner` iterates.
    index: usize,
    inner: Option<Box<dyn InternalIterator>>,
    error: Option<Error>,
    order: KeyOrder,
    /// Whether table blocks read from files stay in the block cache.
    fill_cache: bool,
}

impl ChunkRunIterator {
    pub fn new(views: Arc<ChunkViews>, order: KeyOrder, fill_cache: bool) -> ChunkRunIterator {
        ChunkRunIterator {
            views,
            index: 0,
            inner: None,
            error: None,
            order,
            fill_cache,
        }
    }

    /// The cursor over one chunk's view.
    fn chunk_iter(&self, index: usize, view: &ChunkView) -> Result<Box<dyn InternalIterator>> {
        if let Some(munk) = &view.munk {
            return Ok(munk.iter());
        }
        let chunk = self.views.chunk(index);
        // The log before the table: every version in the log is newer.
        let mut sources: Vec<Box<dyn InternalIterator>> = vec![Box::new(chunk.log.sorted_iter()?)];
        if let Some(table) = &chunk.table {
            sources.push(Box::new(table.iter_with(self.fill_cache)));
        }
        Ok(Box::new(MergingIterator::new(sources, self.order.clone())))
    }

    fn open(&mut self, index: usize) -> bool {
        self.inner = None;
        self.index = index;
        if index >= self.views.len() || self.error.is_some() {
            return false;
        }
        let opened = self
            .views
            .view(index)
            .and_then(|view| self.chunk_iter(index, &view));
        match opened {
            Ok(inner) => {
                self.inner = Some(inner);
                true
            }
            Err(e) => {
                self.error = Some(e);
                false
            }
        }
    }

    fn inner_valid(&self) -> bool {
        self.inner.as_ref().is_some_and(|i| i.valid())
    }

    /// Moves the current chunk's error, if any, into `self.error`.
    fn inner_failed(&mut self) -> bool {
        match self.inner.as_ref().map(|i| i.status()) {
            Some(Err(e)) => {
                self.error = Some(e);
                self.inner = None;
                true
            }
            _ => false,
        }
    }

    /// After the current chunk ran out, moves forward to the next chunk
    /// with entries (or stops on an error).
    fn skip_forward(&mut self) {
        while !self.inner_valid() {
            if self.inner_failed() || !self.open(self.index + 1) {
                return;
            }
            if let Some(inner) = &mut self.inner {
                inner.seek_to_first();
            }
        }
    }

    fn skip_backward(&mut self) {
        while !self.inner_valid() {
            if self.inner_failed() {
                return;
            }
            if self.index == 0 || !self.open(self.index - 1) {
                self.inner = None;
                return;
            }
            if let Some(inner) = &mut self.inner {
                inner.seek_to_last();
            }
        }
    }

    fn inner(&self) -> &dyn InternalIterator {
        self.inner
            .as_deref()
            .expect("chunk iterator used while invalid")
    }
}

impl InternalIterator for ChunkRunIterator {
    fn valid(&self) -> bool {
        self.error.is_none() && self.inner_valid()
    }

    fn seek_to_first(&mut self) {
        if self.open(0) {
            if let Some(inner) = &mut self.inner {
                inner.seek_to_first();
            }
        }
        self.skip_forward();
    }

    fn seek_to_last(&mut self) {
        if self.views.len() == 0 {
            self.inner = None;
            return;
        }
        if self.open(self.views.len() - 1) {
            if let Some(inner) = &mut self.inner {
                inner.seek_to_last();
            }
        }
        self.skip_backward();
    }

    fn seek(&mut self, target: &[u8]) {
        let index = self.views.locate(user_key(target));
        // Seeking within the chunk already open keeps its cursor's state
        // (the sorted log view, the table's blocks).
        let reuse = self.inner.is_some() && self.index == index && self.error.is_none();
        if reuse || self.open(index) {
            if let Some(inner) = &mut self.inner {
                inner.seek(target);
            }
        }
        self.skip_forward();
    }

    fn next(&mut self) {
        if let Some(inner) = &mut self.inner {
            inner.next();
        }
        self.skip_forward();
    }

    fn prev(&mut self) {
        if let Some(inner) = &mut self.inner {
            inner.prev();
        }
        self.skip_backward();
    }

    fn key(&self) -> &[u8] {
        self.inner().key()
    }

    fn value(&self) -> &[u8] {
        self.inner().value()
    }

    fn status(&self) -> Result<()> {
        if let Some(e) = &self.error {
            return Err(e.clone());
        }
        self.inner.as_ref().map_or(Ok(()), |i| i.status())
    }

    fn location(&self) -> Option<EntryLocation> {
        self.inner.as_ref()?.location()
    }
}
