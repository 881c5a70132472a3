//! The chunk list on disk (`CHUNKS`): which keyspaces the store has and
//! which funks make up each, in key order. Rewritten whole (temporary
//! file, `fdatasync`, rename, directory sync) after every split, funk
//! rebalance, keyspace creation and drop, so an open always finds the list
//! as of the last completed one. Format (`docs/format.md`, *Chunk list*):
//!
//! `magic "TKCHUNKS" | fixed32 version | fixed32 body length | body |
//! fixed32 masked crc32c(body)`. Version 3's body:
//! `varint64 last_sequence | varint64 durable | varint64 next_file_number |
//! varint64 batch_log_number | varint32 next_keyspace_id |
//! varint32 keyspaces | keyspaces × (varint32 id | length-prefixed name |
//! length-prefixed options | chunks) | counters`, where
//! `chunks = varint32 n | n × (length-prefixed start key |
//! varint64 table_number | varint64 log_number)` and
//! `counters = varint32 n | n × (length-prefixed name | varint64 value)`.
//! `durable` is 1 + the durable sequence (every write numbered up to it
//! was synced when the list was written; recovery drops the writes after
//! the first one missing above it), 0 when unknown.
//! Version 2 is version 3 without `durable` (unknown).
//! The first keyspace is the default one (id 0, options empty: the
//! store's `OPTIONS`); another's options are its `OPTIONS` text.
//! Version 1 (no keyspaces; funks without range tombstones) has
//! `last_sequence | next_file_number | batch_log_number | chunks |
//! counters`: its chunks are the default keyspace's.
//! A table number of 0 is a chunk without a table (an empty funk).

use std::path::Path;

use crate::db::keyspace_rules::DEFAULT_KEYSPACE_NAME;
use crate::error::{Error, Result};
use crate::format::coding::{
    get_length_prefixed, get_varint32, get_varint64, put_length_prefixed, put_varint32,
    put_varint64,
};

const MAGIC: &[u8; 8] = b"TKCHUNKS";
/// The version written: keyspaces, and funks that may hold range
/// tombstones (a build that reads only version 1 must not open it).
pub const CHUNK_LIST_VERSION: u32 = 3;
/// The version before the durable sequence, still read.
const CHUNK_LIST_V2: u32 = 2;
/// The version of stores from before keyspaces, still read.
const CHUNK_LIST_V1: u32 = 1;

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

/// One keyspace: its identity, options and chunks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyspaceRecord {
    /// Its id in write batches (0: the default keyspace).
    pub id: u32,
    /// Its name.
    pub name: String,
    /// Its options as an `OPTIONS` file holds them; empty for the default
    /// keyspace (the store's).
    pub options: Vec<u8>,
    /// Its chunks in key order; the first one starts at the empty key.
    pub chunks: Vec<ChunkRecord>,
}

/// The decoded `CHUNKS` file.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ChunkList {
    /// A sequence number at least as large as every one in the funks'
    /// tables when the list was written (a rebalance may drop the newest
    /// entry of a key, a deletion, from its table).
    pub last_sequence: u64,
    /// Every write numbered up to it was synced (to a chunk log, the batch
    /// log or a funk's table) before the list was written; `None` from a
    /// version-2 list. Recovery keeps, above it, only the writes up to
    /// the first one missing (`open/cut_plan.rs`).
    pub durable_sequence: Option<u64>,
    /// Every file number in use is below it.
    pub next_file_number: u64,
    /// The store-wide log of batches that span chunks.
    pub batch_log_number: u64,
    /// Every keyspace id ever given out is below it.
    pub next_keyspace_id: u32,
    /// The keyspaces, the default one first.
    pub keyspaces: Vec<KeyspaceRecord>,
    /// The store's cumulative counters by name.
    pub counters: Vec<(String, u64)>,
}

fn put_chunks(body: &mut Vec<u8>, chunks: &[ChunkRecord]) {
    put_varint32(body, chunks.len() as u32);
    for c in chunks {
        put_length_prefixed(body, &c.start);
        put_varint64(body, c.table_number);
        put_varint64(body, c.log_number);
    }
}

impl ChunkList {
    /// The file's bytes (always the current version).
    pub fn encode(&self) -> Vec<u8> {
        super::framed::encode(MAGIC, CHUNK_LIST_VERSION, &self.body(true))
    }

