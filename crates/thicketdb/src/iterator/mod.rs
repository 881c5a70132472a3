//! The cursor interface shared by memtables, tables, merging and level
//! iterators.
//!
//! Keys are encoded internal keys (see `format::internal_key`). An iterator
//! that hits an I/O error or corruption becomes invalid and reports the error
//! through `status`; callers check `status` whenever `valid` turns false.

use std::path::PathBuf;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::format::KeyOrder;

pub trait InternalIterator: Send {
    /// Whether the cursor is on an entry.
    fn valid(&self) -> bool;
    /// Positions on the first entry.
    fn seek_to_first(&mut self);
    /// Positions on the last entry.
    fn seek_to_last(&mut self);
    /// Positions on the first entry whose internal key is `>= target`.
    fn seek(&mut self, target: &[u8]);
    /// Advances; requires `valid()`.
    fn next(&mut self);
    /// Steps back; requires `valid()`.
    fn prev(&mut self);
    /// The current encoded internal key; requires `valid()`.
    fn key(&self) -> &[u8];
    /// The current value; requires `valid()`.
    fn value(&self) -> &[u8];
    /// The first error met, if any.
    fn status(&self) -> Result<()>;
    /// Where the current entry is stored, so that damage found in it above
    /// this layer can name the file; `None` for entries held only in
    /// memory. Requires `valid()`.
    fn location(&self) -> Option<EntryLocation> {
        None
    }
}

/// A boxed cursor is a cursor (parts of different kinds behind one type).
impl<I: InternalIterator + ?Sized> InternalIterator for Box<I> {
    fn valid(&self) -> bool {
        (**self).valid()
    }
    fn seek_to_first(&mut self) {
        (**self).seek_to_first()
    }
    fn seek_to_last(&mut self) {
        (**self).seek_to_last()
    }
    fn seek(&mut self, target: &[u8]) {
        (**self).seek(target)
    }
    fn next(&mut self) {
        (**self).next()
    }
    fn prev(&mut self) {
        (**self).prev()
    }
    fn key(&self) -> &[u8] {
        (**self).key()
    }
    fn value(&self) -> &[u8] {
        (**self).value()
    }
    fn status(&self) -> Result<()> {
        (**self).status()
    }
    fn location(&self) -> Option<EntryLocation> {
        (**self).location()
    }
}

/// Where a stored entry lies: `entry_offset` bytes into the decoded
/// contents of the block at absolute offset `block_offset` of `file`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryLocation {
    pub file: Arc<PathBuf>,
    pub block_offset: u64,
    pub entry_offset: usize,
}

impl EntryLocation {
    /// The corruption error for damage found in this entry.
    pub fn corruption(&self, reason: &str) -> Error {
        Error::corruption(
            self.file.as_path(),
            self.block_offset,
            format!("{reason} (block entry at offset {})", self.entry_offset),
        )
    }
}

/// An iterator over a sorted vector of owned entries; used by tests and by
/// small in-memory sources.
pub struct VecIterator {
    entries: Vec<(Vec<u8>, Vec<u8>)>,
    pos: usize,
    order: KeyOrder,
}

impl VecIterator {
    /// `entries` must be sorted by internal key in `order`.
    pub fn new(entries: Vec<(Vec<u8>, Vec<u8>)>, order: KeyOrder) -> VecIterator {
        let pos = entries.len();
        VecIterator {
            entries,
            pos,
            order,
        }
    }
}

impl InternalIterator for VecIterator {
    fn valid(&self) -> bool {
        self.pos < self.entries.len()
    }
    fn seek_to_first(&mut self) {
        self.pos = 0;
    }
    fn seek_to_last(&mut self) {
        self.pos = self
            .entries
            .len()
            .checked_sub(1)
            .unwrap_or(self.entries.len());
    }
    fn seek(&mut self, target: &[u8]) {
        self.pos = self
            .entries
            .partition_point(|(k, _)| self.order.internal(k, target) == std::cmp::Ordering::Less);
    }
    fn next(&mut self) {
        self.pos += 1;
    }
    fn prev(&mut self) {
        self.pos = self.pos.checked_sub(1).unwrap_or(self.entries.len());
    }
    fn key(&self) -> &[u8] {
        &self.entries[self.pos].0
    }
    fn value(&self) -> &[u8] {
        &self.entries[self.pos].1
    }
    fn status(&self) -> Result<()> {
        Ok(())
    }
}

mod above;
mod concat;
mod merging;
pub use above::AboveKey;
pub use concat::{ConcatIterator, Parts};
pub use merging::MergingIterator;
