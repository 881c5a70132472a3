//! A bidirectional cursor over a memtable. Entries are immutable once
//! inserted (a memtable that updates in place updates nothing while a
//! cursor is open), so the cursor stays valid while writes continue;
//! entries newer than the reader's snapshot are filtered above this layer.

use std::sync::Arc;

use super::skiplist::NIL;
use super::{LogLocation, Memtable};
use crate::error::Result;
use crate::iterator::InternalIterator;

pub struct MemtableIterator {
    mem: Arc<Memtable>,
    /// Current node, or `NIL` when invalid.
    node: u32,
}

impl MemtableIterator {
    /// A cursor over `mem`; while it lives, `mem` updates nothing in
    /// place.
    pub fn new(mem: Arc<Memtable>) -> MemtableIterator {
        if let Some(in_place) = &mem.in_place {
            in_place.open_iterator();
        }
        MemtableIterator { mem, node: NIL }
    }

    /// Versions of the current entry's key the memtable took up to it (in
    /// place or as entries): its hotness.
    pub fn updates(&self) -> u32 {
        self.mem.list.node(self.node).updates()
    }

    /// Where the current entry's value is in the memtable's log, when the
    /// memtable tracks locations.
    pub fn location(&self) -> Option<LogLocation> {
        self.mem.list.location(self.node)?.unpack()
    }
}

impl Drop for MemtableIterator {
    fn drop(&mut self) {
        if let Some(in_place) = &self.mem.in_place {
            in_place.close_iterator();
        }
    }
}

impl InternalIterator for MemtableIterator {
    fn valid(&self) -> bool {
        self.node != NIL
    }

    fn seek_to_first(&mut self) {
        self.node = self.mem.list.first();
    }

    fn seek_to_last(&mut self) {
        self.node = self.mem.list.last();
    }

    fn seek(&mut self, target: &[u8]) {
        self.node = self.mem.list.seek(target);
    }

    fn next(&mut self) {
        self.node = self.mem.list.next(self.node);
    }

    fn prev(&mut self) {
        // No back links: find the predecessor by search, as LevelDB does.
        let key = self.mem.list.node(self.node).key();
        self.node = self.mem.list.seek_before(key);
    }

    fn key(&self) -> &[u8] {
        self.mem.list.node(self.node).key()
    }

    fn value(&self) -> &[u8] {
        self.mem.list.node(self.node).value()
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
        let m = Memtable::new(1, crate::format::KeyOrder::Bytewise);
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

    #[test]
    fn iterator_sees_entries_added_after_creation() {
        let mem = filled(10);
        let mut it = MemtableIterator::new(mem.clone());
        mem.add(100, ValueKind::Value, b"k99999", b"late");
        it.seek_to_last();
        assert_eq!(user(&it), "k99999");
    }
}
