//! The re-logged record: entries a TRIAD-MEM flush carries from a flushed
//! memtable into the active one, written to the active log with their own
//! sequence numbers (a write batch assumes consecutive ones). Layout in the
//! log section of `docs/format.md`:
//!
//! `fixed64 MARKER | u8 version | varint64 source log | varint32 count |
//! count × (varint64 seq | u8 kind | key | [value])`, keys and values
//! length-prefixed by varints. The log framing checksums it.
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
const VERSION: u8 = 1;

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

/// Encodes entries carried from the memtable of log `source`. Replay skips
/// the record when it replays `source` too: that log already holds every
/// version of them.
pub fn encode_relogged(source: u64, entries: &[RelogEntry]) -> Vec<u8> {
    let bytes: usize = entries
        .iter()
        .map(|e| e.key.len() + e.value.len() + 16)
        .sum();
    let mut out = Vec::with_capacity(24 + bytes);
    put_fixed64(&mut out, MARKER);
    out.push(VERSION);
    put_varint64(&mut out, source);
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
pub fn decode_relogged(src: &[u8]) -> std::result::Result<(u64, Vec<RelogEntry>), &'static str> {
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
/// record is known: TRIAD-LOG's addresses); returns the source log. On a
/// malformed record `f` may have seen a prefix of it.
pub fn for_each_relogged<'a>(
    mut src: &'a [u8],
    mut f: impl FnMut(u64, ValueKind, &'a [u8], &'a [u8]),
) -> std::result::Result<u64, &'static str> {
    if get_fixed64(&mut src) != Some(MARKER) {
        return Err("not a re-logged record");
    }
    let (&version, rest) = src.split_first().ok_or("re-logged record truncated")?;
    if version != VERSION {
        return Err("unknown re-logged record version");
    }
    src = rest;
    let source = get_varint64(&mut src).ok_or("re-logged record: bad source log")?;
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
        let record = encode_relogged(42, &entries());
        assert!(is_relogged(&record));
        assert_eq!(decode_relogged(&record).unwrap(), (42, entries()));
        // A write batch starts with its first sequence number (< 2^56).
        let mut batch = Vec::new();
        put_fixed64(&mut batch, (1 << 56) - 1);
        batch.extend_from_slice(&[0; 4]);
        assert!(!is_relogged(&batch));
        assert!(!is_relogged(&record[..7]));
    }

    #[test]
    fn damage_is_an_error() {
        let record = encode_relogged(42, &entries());
        for cut in 0..record.len() {
            assert!(decode_relogged(&record[..cut]).is_err(), "cut at {cut}");
        }
        let mut bad = record.clone();
        bad[8] = 2;
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
