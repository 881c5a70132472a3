//! The memtable: a concurrent skiplist of internal keys.
//!
//! One writer at a time (the write-group leader) inserts; any number of
//! readers and iterators proceed concurrently without locks. Each entry is a
//! single allocation holding the internal key and the value.

mod iter;
mod skiplist;

use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};

use crate::format::internal_key::{append_internal_key, user_key, ParsedKey, ValueKind};

pub use iter::MemtableIterator;
use skiplist::{SkipList, NIL};

/// What a memtable knows about a user key at a snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup {
    Value(Vec<u8>),
    Deleted,
}

/// An in-memory sorted buffer of recent writes, tied to one log file.
pub struct Memtable {
    list: SkipList,
    size: AtomicU64,
    log_number: u64,
}

impl Memtable {
    /// A memtable whose writes are recorded in log `log_number`.
    pub fn new(log_number: u64) -> Memtable {
        Memtable {
            list: SkipList::default(),
            size: AtomicU64::new(0),
            log_number,
        }
    }

    /// The log holding this memtable's writes.
    pub fn log_number(&self) -> u64 {
        self.log_number
    }

    /// Inserts an entry. Sequence numbers are unique, so entries never collide.
    pub fn add(&self, seq: u64, kind: ValueKind, user_key: &[u8], value: &[u8]) {
        let mut buf = Vec::with_capacity(user_key.len() + 8 + value.len());
        append_internal_key(&mut buf, user_key, seq, kind);
        let key_len = buf.len() as u32;
        buf.extend_from_slice(value);
        let charge = self.list.insert(buf.into_boxed_slice(), key_len);
        self.size.fetch_add(charge as u64, AtomicOrdering::Relaxed);
    }

    /// The newest version of the user key of `lookup` (an internal key
    /// built with `ValueKind::SEEK` at the reader's snapshot) visible to it.
    pub fn get(&self, lookup: &[u8]) -> Option<Lookup> {
        let found = self.list.seek(lookup);
        if found == NIL {
            return None;
        }
        let node = self.list.node(found);
        let parsed = ParsedKey::parse(node.key())?;
        if parsed.user_key != user_key(lookup) {
            return None;
        }
        Some(match parsed.kind {
            ValueKind::Value => Lookup::Value(node.value().to_vec()),
            ValueKind::Deletion => Lookup::Deleted,
        })
    }

    /// Approximate bytes used, compared against `write_buffer_size`.
    pub fn approximate_size(&self) -> u64 {
        self.size.load(AtomicOrdering::Relaxed)
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// True when nothing was written.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::format::internal_key::InternalKey;

    fn get(m: &Memtable, key: &[u8], seq: u64) -> Option<Lookup> {
        m.get(InternalKey::new(key, seq, ValueKind::SEEK).encoded())
    }

    #[test]
    fn get_respects_snapshot_and_deletes() {
        let m = Memtable::new(1);
        m.add(1, ValueKind::Value, b"a", b"v1");
        m.add(2, ValueKind::Value, b"a", b"v2");
        m.add(3, ValueKind::Deletion, b"a", b"");
        m.add(4, ValueKind::Value, b"b", b"x");
        assert_eq!(get(&m, b"a", 1), Some(Lookup::Value(b"v1".to_vec())));
        assert_eq!(get(&m, b"a", 2), Some(Lookup::Value(b"v2".to_vec())));
        assert_eq!(get(&m, b"a", 3), Some(Lookup::Deleted));
        assert_eq!(get(&m, b"a", 0), None);
        assert_eq!(get(&m, b"b", 3), None);
        assert_eq!(get(&m, b"c", 9), None);
        assert_eq!(m.len(), 4);
        assert!(m.approximate_size() > 4 * 64);
    }

    #[test]
    fn prefix_keys_do_not_collide() {
        let m = Memtable::new(1);
        m.add(1, ValueKind::Value, b"ab", b"1");
        assert_eq!(get(&m, b"a", 9), None);
        assert_eq!(get(&m, b"abc", 9), None);
    }
}
