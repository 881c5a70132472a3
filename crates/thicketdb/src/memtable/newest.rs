//! FLUSH_TH's view of a memtable: the newest version of every key, when
//! that is all anyone can read and it is small.

use std::sync::Arc;

use super::{Memtable, MemtableIterator};
use crate::format::internal_key::{ParsedKey, ValueKind};
use crate::iterator::InternalIterator;
use crate::log::RelogEntry;

/// Bytes an entry is charged for against the limit (key, value, and the
/// sequence/kind/length fields around them).
fn charge(key: &[u8], value: &[u8]) -> u64 {
    (key.len() + value.len() + 16) as u64
}

/// The newest version of each key of `mem`, in key order, if their bytes
/// stay below `limit` and no snapshot may read an older version (every
/// newest version is at or below `visible_to_all`); `None` otherwise, and
/// when `mem` holds a range tombstone (the entries could not carry it: the
/// memtable is flushed instead).
pub fn newest_entries(
    mem: &Arc<Memtable>,
    limit: u64,
    visible_to_all: u64,
) -> Option<Vec<RelogEntry>> {
    if !mem.range_deletions().is_empty() {
        return None;
    }
    let mut entries: Vec<RelogEntry> = Vec::new();
    let mut bytes = 0;
    let mut it = MemtableIterator::new(mem.clone());
    it.seek_to_first();
    while it.valid() {
        let parsed = ParsedKey::parse(it.key())?;
        let older = entries.last().is_some_and(|e| e.key == parsed.user_key);
        if !older {
            if parsed.sequence > visible_to_all {
                return None;
            }
            let value = match parsed.kind {
                ValueKind::Value => it.value().to_vec(),
                ValueKind::Deletion => Vec::new(),
            };
            bytes += charge(parsed.user_key, &value);
            if bytes >= limit {
                return None;
            }
            entries.push(RelogEntry {
                seq: parsed.sequence,
                kind: parsed.kind,
                key: parsed.user_key.to_vec(),
                value,
            });
        }
        it.next();
    }
    Some(entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newest_versions_below_the_limit_only() {
        let mem = Arc::new(Memtable::new(1, crate::format::KeyOrder::Bytewise));
        for seq in 1..=10 {
            mem.add(seq, ValueKind::Value, b"hot", format!("v{seq}").as_bytes());
        }
        mem.add(11, ValueKind::Deletion, b"gone", b"");
        let entries = newest_entries(&mem, 1000, 11).unwrap();
        let got: Vec<(u64, &[u8], &[u8])> = entries
            .iter()
            .map(|e| (e.seq, &e.key[..], &e.value[..]))
            .collect();
        assert_eq!(
            got,
            vec![(11, &b"gone"[..], &b""[..]), (10, b"hot", b"v10")]
        );
        assert!(newest_entries(&mem, 30, 11).is_none(), "too big");
        assert!(
            newest_entries(&mem, 1000, 10).is_none(),
            "a snapshot reads an older version"
        );
        mem.add_range_deletion(12, b"a", b"b");
        assert!(
            newest_entries(&mem, 1000, 12).is_none(),
            "a range tombstone"
        );
    }
}
