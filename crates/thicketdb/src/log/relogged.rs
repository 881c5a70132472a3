//! The re-logged record: entries a TRIAD-MEM flush carries from a flushed
//! memtable into the active one, written to the active log with their own
//! sequence numbers (a write batch assumes consecutive ones). Layout in the
//! log section of `docs/format.md`:
//!
//! `fixed64 MARKER | u8 version | varint64 source log | [varint32 keyspace]
//! | varint32 count | count × (varint64 seq | u8 kind | key | [value])`,
//! keys and values length-prefixed by varints. Version 1 carries entries of
//! the default keyspace and has no keyspace field; version 2 names the
//! keyspace. The log framing checksums it.
//!
//! `MARKER` is where a batch holds its first sequence number; sequence
//! numbers fit in 56 bits, so no batch starts with it.

use crate::format::coding::{
    get_fixed64, get_length_prefixed, get_varint32, get_varint64, put_fixed64, put_length_prefixed,
    put_varint32, put_varint64,
};
use crate::format::internal_key::ValueKind;

/// First eight bytes of every re-logged record.
const MARKER: u64 = u64::MAX;
/// Entries of the default keyspace (no keyspace field).
const VERSION: u8 = 1;
/// Entries of the keyspace the record names.
const VERSION_KEYSPACE: u8 = 2;

/// Where a re-logged record's entries come from: the log of the flushed
/// memtable and its keyspace (0: the default one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RelogSource {
    pub log: u64,
    pub keyspace: u32,
}

/// One carried entry: its original sequence number, kind, key and value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RelogEntry {
    pub seq: u64,
    pub kind: ValueKind,
    pub key: Vec<u8>,
    pub value: Vec<u8>,
}

/// Whether a log record is a re-logged record (else it is a write batch).
pub fn is_relogged(record: &[u8]) -> bool {
    record.len() >= 8 && record[..8] == MARKER.to_le_bytes()
}

/// Encodes entries carried from the memtable of log `source.log` in
/// keyspace `source.keyspace`. Replay skips the record when it replays that
/// log into that keyspace too: the log already holds every version of them.
pub fn encode_relogged(source: RelogSource, entries: &[RelogEntry]) -> Vec<u8> {
    let bytes: usize = entries
        .iter()
        .map(|e| e.key.len() + e.value.len() + 16)
        .sum();
    let mut out = Vec::with_capacity(24 + bytes);
    put_fixed64(&mut out, MARKER);
    if source.keyspace == 0 {
        out.push(VERSION);
        put_varint64(&mut out, source.log);
    } else {
        out.push(VERSION_KEYSPACE);
        put_varint64(&mut out, source.log);
        put_varint32(&mut out, source.keyspace);
    }
    put_varint32(&mut out, entries.len() as u32);
    for e in entries {
        put_varint64(&mut out, e.seq);
        out.push(e.kind as u8);
        put_length_prefixed(&mut out, &e.key);
        if e.kind == ValueKind::Value {
            put_length_prefixed(&mut out, &e.value);
        }
    }
    out
}

/// A decoded re-logged record: the source log and the carried entries.
/// The error string explains what is malformed.
pub fn decode_relogged(
    src: &[u8],
) -> std::result::Result<(RelogSource, Vec<RelogEntry>), &'static str> {
    let mut entries = Vec::new();
    let source = for_each_relogged(src, |seq, kind, key, value| {
        entries.push(RelogEntry {
            seq,
            kind,
            key: key.to_vec(),
            value: value.to_vec(),
        })
    })?;
    Ok((source, entries))
}

