//! The memtable: a concurrent skiplist of internal keys.
//!
//! One writer at a time (the write-group leader) inserts; any number of
//! readers and iterators proceed concurrently without locks. Each entry is a
//! single allocation holding the internal key and the value.

mod iter;

use std::cmp::Ordering;
use std::ops::Bound;
use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};

use bytes::Bytes;
use crossbeam_skiplist::SkipSet;

use crate::format::internal_key::{self, append_internal_key, ParsedKey, ValueKind};

pub use iter::MemtableIterator;

/// Per-entry bookkeeping counted against `write_buffer_size` on top of the
/// key and value bytes (skiplist node, tower and refcounts).
const ENTRY_OVERHEAD: u64 = 80;

/// One memtable entry: `internal key ++ value` in one buffer.
#[derive(Clone)]
pub(crate) struct Entry {
    buf: Bytes,
    key_len: u32,
}

impl Entry {
    fn new(user_key: &[u8], seq: u64, kind: ValueKind, value: &[u8]) -> Entry {
        let mut buf = Vec::with_capacity(user_key.len() + 8 + value.len());
        append_internal_key(&mut buf, user_key, seq, kind);
        let key_len = buf.len() as u32;
        buf.extend_from_slice(value);
        Entry {
            buf: Bytes::from(buf),
            key_len,
        }
    }

    fn seek_key(internal_key: &[u8]) -> Entry {
        Entry {
            buf: Bytes::copy_from_slice(internal_key),
            key_len: internal_key.len() as u32,
        }
    }

    pub(crate) fn key(&self) -> &[u8] {
        &self.buf[..self.key_len as usize]
    }

    pub(crate) fn value(&self) -> &[u8] {
        &self.buf[self.key_len as usize..]
    }
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    fn cmp(&self, other: &Self) -> Ordering {
        internal_key::compare(self.key(), other.key())
    }
}

/// What a memtable knows about a user key at a snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup {
    Value(Bytes),
    Deleted,
}

/// An in-memory sorted buffer of recent writes, tied to one log file.
pub struct Memtable {
    entries: SkipSet<Entry>,
    size: AtomicU64,
    log_number: u64,
}

impl Memtable {
    /// A memtable whose writes are recorded in log `log_number`.
    pub fn new(log_number: u64) -> Memtable {
        Memtable {
            entries: SkipSet::new(),
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
        let entry = Entry::new(user_key, seq, kind, value);
        self.size.fetch_add(
            entry.buf.len() as u64 + ENTRY_OVERHEAD,
            AtomicOrdering::Relaxed,
        );
        self.entries.insert(entry);
    }

    /// The newest version of `user_key` with sequence `<= snapshot`.
    pub fn get(&self, user_key: &[u8], snapshot: u64) -> Option<Lookup> {
        let seek = Entry::seek_key(
            &internal_key::InternalKey::new(user_key, snapshot, ValueKind::SEEK).into_vec(),
        );
        let found = self.entries.lower_bound(Bound::Included(&seek))?;
        let parsed = ParsedKey::parse(found.key())?;
        if parsed.user_key != user_key {
            return None;
        }
        Some(match parsed.kind {
            ValueKind::Value => Lookup::Value(found.buf.slice(found.key_len as usize..)),
            ValueKind::Deletion => Lookup::Deleted,
        })
    }

    /// Approximate bytes used, compared against `write_buffer_size`.
    pub fn approximate_size(&self) -> u64 {
        self.size.load(AtomicOrdering::Relaxed)
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when nothing was written.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn get_respects_snapshot_and_deletes() {
        let m = Memtable::new(1);
        m.add(1, ValueKind::Value, b"a", b"v1");
        m.add(2, ValueKind::Value, b"a", b"v2");
        m.add(3, ValueKind::Deletion, b"a", b"");
        m.add(4, ValueKind::Value, b"b", b"x");
        assert_eq!(
            m.get(b"a", 1),
            Some(Lookup::Value(Bytes::from_static(b"v1")))
        );
        assert_eq!(
            m.get(b"a", 2),
            Some(Lookup::Value(Bytes::from_static(b"v2")))
        );
        assert_eq!(m.get(b"a", 3), Some(Lookup::Deleted));
        assert_eq!(m.get(b"a", 0), None);
        assert_eq!(m.get(b"b", 3), None);
        assert_eq!(m.get(b"c", 9), None);
        assert_eq!(m.len(), 4);
        assert!(m.approximate_size() > 4 * ENTRY_OVERHEAD);
    }

    #[test]
    fn prefix_keys_do_not_collide() {
        let m = Memtable::new(1);
        m.add(1, ValueKind::Value, b"ab", b"1");
        assert_eq!(m.get(b"a", 9), None);
        assert_eq!(m.get(b"abc", 9), None);
    }
}
