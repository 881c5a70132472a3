//! Table statistics, stored in the properties block.
//!
//! Encoding: a sequence of fields `tag varint | length varint | payload`.
//! Integer payloads are one varint filling the payload exactly. Readers skip
//! fields whose tag they do not know, so later versions can add fields
//! without breaking older readers; a missing field reads as its default.

use super::block_handle::BlockHandle;
use super::hll::HyperLogLog;
use crate::format::coding::{get_length_prefixed, get_varint64, put_length_prefixed, put_varint64};

const TAG_ENTRIES: u64 = 1;
const TAG_DELETIONS: u64 = 2;
const TAG_DATA_BYTES: u64 = 3;
const TAG_RAW_KEY_BYTES: u64 = 4;
const TAG_RAW_VALUE_BYTES: u64 = 5;
const TAG_SMALLEST_KEY: u64 = 6;
const TAG_LARGEST_KEY: u64 = 7;
const TAG_MIN_SEQ: u64 = 8;
const TAG_MAX_SEQ: u64 = 9;
const TAG_HLL: u64 = 10;
const TAG_FORMAT_VERSION: u64 = 11;
const TAG_FILTER_POLICY: u64 = 12;
const TAG_RANGE_DELETIONS: u64 = 13;
const TAG_RANGE_DEL_BLOCK: u64 = 14;
const TAG_LOG_REFS: u64 = 15;
const TAG_KEYSPACE: u64 = 16;

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TableProperties {
    /// Entries of every kind.
    pub entries: u64,
    /// Entries that are deletion tombstones.
    pub deletions: u64,
    /// Uncompressed bytes of all data blocks.
    pub data_bytes: u64,
    /// Sum of internal key lengths.
    pub raw_key_bytes: u64,
    pub raw_value_bytes: u64,
    /// First internal key (empty for an empty table).
    pub smallest_key: Vec<u8>,
    /// Last internal key (empty for an empty table).
    pub largest_key: Vec<u8>,
    /// Smallest and largest sequence numbers (0 for an empty table).
    pub min_seq: u64,
    pub max_seq: u64,
    /// Distinct user keys.
    pub hll: HyperLogLog,
    pub format_version: u32,
    /// Name of the filter policy that built the filter block; `None` for
    /// the built-in Bloom filter (or no filter).
    pub filter_policy: Option<String>,
    /// Range tombstones in the range-deletion block, counted once per
    /// fragment and stacked sequence (0 without a block).
    pub range_deletions: u64,
    /// Where the range-deletion block is; `None` when the table has none.
    pub range_del_block: Option<BlockHandle>,
    /// The logs a log table's values are in (TRIAD-LOG); empty for a
    /// regular table.
    pub log_refs: Vec<u64>,
    /// The id of the keyspace the table was written for (0: the default
    /// keyspace; only other ids are stored), so `repair` puts it back.
    pub keyspace: u32,
}

impl TableProperties {
    /// Heap bytes the decoded properties hold (an open table keeps them).
    pub fn memory_bytes(&self) -> u64 {
        (self.smallest_key.capacity()
            + self.largest_key.capacity()
            + self.hll.memory_bytes()
            + self.filter_policy.as_ref().map_or(0, String::capacity)
            + self.log_refs.capacity() * std::mem::size_of::<u64>()) as u64
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(
            128 + self.smallest_key.len() + self.largest_key.len() + HyperLogLog::ENCODED_LEN,
        );
        let ints = [
            (TAG_ENTRIES, self.entries),
            (TAG_DELETIONS, self.deletions),
            (TAG_DATA_BYTES, self.data_bytes),
            (TAG_RAW_KEY_BYTES, self.raw_key_bytes),
            (TAG_RAW_VALUE_BYTES, self.raw_value_bytes),
            (TAG_MIN_SEQ, self.min_seq),
            (TAG_MAX_SEQ, self.max_seq),
            (TAG_FORMAT_VERSION, u64::from(self.format_version)),
            (TAG_RANGE_DELETIONS, self.range_deletions),
        ];
        let mut payload = Vec::new();
        for (tag, v) in ints {
            payload.clear();
            put_varint64(&mut payload, v);
            put_field(&mut out, tag, &payload);
        }
        put_field(&mut out, TAG_SMALLEST_KEY, &self.smallest_key);
        put_field(&mut out, TAG_LARGEST_KEY, &self.largest_key);
        payload.clear();
        self.hll.encode_to(&mut payload);
        put_field(&mut out, TAG_HLL, &payload);
        if let Some(name) = &self.filter_policy {
            put_field(&mut out, TAG_FILTER_POLICY, name.as_bytes());
        }
        if let Some(handle) = self.range_del_block {
            payload.clear();
            handle.encode_to(&mut payload);
            put_field(&mut out, TAG_RANGE_DEL_BLOCK, &payload);
        }
        if !self.log_refs.is_empty() {
            payload.clear();
            for &log in &self.log_refs {
                put_varint64(&mut payload, log);
            }
            put_field(&mut out, TAG_LOG_REFS, &payload);
        }
        if self.keyspace != 0 {
            payload.clear();
            put_varint64(&mut payload, self.keyspace.into());
            put_field(&mut out, TAG_KEYSPACE, &payload);
        }
        out
    }

