//! The chunk list on disk (`CHUNKS`): which funks make up the store, in key
//! order. Rewritten whole (temporary file, `fdatasync`, rename, directory
//! sync) after every split or funk rebalance, so an open always finds the
//! list as of the last completed one. Format (`docs/format.md`, *Chunk
//! list*):
//!
//! `magic "TKCHUNKS" | fixed32 version | fixed32 body length | body |
//! fixed32 masked crc32c(body)` with body
//! `varint64 last_sequence | varint64 next_file_number |
//! varint64 batch_log_number | varint32 chunks | chunks ×
//! (length-prefixed start key | varint64 table_number | varint64 log_number) |
//! varint32 counters | counters × (length-prefixed name | varint64 value)`.
//! The counters are the store's cumulative statistics.
//! A table number of 0 is a chunk without a table (an empty funk).

use std::path::Path;

use crate::error::{Error, Result};
use crate::format::checksum::{crc32c, mask, unmask};
use crate::format::coding::{
    get_fixed32, get_length_prefixed, get_varint32, get_varint64, put_fixed32, put_length_prefixed,
    put_varint32, put_varint64,
};

const MAGIC: &[u8; 8] = b"TKCHUNKS";
/// The only version written and read.
pub const CHUNK_LIST_VERSION: u32 = 1;

/// One chunk's entry: its first key and its funk's files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkRecord {
    /// The smallest key the chunk owns (empty for the first chunk).
    pub start: Vec<u8>,
    /// The funk's table file, 0 for none.
    pub table_number: u64,
    /// The funk's chunk log file.
    pub log_number: u64,
}

/// The decoded `CHUNKS` file.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ChunkList {
    /// A sequence number at least as large as every one in the funks'
    /// tables when the list was written (a rebalance may drop the newest
    /// entry of a key, a deletion, from its table).
    pub last_sequence: u64,
    /// Every file number in use is below it.
    pub next_file_number: u64,
    /// The store-wide log of batches that span chunks.
    pub batch_log_number: u64,
    /// The chunks in key order; the first one starts at the empty key.
    pub chunks: Vec<ChunkRecord>,
    /// The store's cumulative counters by name.
    pub counters: Vec<(String, u64)>,
}

