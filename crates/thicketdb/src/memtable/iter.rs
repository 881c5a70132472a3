//! A bidirectional cursor over a memtable.
//!
//! The skiplist's own cursors borrow the list, so the iterator keeps an
//! `Arc` of the memtable and refills a small window of cloned entries (a
//! refcount bump each) with one skiplist search per window, in either
//! direction. Entries are immutable once inserted, so a window never goes
//! stale; newer entries are filtered by sequence number above this layer.

use std::ops::Bound;
use std::sync::Arc;

use super::{Entry, Memtable};
use crate::error::Result;
use crate::iterator::InternalIterator;

const WINDOW: usize = 64;

pub struct MemtableIterator {
    mem: Arc<Memtable>,
    window: Vec<Entry>,
    /// Index into `window`; `window.len()` means invalid.
    pos: usize,
    /// Whether `window` is in descending order (filled by a backward step).
    backward: bool,
}

impl MemtableIterator {
    pub fn new(mem: Arc<Memtable>) -> MemtableIterator {
        MemtableIterator {
            mem,
            window: Vec::with_capacity(WINDOW),
            pos: 0,
            backward: false,
        }
    }

    fn fill_forward(&mut self, from: Bound<&Entry>) {
        let next: Vec<Entry> = self
            .mem
            .entries
            .range((from, Bound::Unbounded))
            .take(WINDOW)
            .map(|e| e.value().clone())
            .collect();
        self.window = next;
        self.backward = false;
        self.pos = 0;
    }

    fn fill_backward(&mut self, to: Bound<&Entry>) {
        let next: Vec<Entry> = self
            .mem
            .entries
            .range((Bound::Unbounded, to))
            .rev()
            .take(WINDOW)
            .map(|e| e.value().clone())
            .collect();
        self.window = next;
        self.backward = true;
        self.pos = 0;
    }

    fn current(&self) -> &Entry {
        &self.window[self.pos]
    }
}

impl InternalIterator for MemtableIterator {
    fn valid(&self) -> bool {
        self.pos < self.window.len()
    }

    fn seek_to_first(&mut self) {
        self.fill_forward(Bound::Unbounded);
    }

    fn seek_to_last(&mut self) {
        self.fill_backward(Bound::Unbounded);
    }

    fn seek(&mut self, target: &[u8]) {
        let key = Entry::seek_key(target);
        self.fill_forward(Bound::Included(&key));
    }

    fn next(&mut self) {
        if !self.backward && self.pos + 1 < self.window.len() {
            self.pos += 1;
            return;
        }
        let cur = self.current().clone();
        self.fill_forward(Bound::Excluded(&cur));
    }

    fn prev(&mut self) {
        if self.backward && self.pos + 1 < self.window.len() {
            self.pos += 1;
            return;
        }
        let cur = self.current().clone();
        self.fill_backward(Bound::Excluded(&cur));
    }

    fn key(&self) -> &[u8] {
        self.current().key()
    }

    fn value(&self) -> &[u8] {
        self.current().value()
    }

    fn status(&self) -> Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::internal_key::{InternalKey, ParsedKey, ValueKind};

    fn filled(n: u64) -> Arc<Memtable> {
        let m = Memtable::new(1);
        for i in 0..n {
            m.add(i + 1, ValueKind::Value, format!("k{i:05}").as_bytes(), b"v");
        }
        Arc::new(m)
    }

    fn user(it: &MemtableIterator) -> String {
        String::from_utf8(ParsedKey::parse(it.key()).unwrap().user_key.to_vec()).unwrap()
    }

    #[test]
    fn forward_and_backward_cover_everything() {
        let mem = filled(300);
        let mut it = MemtableIterator::new(mem.clone());
        it.seek_to_first();
        let mut n = 0;
        while it.valid() {
            assert_eq!(user(&it), format!("k{n:05}"));
            n += 1;
            it.next();
        }
        assert_eq!(n, 300);
        it.seek_to_last();
        let mut n = 300;
        while it.valid() {
            n -= 1;
            assert_eq!(user(&it), format!("k{n:05}"));
            it.prev();
        }
        assert_eq!(n, 0);
    }

    #[test]
    fn direction_changes_and_seek() {
        let mem = filled(200);
        let mut it = MemtableIterator::new(mem);
        it.seek(InternalKey::new(b"k00100", u64::MAX >> 8, ValueKind::SEEK).encoded());
        assert_eq!(user(&it), "k00100");
        it.prev();
        assert_eq!(user(&it), "k00099");
        it.next();
        assert_eq!(user(&it), "k00100");
        it.next();
        assert_eq!(user(&it), "k00101");
        it.seek(InternalKey::new(b"zzz", 1, ValueKind::SEEK).encoded());
        assert!(!it.valid());
    }
}
