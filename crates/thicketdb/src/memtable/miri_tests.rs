//! The memtable's `unsafe` code (`mapped_vec.rs`, `byte_arena.rs`, the
//! skiplist's reads of arena bytes) at a size Miri runs in seconds: CI runs
//! this module under Miri (`.ci/debug.sh`), which checks every pointer
//! access for bounds, alignment, initialisation, lifetime and data races.
//! Under `cfg(miri)` the maps are 4 KiB (`mapped_vec::SEGMENT_BYTES`,
//! `byte_arena::BLOCK_BYTES`), so a few hundred entries cross many of
//! them, and values above 1 KiB take maps of their own. The tests also run
//! natively with the other unit tests.

use std::sync::Arc;

use super::byte_arena::{ByteArena, BLOCK_BYTES};
use super::mapped_vec::{MappedVec, SEGMENT_BYTES};
use super::*;
use crate::format::internal_key::InternalKey;
use crate::iterator::InternalIterator;

/// Entries for the tests: short keys (inline in their node) and long ones
/// (in the arena with the value), values from empty to above a block's
/// own-map limit.
fn entry(i: u32) -> (Vec<u8>, Vec<u8>) {
    let key = match i % 3 {
        0 => format!("k{i:04}").into_bytes(),
        _ => format!("long-key-{i:04}-{}", "x".repeat(40)).into_bytes(),
    };
    let len = match i % 50 {
        7 => BLOCK_BYTES / 4 + 1 + i as usize,
        n => (n as usize * 13) % 200,
    };
    let value = (0..len).map(|b| (b as u32 * 31 + i) as u8).collect();
    (key, value)
}

const ENTRIES: u32 = if cfg!(miri) { 200 } else { 3000 };

#[test]
fn entries_read_back_while_a_writer_adds_and_after() {
    let mem = Arc::new(Memtable::new(1, KeyOrder::Bytewise).tracking_locations(true));
    std::thread::scope(|s| {
        let writer = Arc::clone(&mem);
        s.spawn(move || {
            for i in 0..ENTRIES {
                let (key, value) = entry(i);
                let at = LogLocation {
                    record: u64::from(i) * 100,
                    offset: 7,
                };
                writer.add_at(u64::from(i) + 1, ValueKind::Value, &key, &value, at);
            }
        });
        // A reader racing the writer: what it sees is whole.
        let reader = Arc::clone(&mem);
        s.spawn(move || {
            for round in 0..if cfg!(miri) { 2 } else { 50 } {
                let mut it = MemtableIterator::new(Arc::clone(&reader));
                it.seek_to_first();
                let mut seen = 0;
                while it.valid() {
                    let parsed = ParsedKey::parse(it.key()).unwrap();
                    let i = parsed.sequence as u32 - 1;
                    let (key, value) = entry(i);
                    assert_eq!(parsed.user_key, &key[..], "round {round}");
                    assert_eq!(it.value(), &value[..], "round {round}");
                    seen += 1;
                    it.next();
                }
                assert!(seen <= ENTRIES as usize);
                let (key, value) = entry(round * 7);
                let lookup = InternalKey::new(&key, u64::MAX >> 8, ValueKind::SEEK);
                if let Some(found) = reader.get(lookup.encoded()) {
                    assert_eq!(found, Lookup::Value(value));
                }
            }
        });
    });
    assert_eq!(mem.len(), ENTRIES as usize);
    // Every entry, forwards in key order, then backwards; its location.
    let mut sorted: Vec<_> = (0..ENTRIES).map(entry).collect();
    sorted.sort();
    let mut it = MemtableIterator::new(Arc::clone(&mem));
    it.seek_to_first();
    for (key, value) in &sorted {
        assert!(it.valid());
        let parsed = ParsedKey::parse(it.key()).unwrap();
        assert_eq!(parsed.user_key, &key[..]);
        assert_eq!(it.value(), &value[..]);
        let at = it.location().unwrap();
        assert_eq!(at.record, (parsed.sequence - 1) * 100);
        it.next();
    }
    assert!(!it.valid());
    it.seek_to_last();
    for (key, _) in sorted.iter().rev().take(20) {
        assert_eq!(ParsedKey::parse(it.key()).unwrap().user_key, &key[..]);
        it.prev();
    }
    for i in (0..ENTRIES).step_by(11) {
        let (key, value) = entry(i);
        let lookup = InternalKey::new(&key, u64::MAX >> 8, ValueKind::SEEK);
        assert_eq!(mem.get(lookup.encoded()), Some(Lookup::Value(value)));
    }
    // The iterator holds the memtable: dropping the last other handle
    // first leaves its bytes readable.
    let (first_key, _) = sorted[0].clone();
    drop(mem);
    it.seek_to_first();
    assert_eq!(ParsedKey::parse(it.key()).unwrap().user_key, &first_key[..]);
}