impl ChunkList {
    /// The file's bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut body = Vec::new();
        put_varint64(&mut body, self.last_sequence);
        put_varint64(&mut body, self.next_file_number);
        put_varint64(&mut body, self.batch_log_number);
        put_varint32(&mut body, self.chunks.len() as u32);
        for c in &self.chunks {
            put_length_prefixed(&mut body, &c.start);
            put_varint64(&mut body, c.table_number);
            put_varint64(&mut body, c.log_number);
        }
        put_varint32(&mut body, self.counters.len() as u32);
        for (name, value) in &self.counters {
            put_length_prefixed(&mut body, name.as_bytes());
            put_varint64(&mut body, *value);
        }
        let mut out = Vec::with_capacity(body.len() + 20);
        out.extend_from_slice(MAGIC);
        put_fixed32(&mut out, CHUNK_LIST_VERSION);
        put_fixed32(&mut out, body.len() as u32);
        out.extend_from_slice(&body);
        put_fixed32(&mut out, mask(crc32c(&body)));
        out
    }

    /// Parses a `CHUNKS` file; errors name `file` and the offset of the
    /// damage.
    pub fn decode(file: &Path, data: &[u8]) -> Result<ChunkList> {
        let bad = |offset: usize, why: &str| Error::corruption(file, offset as u64, why);
        if data.len() < 16 || &data[..8] != MAGIC {
            return Err(bad(0, "not a chunk list (bad magic)"));
        }
        let mut header = &data[8..16];
        let version = get_fixed32(&mut header).unwrap_or_default();
        let len = get_fixed32(&mut header).unwrap_or_default() as usize;
        if version != CHUNK_LIST_VERSION {
            return Err(bad(
                8,
                &format!("chunk list version {version} (this build reads {CHUNK_LIST_VERSION})"),
            ));
        }
        let body = data
            .get(16..16 + len)
            .ok_or_else(|| bad(12, "chunk list body truncated"))?;
        let mut crc = data.get(16 + len..).unwrap_or_default();
        let stored = get_fixed32(&mut crc).ok_or_else(|| bad(16 + len, "checksum truncated"))?;
        if unmask(stored) != crc32c(body) {
            return Err(bad(16 + len, "chunk list checksum mismatch"));
        }
        let mut cur = body;
        let at = |cur: &[u8]| 16 + len - cur.len();
        let field = |cur: &mut &[u8], what: &str| {
            get_varint64(cur).ok_or_else(|| bad(at(cur), &format!("truncated {what}")))
        };
        let last_sequence = field(&mut cur, "last sequence")?;
        let next_file_number = field(&mut cur, "next file number")?;
        let batch_log_number = field(&mut cur, "batch log number")?;
        let count = get_varint32(&mut cur).ok_or_else(|| bad(at(cur), "truncated chunk count"))?;
        let mut chunks = Vec::with_capacity(count.min(1 << 16) as usize);
        for _ in 0..count {
            let start = get_length_prefixed(&mut cur)
                .ok_or_else(|| bad(at(cur), "truncated chunk start key"))?
                .to_vec();
            let table_number = field(&mut cur, "table number")?;
            let log_number = field(&mut cur, "log number")?;
            chunks.push(ChunkRecord {
                start,
                table_number,
                log_number,
            });
        }
        let count =
            get_varint32(&mut cur).ok_or_else(|| bad(at(cur), "truncated counter count"))?;
        let mut counters = Vec::with_capacity(count.min(1 << 10) as usize);
        for _ in 0..count {
            let name = get_length_prefixed(&mut cur)
                .and_then(|n| std::str::from_utf8(n).ok())
                .ok_or_else(|| bad(at(cur), "bad counter name"))?
                .to_string();
            counters.push((name, field(&mut cur, "counter value")?));
        }
        if !cur.is_empty() {
            return Err(bad(at(cur), "bytes after the last counter"));
        }
        let list = ChunkList {
            last_sequence,
            next_file_number,
            batch_log_number,
            chunks,
            counters,
        };
        list.check_order().map_err(|why| bad(16, why))?;
        Ok(list)
    }

    /// The invariants readers rely on: a first chunk at the empty key,
    /// start keys strictly increasing, file numbers below the next one.
    fn check_order(&self) -> std::result::Result<(), &'static str> {
        match self.chunks.first() {
            None => return Err("chunk list without chunks"),
            Some(first) if !first.start.is_empty() => {
                return Err("first chunk does not start at the empty key")
            }
            Some(_) => {}
        }
        if self.chunks.windows(2).any(|w| w[0].start >= w[1].start) {
            return Err("chunk start keys out of order");
        }
        let numbers = self
            .chunks
            .iter()
            .flat_map(|c| [c.table_number, c.log_number])
            .chain([self.batch_log_number]);
        if numbers.into_iter().any(|n| n >= self.next_file_number) {
            return Err("file number not below the next file number");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> ChunkList {
        ChunkList {
            last_sequence: 99,
            next_file_number: 10,
            batch_log_number: 9,
            chunks: vec![
                ChunkRecord {
                    start: vec![],
                    table_number: 3,
                    log_number: 4,
                },
                ChunkRecord {
                    start: b"m".to_vec(),
                    table_number: 0,
                    log_number: 5,
                },
            ],
            counters: vec![("user_writes".into(), 7)],
        }
    }

    #[test]
    fn round_trips() {
        let list = sample();
        assert_eq!(
            ChunkList::decode(Path::new("CHUNKS"), &list.encode()).unwrap(),
            list
        );
    }

    #[test]
    fn any_flipped_byte_is_corruption() {
        let bytes = sample().encode();
        for i in 0..bytes.len() {
            let mut damaged = bytes.clone();
            damaged[i] ^= 0x40;
            let err = ChunkList::decode(Path::new("CHUNKS"), &damaged).unwrap_err();
            assert!(err.to_string().contains("CHUNKS"), "{err}");
        }
    }

    #[test]
    fn unordered_chunks_are_refused() {
        let mut list = sample();
        list.chunks.swap(0, 1);
        assert!(ChunkList::decode(Path::new("CHUNKS"), &list.encode()).is_err());
    }
}
