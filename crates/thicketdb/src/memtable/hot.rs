//! TRIAD-MEM's hot keys: the user keys of a memtable updated most often,
//! by the update counts the write path keeps in each key's newest entry
//! (Algorithm 1's `e.updates`; with in-place updates one entry per key
//! carries them all), read by one scan at flush time.

use std::collections::HashSet;
use std::sync::Arc;

use super::{Lookup, Memtable, MemtableIterator};
use crate::format::internal_key::{InternalKey, ParsedKey, ValueKind, MAX_SEQUENCE};
use crate::iterator::InternalIterator;
use crate::log::RelogEntry;

/// The newest version of each of the `k` user keys of `mem` with the most
/// updates, among keys updated more often than the memtable's average key
/// (TRIAD: "keys updated with higher frequency than the average one").
/// A key whose newest version is above `visible_to_all` is left out: a
/// snapshot may still read one of its older versions, which only the flush
/// keeps. So is a key a newer range tombstone of `mem` covers: the flush
/// writes it with the tombstone, whereas a re-logged copy in the next
/// memtable would read as newer than the tombstone that deletes it.
pub fn hottest(mem: &Arc<Memtable>, k: usize, visible_to_all: u64) -> Vec<RelogEntry> {
    if k == 0 {
        return Vec::new();
    }
    // (updates, newest sequence, user key) of every key with several.
    let mut counted: Vec<(u64, u64, Vec<u8>)> = Vec::new();
    let mut distinct = 0u64;
    let mut updates = 0u64;
    let mut it = MemtableIterator::new(mem.clone());
    it.seek_to_first();
    while it.valid() {
        let Some(parsed) = ParsedKey::parse(it.key()) else {
            it.next();
            continue;
        };
        distinct += 1;
        let user_key = parsed.user_key.to_vec();
        let newest = parsed.sequence;
        let versions = u64::from(it.updates());
        updates += versions;
        it.next();
        while it.valid() && ParsedKey::parse(it.key()).is_some_and(|p| p.user_key == user_key) {
            it.next();
        }
        if versions > 1 && newest <= visible_to_all {
            counted.push((versions, newest, user_key));
        }
    }
    let average = updates as f64 / distinct.max(1) as f64;
    counted.retain(|(versions, _, _)| *versions as f64 > average);
    // Most versions first; ties by key, so the choice is deterministic.
    counted.sort_unstable_by(|a, b| b.0.cmp(&a.0).then_with(|| a.2.cmp(&b.2)));
    counted.truncate(k);
    counted
        .into_iter()
        .filter(|(_, seq, key)| mem.covering_seq(key, MAX_SEQUENCE) < *seq)
        .filter_map(|(_, seq, key)| {
            let found = mem.get(InternalKey::new(&key, seq, ValueKind::SEEK).encoded())?;
            let (kind, value) = match found {
                Lookup::Value(v) => (ValueKind::Value, v),
                Lookup::Deleted => (ValueKind::Deletion, Vec::new()),
            };
            Some(RelogEntry {
                seq,
                kind,
                key,
                value,
            })
        })
        .collect()
}

/// The user keys of `entries`, for leaving them out of a flush.
pub fn keys_of(entries: &[RelogEntry]) -> HashSet<Vec<u8>> {
    entries.iter().map(|e| e.key.clone()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mem_with(writes: &[(&str, u32)]) -> Arc<Memtable> {
        let mem = Arc::new(Memtable::new(1, crate::format::KeyOrder::Bytewise));
        let mut seq = 0;
        for &(key, times) in writes {
            for i in 0..times {
                seq += 1;
                mem.add(
                    seq,
                    ValueKind::Value,
                    key.as_bytes(),
                    format!("{key}{i}").as_bytes(),
                );
            }
        }
        mem
    }

    #[test]
    fn the_most_updated_keys_with_their_newest_version() {
        let mem = mem_with(&[("a", 1), ("b", 5), ("c", 1), ("d", 3), ("e", 1)]);
        let hot = hottest(&mem, 1, u64::MAX);
        assert_eq!(
            hot,
            vec![RelogEntry {
                seq: 6,
                kind: ValueKind::Value,
                key: b"b".to_vec(),
                value: b"b4".to_vec(),
            }]
        );
        let keys: Vec<Vec<u8>> = hottest(&mem, 5, u64::MAX)
            .into_iter()
            .map(|e| e.key)
            .collect();
        assert_eq!(
            keys,
            vec![b"b".to_vec(), b"d".to_vec()],
            "only above the average (2.2)"
        );
    }

    #[test]
    fn uniform_updates_have_no_hot_keys() {
        let mem = mem_with(&[("a", 2), ("b", 2), ("c", 2)]);
        assert!(hottest(&mem, 3, u64::MAX).is_empty());
        assert!(hottest(&mem_with(&[("a", 9)]), 0, u64::MAX).is_empty());
    }

    #[test]
    fn a_key_under_a_newer_range_tombstone_stays_for_the_flush() {
        let mem = mem_with(&[("a", 3), ("b", 3), ("c", 1)]);
        mem.add_range_deletion(20, b"a", b"b");
        let keys: Vec<Vec<u8>> = hottest(&mem, 5, u64::MAX)
            .into_iter()
            .map(|e| e.key)
            .collect();
        assert_eq!(keys, vec![b"b".to_vec()]);
    }

    #[test]
    fn a_deleted_hot_key_carries_its_tombstone() {
        let mem = mem_with(&[("a", 3), ("b", 1)]);
        mem.add(9, ValueKind::Deletion, b"a", b"");
        let hot = hottest(&mem, 1, u64::MAX);
        assert_eq!((hot[0].seq, hot[0].kind), (9, ValueKind::Deletion));
    }

    #[test]
    fn keys_a_snapshot_reads_older_versions_of_stay_cold() {
        let mem = mem_with(&[("a", 4), ("b", 3), ("c", 1)]);
        // a's newest is 4, b's is 7: a snapshot at 5 may read b's seq 5.
        let keys: Vec<Vec<u8>> = hottest(&mem, 5, 5).into_iter().map(|e| e.key).collect();
        assert_eq!(keys, vec![b"a".to_vec()]);
    }

    /// Updated in place, a key has one entry carrying its update count
    /// (Algorithm 1's `e.updates`): the hottest keys are found by it.
    #[test]
    fn keys_updated_in_place_are_hot_by_their_update_count() {
        let mem = Arc::new(Memtable::new(1, crate::format::KeyOrder::Bytewise).updating_in_place(true));
        let mut seq = 0;
        for (key, times) in [("a", 1), ("b", 9), ("c", 1), ("d", 4), ("e", 1)] {
            for i in 0..times {
                seq += 1;
                let mut writes = mem.in_place_writes(None);
                let value = format!("{key}{i}");
                mem.add_in_place(seq, ValueKind::Value, key.as_bytes(), value.as_bytes(), crate::memtable::LogLocation::UNKNOWN, &mut writes);
            }
        }
        assert_eq!(mem.len(), 5, "one entry per key");
        let hot = hottest(&mem, 5, u64::MAX);
        let got: Vec<(&[u8], &[u8])> = hot.iter().map(|e| (&e.key[..], &e.value[..])).collect();
        assert_eq!(got, vec![(&b"b"[..], &b"b8"[..]), (b"d", b"d3")]);
        assert_eq!(hot[0].seq, 2, "the entry's sequence, its first version's");
    }
}