#[test]
fn mapped_vec_drops_each_element_once_across_segments() {
    let counted = Arc::new(());
    let per = SEGMENT_BYTES / std::mem::size_of::<(Arc<()>, Vec<u8>)>();
    {
        let v = MappedVec::default();
        for i in 0..3 * per + 1 {
            assert_eq!(v.push((Arc::clone(&counted), vec![i as u8; i % 5])), i);
        }
        assert_eq!(v.get(per).map(|e| e.1.len()), Some(per % 5));
        assert!(v.get(3 * per + 1).is_none());
        assert_eq!(Arc::strong_count(&counted), 3 * per + 2);
    }
    assert_eq!(Arc::strong_count(&counted), 1);
}

#[test]
fn arena_bytes_stay_put_as_blocks_fill() {
    let mut arena = ByteArena::default();
    let written: Vec<_> = (0..200u32)
        .map(|i| {
            let (key, value) = entry(i);
            (arena.copy_in(&[&key, &value]), [key, value].concat())
        })
        .collect();
    for (at, bytes) in &written {
        // SAFETY: the arena outlives this loop.
        assert_eq!(unsafe { at.range(0, at.len()) }, &bytes[..]);
    }
}

/// In-place updates (TRIAD's C_m) racing lookups and iterators: a lookup
/// reads a whole value of one write (never a torn mix of two), an iterator
/// reads values that do not change under it, and the writer overwrites
/// only while neither can be reading (Miri checks the overwrite's accesses
/// against the readers' for races).
#[test]
fn values_updated_in_place_read_whole_while_lookups_and_iterators_race() {
    const KEYS: u64 = 8;
    const ROUNDS: u64 = if cfg!(miri) { 20 } else { 2000 };
    // Every byte of a value is its round, so a torn read shows as mixed bytes.
    let value = |round: u64, key: u64| vec![(round * KEYS + key) as u8; 24 + (key % 3) as usize * 300];
    let key = |k: u64| format!("key{k}").into_bytes();
    let mem = Arc::new(
        Memtable::new(1, KeyOrder::Bytewise)
            .tracking_locations(true)
            .updating_in_place(true),
    );
    let write_round = |mem: &Memtable, round: u64| {
        let mut writes = mem.in_place_writes(None);
        for k in 0..KEYS {
            let seq = round * KEYS + k + 1;
            let at = LogLocation {
                record: seq,
                offset: 0,
            };
            mem.add_in_place(seq, ValueKind::Value, &key(k), &value(round, k), at, &mut writes);
        }
        // Dropped here, its stripes released, as the write path drops it
        // once the group is published.
        writes.updated
    };
    // Alone, the second round updates every key in place.
    assert_eq!(write_round(&mem, 0), 0);
    assert_eq!(write_round(&mem, 1), KEYS);
    std::thread::scope(|s| {
        let writer = Arc::clone(&mem);
        s.spawn(move || {
            for round in 2..ROUNDS {
                write_round(&writer, round);
            }
        });
        let reader = Arc::clone(&mem);
        s.spawn(move || {
            for i in 0..if cfg!(miri) { 20 } else { 4000 } {
                let k = i % KEYS;
                let lookup = InternalKey::new(&key(k), u64::MAX >> 8, ValueKind::SEEK);
                if let Some(Lookup::Value(v)) = reader.get(lookup.encoded()) {
                    assert!(v.iter().all(|&b| b == v[0]), "a torn value");
                    assert_eq!(v.len(), value(0, k).len());
                    assert_eq!(u64::from(v[0]) % KEYS, k);
                }
            }
        });
        let iterating = Arc::clone(&mem);
        s.spawn(move || {
            for _ in 0..if cfg!(miri) { 3 } else { 200 } {
                let mut it = MemtableIterator::new(Arc::clone(&iterating));
                let mut pass = || {
                    let mut seen = std::collections::HashMap::new();
                    it.seek_to_first();
                    while it.valid() {
                        seen.insert(it.key().to_vec(), it.value().to_vec());
                        it.next();
                    }
                    seen
                };
                // The entries of the first pass have the same values on
                // the second: nothing changed in place while it was open
                // (versions may have been added).
                let first = pass();
                let again = pass();
                for (entry, value) in &first {
                    assert_eq!(again.get(entry), Some(value));
                }
            }
        });
    });
    // Each key's newest entry holds its last value and location; versions
    // were added only while an iterator was open.
    for k in 0..KEYS {
        let lookup = InternalKey::new(&key(k), u64::MAX >> 8, ValueKind::SEEK);
        assert_eq!(
            mem.get(lookup.encoded()),
            Some(Lookup::Value(value(ROUNDS - 1, k)))
        );
    }
    let mut it = MemtableIterator::new(Arc::clone(&mem));
    it.seek_to_first();
    let mut newest_updates = 0;
    while it.valid() {
        newest_updates += u64::from(it.updates());
        let k = ParsedKey::parse(it.key()).unwrap().user_key.to_vec();
        while it.valid() && ParsedKey::parse(it.key()).unwrap().user_key == k.as_slice() {
            it.next();
        }
    }
    assert_eq!(newest_updates, ROUNDS * KEYS, "every write counted");
}