    /// The body of version 3, or of version 2 (without the durable
    /// sequence).
    fn body(&self, with_durable: bool) -> Vec<u8> {
        let mut body = Vec::new();
        put_varint64(&mut body, self.last_sequence);
        if with_durable {
            put_varint64(&mut body, self.durable_sequence.map_or(0, |d| d + 1));
        }
        put_varint64(&mut body, self.next_file_number);
        put_varint64(&mut body, self.batch_log_number);
        put_varint32(&mut body, self.next_keyspace_id);
        put_varint32(&mut body, self.keyspaces.len() as u32);
        for k in &self.keyspaces {
            put_varint32(&mut body, k.id);
            put_length_prefixed(&mut body, k.name.as_bytes());
            put_length_prefixed(&mut body, &k.options);
            put_chunks(&mut body, &k.chunks);
        }
        put_varint32(&mut body, self.counters.len() as u32);
        for (name, value) in &self.counters {
            put_length_prefixed(&mut body, name.as_bytes());
            put_varint64(&mut body, *value);
        }
        body
    }

    /// Parses a `CHUNKS` file of version 1, 2 or 3; errors name `file` and
    /// the offset of the damage.
    pub fn decode(file: &Path, data: &[u8]) -> Result<ChunkList> {
        let bad = |offset: usize, why: &str| Error::corruption(file, offset as u64, why);
        let (version, body) = super::framed::decode(
            file,
            data,
            MAGIC,
            "chunk list",
            &[CHUNK_LIST_V1, CHUNK_LIST_V2, CHUNK_LIST_VERSION],
        )?;
        let len = body.len();
        let mut cur = body;
        let at = |cur: &[u8]| super::framed::HEADER + len - cur.len();
        let field = |cur: &mut &[u8], what: &str| {
            get_varint64(cur).ok_or_else(|| bad(at(cur), &format!("truncated {what}")))
        };
        let small = |cur: &mut &[u8], what: &str| {
            get_varint32(cur).ok_or_else(|| bad(at(cur), &format!("truncated {what}")))
        };
        let bytes = |cur: &mut &[u8], what: &str| {
            get_length_prefixed(cur)
                .map(<[u8]>::to_vec)
                .ok_or_else(|| bad(at(cur), &format!("truncated {what}")))
        };
        let chunks = |cur: &mut &[u8]| -> Result<Vec<ChunkRecord>> {
            let count = small(cur, "chunk count")?;
            let mut chunks = Vec::with_capacity(count.min(1 << 16) as usize);
            for _ in 0..count {
                chunks.push(ChunkRecord {
                    start: bytes(cur, "chunk start key")?,
                    table_number: field(cur, "table number")?,
                    log_number: field(cur, "log number")?,
                });
            }
            Ok(chunks)
        };
        let last_sequence = field(&mut cur, "last sequence")?;
        let durable_sequence = match version {
            CHUNK_LIST_VERSION => field(&mut cur, "durable sequence")?.checked_sub(1),
            _ => None,
        };
        let next_file_number = field(&mut cur, "next file number")?;
        let batch_log_number = field(&mut cur, "batch log number")?;
        let (next_keyspace_id, keyspaces) = if version == CHUNK_LIST_V1 {
            let default = KeyspaceRecord {
                id: 0,
                name: DEFAULT_KEYSPACE_NAME.to_string(),
                options: Vec::new(),
                chunks: chunks(&mut cur)?,
            };
            (1, vec![default])
        } else {
            let next_id = small(&mut cur, "next keyspace id")?;
            let count = small(&mut cur, "keyspace count")?;
            let mut keyspaces = Vec::with_capacity(count.min(1 << 10) as usize);
            for _ in 0..count {
                let id = small(&mut cur, "keyspace id")?;
                let name = String::from_utf8(bytes(&mut cur, "keyspace name")?)
                    .map_err(|_| bad(at(cur), "keyspace name not UTF-8"))?;
                keyspaces.push(KeyspaceRecord {
                    id,
                    name,
                    options: bytes(&mut cur, "keyspace options")?,
                    chunks: chunks(&mut cur)?,
                });
            }
            (next_id, keyspaces)
        };
        let count = small(&mut cur, "counter count")?;
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
            durable_sequence,
            next_file_number,
            batch_log_number,
            next_keyspace_id,
            keyspaces,
            counters,
        };
        list.check_order().map_err(|why| bad(16, why))?;
        Ok(list)
    }

    /// The invariants readers rely on: the default keyspace first (id 0,
    /// no options of its own), ids below the next one and names unique;
    /// in each keyspace a first chunk at the empty key and start keys
    /// strictly increasing; file numbers below the next one.
    fn check_order(&self) -> std::result::Result<(), &'static str> {
        match self.keyspaces.first() {
            Some(k) if k.id == 0 && k.name == DEFAULT_KEYSPACE_NAME && k.options.is_empty() => {}
            _ => return Err("the first keyspace is not the default one"),
        }
        for (i, k) in self.keyspaces.iter().enumerate() {
            if k.id >= self.next_keyspace_id {
                return Err("keyspace id not below the next keyspace id");
            }
            if self.keyspaces[..i]
                .iter()
                .any(|o| o.id == k.id || o.name == k.name)
            {
                return Err("keyspace id or name used twice");
            }
            match k.chunks.first() {
                None => return Err("keyspace without chunks"),
                Some(first) if !first.start.is_empty() => {
                    return Err("first chunk does not start at the empty key")
                }
                Some(_) => {}
            }
            if k.chunks.windows(2).any(|w| w[0].start >= w[1].start) {
                return Err("chunk start keys out of order");
            }
        }
        let numbers = self
            .keyspaces
            .iter()
            .flat_map(|k| &k.chunks)
            .flat_map(|c| [c.table_number, c.log_number])
            .chain([self.batch_log_number]);
        if numbers.into_iter().any(|n| n >= self.next_file_number) {
            return Err("file number not below the next file number");
        }
        Ok(())
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    fn sample() -> ChunkList {
        ChunkList {
            last_sequence: 99,
            durable_sequence: Some(97),
            next_file_number: 10,
            batch_log_number: 9,
            next_keyspace_id: 3,
            keyspaces: vec![
                KeyspaceRecord {
                    id: 0,
                    name: "default".into(),
                    options: Vec::new(),
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
                },
                KeyspaceRecord {
                    id: 2,
                    name: "users".into(),
                    options: b"chunk_size=4096\n".to_vec(),
                    chunks: vec![ChunkRecord {
                        start: vec![],
                        table_number: 0,
                        log_number: 6,
                    }],
                },
            ],
            counters: vec![("user_writes".into(), 7)],
        }
    }

    /// A version 1 file as the first chunked builds wrote it.
    fn v1_bytes() -> Vec<u8> {
        let mut list = sample();
        list.counters.clear();
        encode_v1(&list)
    }

    /// `list` in version 1 (its default keyspace only).
    pub(in crate::db::chunked) fn encode_v1(list: &ChunkList) -> Vec<u8> {
        let mut body = Vec::new();
        for n in [
            list.last_sequence,
            list.next_file_number,
            list.batch_log_number,
        ] {
            put_varint64(&mut body, n);
        }
        put_chunks(&mut body, &list.keyspaces[0].chunks);
        put_varint32(&mut body, list.counters.len() as u32);
        for (name, value) in &list.counters {
            put_length_prefixed(&mut body, name.as_bytes());
            put_varint64(&mut body, *value);
        }
        super::super::framed::encode(MAGIC, 1, &body)
    }

    #[test]
    fn version_2_reads_without_a_durable_sequence() {
        let bytes = super::super::framed::encode(MAGIC, CHUNK_LIST_V2, &sample().body(false));
        let list = ChunkList::decode(Path::new("CHUNKS"), &bytes).unwrap();
        let mut want = sample();
        want.durable_sequence = None;
        assert_eq!(list, want);
    }

    #[test]
    fn an_unknown_durable_sequence_round_trips() {
        let mut list = sample();
        list.durable_sequence = None;
        assert_eq!(
            ChunkList::decode(Path::new("CHUNKS"), &list.encode()).unwrap(),
            list
        );
    }

    #[test]
    fn version_1_reads_as_the_default_keyspace() {
        let list = ChunkList::decode(Path::new("CHUNKS"), &v1_bytes()).unwrap();
        let mut want = sample();
        want.keyspaces.truncate(1);
        want.next_keyspace_id = 1;
        want.counters.clear();
        want.durable_sequence = None;
        assert_eq!(list, want);
    }

    #[test]
    fn keyspaces_must_be_unique_and_start_with_the_default() {
        let mut list = sample();
        list.keyspaces[1].name = "default".into();
        assert!(ChunkList::decode(Path::new("CHUNKS"), &list.encode()).is_err());
        let mut list = sample();
        list.keyspaces.swap(0, 1);
        assert!(ChunkList::decode(Path::new("CHUNKS"), &list.encode()).is_err());
        let mut list = sample();
        list.next_keyspace_id = 2;
        assert!(ChunkList::decode(Path::new("CHUNKS"), &list.encode()).is_err());
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
        list.keyspaces[0].chunks.swap(0, 1);
        assert!(ChunkList::decode(Path::new("CHUNKS"), &list.encode()).is_err());
    }
}