    /// Decodes properties; `Err` carries the corruption reason.
    pub fn decode(mut src: &[u8]) -> Result<TableProperties, &'static str> {
        let mut p = TableProperties::default();
        while !src.is_empty() {
            let tag = get_varint64(&mut src).ok_or("bad property tag")?;
            let payload = get_length_prefixed(&mut src).ok_or("truncated property")?;
            match tag {
                TAG_ENTRIES => p.entries = int(payload)?,
                TAG_DELETIONS => p.deletions = int(payload)?,
                TAG_DATA_BYTES => p.data_bytes = int(payload)?,
                TAG_RAW_KEY_BYTES => p.raw_key_bytes = int(payload)?,
                TAG_RAW_VALUE_BYTES => p.raw_value_bytes = int(payload)?,
                TAG_SMALLEST_KEY => p.smallest_key = payload.to_vec(),
                TAG_LARGEST_KEY => p.largest_key = payload.to_vec(),
                TAG_MIN_SEQ => p.min_seq = int(payload)?,
                TAG_MAX_SEQ => p.max_seq = int(payload)?,
                TAG_HLL => p.hll = HyperLogLog::decode(payload)?,
                TAG_FORMAT_VERSION => {
                    p.format_version =
                        u32::try_from(int(payload)?).map_err(|_| "bad format version property")?
                }
                TAG_FILTER_POLICY => {
                    let name = std::str::from_utf8(payload)
                        .map_err(|_| "filter policy name is not UTF-8")?;
                    p.filter_policy = Some(name.to_string());
                }
                TAG_RANGE_DELETIONS => p.range_deletions = int(payload)?,
                TAG_RANGE_DEL_BLOCK => {
                    p.range_del_block = Some(
                        BlockHandle::decode(payload).ok_or("bad range-deletion block handle")?,
                    )
                }
                TAG_LOG_REFS => {
                    let mut logs = payload;
                    while !logs.is_empty() {
                        let log = get_varint64(&mut logs).ok_or("bad log reference property")?;
                        p.log_refs.push(log);
                    }
                }
                TAG_KEYSPACE => {
                    p.keyspace =
                        u32::try_from(int(payload)?).map_err(|_| "bad keyspace property")?
                }
                _ => {}
            }
        }
        Ok(p)
    }
}

fn put_field(dst: &mut Vec<u8>, tag: u64, payload: &[u8]) {
    put_varint64(dst, tag);
    put_length_prefixed(dst, payload);
}

fn int(mut payload: &[u8]) -> Result<u64, &'static str> {
    let v = get_varint64(&mut payload).ok_or("bad integer property")?;
    payload
        .is_empty()
        .then_some(v)
        .ok_or("bad integer property")
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sample() -> TableProperties {
        let mut hll = HyperLogLog::new();
        hll.add(b"a");
        hll.add(b"z");
        TableProperties {
            entries: 1000,
            deletions: 7,
            data_bytes: 123_456,
            raw_key_bytes: 20_000,
            raw_value_bytes: 100_000,
            smallest_key: b"a\x01\x00\x00\x00\x00\x00\x00\x00".to_vec(),
            largest_key: b"z\x01\x05\x00\x00\x00\x00\x00\x00".to_vec(),
            min_seq: 1,
            max_seq: u64::MAX >> 8,
            hll,
            format_version: 1,
            filter_policy: None,
            range_deletions: 0,
            range_del_block: None,
            log_refs: Vec::new(),
            keyspace: 0,
        }
    }

    #[test]
    fn round_trip() {
        let p = sample();
        assert_eq!(TableProperties::decode(&p.encode()), Ok(p));
        let log_table = TableProperties {
            format_version: 3,
            log_refs: vec![7, 1 << 40],
            keyspace: 9,
            ..sample()
        };
        assert_eq!(TableProperties::decode(&log_table.encode()), Ok(log_table));
    }

    #[test]
    fn filter_policy_name_round_trips_and_must_be_utf8() {
        let p = TableProperties {
            filter_policy: Some("app.PrefixFilter2".to_string()),
            ..sample()
        };
        assert_eq!(TableProperties::decode(&p.encode()), Ok(p));
        let mut buf = sample().encode();
        put_field(&mut buf, TAG_FILTER_POLICY, &[0xff; 3]);
        assert_eq!(
            TableProperties::decode(&buf),
            Err("filter policy name is not UTF-8")
        );
    }

    #[test]
    fn range_deletion_fields_round_trip() {
        let p = TableProperties {
            range_deletions: 3,
            range_del_block: Some(BlockHandle::new(4096, 77)),
            format_version: 3,
            ..sample()
        };
        assert_eq!(TableProperties::decode(&p.encode()), Ok(p));
    }

    #[test]
    fn unknown_tags_are_skipped() {
        let mut buf = Vec::new();
        put_field(&mut buf, 999, b"from the future");
        buf.extend_from_slice(&sample().encode());
        put_field(&mut buf, 99, &[0xff; 3]);
        assert_eq!(TableProperties::decode(&buf), Ok(sample()));
    }

    #[test]
    fn missing_fields_default() {
        let mut buf = Vec::new();
        put_field(&mut buf, TAG_ENTRIES, &[5]);
        let p = TableProperties::decode(&buf).unwrap();
        assert_eq!(p.entries, 5);
        assert_eq!(p.hll, HyperLogLog::new());
    }

    #[test]
    fn malformed_fields_are_rejected() {
        let encoded = sample().encode();
        assert!(TableProperties::decode(&encoded[..encoded.len() - 1]).is_err());
        let mut buf = Vec::new();
        put_field(&mut buf, TAG_ENTRIES, &[5, 6]);
        assert!(TableProperties::decode(&buf).is_err());
        let mut buf = Vec::new();
        put_field(&mut buf, TAG_HLL, &[12, 0]);
        assert!(TableProperties::decode(&buf).is_err());
    }

    proptest! {
        #[test]
        fn decoding_random_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..128)) {
            let _ = TableProperties::decode(&bytes);
        }
    }
}