/// Hands every entry of a re-logged record to `f` as `(seq, kind, key,
/// value)`, the slices borrowed from `src` (so a value's offset in the
/// record is known: TRIAD-LOG's addresses); returns where they come from.
/// On a malformed record `f` may have seen a prefix of it.
pub fn for_each_relogged<'a>(
    mut src: &'a [u8],
    mut f: impl FnMut(u64, ValueKind, &'a [u8], &'a [u8]),
) -> std::result::Result<RelogSource, &'static str> {
    if get_fixed64(&mut src) != Some(MARKER) {
        return Err("not a re-logged record");
    }
    let (&version, rest) = src.split_first().ok_or("re-logged record truncated")?;
    if version != VERSION && version != VERSION_KEYSPACE {
        return Err("unknown re-logged record version");
    }
    src = rest;
    let log = get_varint64(&mut src).ok_or("re-logged record: bad source log")?;
    let keyspace = match version {
        VERSION_KEYSPACE => get_varint32(&mut src).ok_or("re-logged record: bad keyspace")?,
        _ => 0,
    };
    let source = RelogSource { log, keyspace };
    let count = get_varint32(&mut src).ok_or("re-logged record: bad count")?;
    for _ in 0..count {
        let seq = get_varint64(&mut src).ok_or("re-logged entry: bad sequence")?;
        if seq >= 1 << 56 {
            return Err("re-logged entry: sequence out of range");
        }
        let (&kind, rest) = src.split_first().ok_or("re-logged entry truncated")?;
        src = rest;
        let kind = ValueKind::from_u8(kind).ok_or("re-logged entry: bad kind")?;
        let key = get_length_prefixed(&mut src).ok_or("re-logged entry: truncated key")?;
        let value = match kind {
            ValueKind::Value => {
                get_length_prefixed(&mut src).ok_or("re-logged entry: truncated value")?
            }
            ValueKind::Deletion => &[][..],
        };
        f(seq, kind, key, value);
    }
    if !src.is_empty() {
        return Err("re-logged record: trailing bytes");
    }
    Ok(source)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn entries() -> Vec<RelogEntry> {
        vec![
            RelogEntry {
                seq: 7,
                kind: ValueKind::Value,
                key: b"hot".to_vec(),
                value: vec![9; 300],
            },
            RelogEntry {
                seq: 3,
                kind: ValueKind::Deletion,
                key: b"gone".to_vec(),
                value: Vec::new(),
            },
            RelogEntry {
                seq: (1 << 56) - 1,
                kind: ValueKind::Value,
                key: Vec::new(),
                value: Vec::new(),
            },
        ]
    }

    #[test]
    fn round_trip_and_told_apart_from_batches() {
        let default = RelogSource {
            log: 42,
            keyspace: 0,
        };
        let record = encode_relogged(default, &entries());
        assert!(is_relogged(&record));
        assert_eq!(
            record[8], VERSION,
            "default-keyspace records keep version 1"
        );
        assert_eq!(decode_relogged(&record).unwrap(), (default, entries()));
        let other = RelogSource {
            log: 42,
            keyspace: 300,
        };
        let record = encode_relogged(other, &entries());
        assert_eq!(decode_relogged(&record).unwrap(), (other, entries()));
        // A write batch starts with its first sequence number (< 2^56).
        let mut batch = Vec::new();
        put_fixed64(&mut batch, (1 << 56) - 1);
        batch.extend_from_slice(&[0; 4]);
        assert!(!is_relogged(&batch));
        assert!(!is_relogged(&record[..7]));
    }

    #[test]
    fn damage_is_an_error() {
        let source = RelogSource {
            log: 42,
            keyspace: 5,
        };
        let record = encode_relogged(source, &entries());
        for cut in 0..record.len() {
            assert!(decode_relogged(&record[..cut]).is_err(), "cut at {cut}");
        }
        let mut bad = record.clone();
        bad[8] = 3;
        assert!(decode_relogged(&bad).is_err(), "version");
        let mut longer = record;
        longer.push(0);
        assert!(decode_relogged(&longer).is_err(), "trailing bytes");
    }

    proptest! {
        #[test]
        fn decoding_random_bytes_never_panics(tail in proptest::collection::vec(any::<u8>(), 0..128)) {
            let mut record = MARKER.to_le_bytes().to_vec();
            record.push(VERSION);
            record.extend_from_slice(&tail);
            let _ = decode_relogged(&record);
            let _ = decode_relogged(&tail);
        }
    }
}
