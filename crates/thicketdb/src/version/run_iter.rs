//! An iterator over one run: its tables concatenated in key order, each
//! opened only when the cursor reaches it.

use std::sync::Arc;

use crate::error::{Error, Result};
use crate::iterator::{EntryLocation, InternalIterator};
use crate::table::TableIterator;
use crate::version::table_cache::TableCache;
use crate::version::TableMeta;

pub struct RunIterator {
    tables: Vec<Arc<TableMeta>>,
    cache: Arc<TableCache>,
    /// Index of the table `inner` iterates.
    index: usize,
    inner: Option<TableIterator>,
    error: Option<Error>,
    /// Whether blocks read from files are kept in the block cache.
    fill_cache: bool,
}

impl RunIterator {
    /// A cursor over `tables`; blocks it reads from files stay in the block
    /// cache only if `fill_cache` (user reads, not compactions).
    pub fn new(
        tables: Vec<Arc<TableMeta>>,
        cache: Arc<TableCache>,
        fill_cache: bool,
    ) -> RunIterator {
        RunIterator {
            fill_cache,
            tables,
            cache,
            index: 0,
            inner: None,
            error: None,
        }
    }

    fn open(&mut self, index: usize) -> bool {
        self.inner = None;
        self.index = index;
        if index >= self.tables.len() || self.error.is_some() {
            return false;
        }
        match self.cache.table(&self.tables[index]) {
            Ok(t) => {
                self.inner = Some(t.iter_with(self.fill_cache));
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

    /// Moves the current table's error, if any, into `self.error`.
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

    /// After the current table ran out, moves forward to the next non-empty
    /// table (or stops on an error).
    fn skip_forward(&mut self) {
        while !self.inner_valid() {
            if self.inner_failed() {
                return;
            }
            if !self.open(self.index + 1) {
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

    fn inner(&self) -> &TableIterator {
        self.inner
            .as_ref()
            .expect("run iterator used while invalid")
    }
}

impl InternalIterator for RunIterator {
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
        if self.tables.is_empty() {
            self.inner = None;
            return;
        }
        if self.open(self.tables.len() - 1) {
            if let Some(inner) = &mut self.inner {
                inner.seek_to_last();
            }
        }
        self.skip_backward();
    }

    fn seek(&mut self, target: &[u8]) {
        let order = self.cache.order();
        let i = self
            .tables
            .partition_point(|t| order.internal(&t.largest, target) == std::cmp::Ordering::Less);
        if self.open(i) {
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
