//! `LOGS_CLOSED`: what a clean close knew about the chunk logs, so that the
//! next open reads none of them (the paper's §3.5: recovery builds the
//! chunk list and index from the funks, munks and filters are rebuilt on
//! demand). Written by `close` after every chunk log is synced; removed by
//! an open for writing before the first append, so a crash after that open
//! leaves no stale file. A log whose size differs from the recorded length
//! (or that the file does not name) is read in full at open, as after a
//! crash. Format (`docs/format.md`, *Closed logs*):
//!
//! `magic "TKCLOSED" | fixed32 version (1) | fixed32 body length | body |
//! fixed32 masked crc32c(body)`, body: `varint64 last_sequence |
//! varint32 n | n × (varint64 log_number | varint64 length)`.

use std::collections::HashMap;
use std::path::Path;

use crate::error::{Error, Result};
use crate::format::coding::{get_varint32, get_varint64, put_varint32, put_varint64};
use crate::io::FileSystem;

const MAGIC: &[u8; 8] = b"TKCLOSED";
const VERSION: u32 = 1;

/// The file's name.
const NAME: &str = "LOGS_CLOSED";

/// The chunk logs as a clean close left them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ClosedLogs {
    /// The store's last sequence number: no log holds a larger one.
    pub last_sequence: u64,
    /// Each log's number and its length in bytes (every byte a complete,
    /// synced record).
    pub lengths: HashMap<u64, u64>,
}

impl ClosedLogs {
    /// The file's bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut body = Vec::new();
        put_varint64(&mut body, self.last_sequence);
        put_varint32(&mut body, self.lengths.len() as u32);
        let mut logs: Vec<_> = self.lengths.iter().collect();
        logs.sort();
        for (&number, &length) in logs {
            put_varint64(&mut body, number);
            put_varint64(&mut body, length);
        }
        super::framed::encode(MAGIC, VERSION, &body)
    }

    /// Parses the file; errors name `file` and the offset of the damage.
    pub fn decode(file: &Path, data: &[u8]) -> Result<ClosedLogs> {
        let bad = |offset: usize, why: &str| Error::corruption(file, offset as u64, why);
        let (_, body) = super::framed::decode(file, data, MAGIC, "closed-logs file", &[VERSION])?;
        let len = body.len();
        let mut cur = body;
        let at = |cur: &[u8]| super::framed::HEADER + len - cur.len();
        let last_sequence =
            get_varint64(&mut cur).ok_or_else(|| bad(at(cur), "truncated last sequence"))?;
        let count = get_varint32(&mut cur).ok_or_else(|| bad(at(cur), "truncated log count"))?;
        let mut lengths = HashMap::with_capacity(count.min(1 << 16) as usize);
        for _ in 0..count {
            let number =
                get_varint64(&mut cur).ok_or_else(|| bad(at(cur), "truncated log number"))?;
            let length =
                get_varint64(&mut cur).ok_or_else(|| bad(at(cur), "truncated log length"))?;
            lengths.insert(number, length);
        }
        if !cur.is_empty() {
            return Err(bad(at(cur), "bytes after the last log"));
        }
        Ok(ClosedLogs {
            last_sequence,
            lengths,
        })
    }

    /// The file in `dir`, if a clean close left one.
    pub fn read(fs: &dyn FileSystem, dir: &Path) -> Result<Option<ClosedLogs>> {
        super::framed::read_file(fs, dir, NAME)?
            .map(|(path, data)| ClosedLogs::decode(&path, &data))
            .transpose()
    }

    /// Writes the file in `dir` durably and atomically.
    pub fn write(&self, fs: &dyn FileSystem, dir: &Path) -> Result<()> {
        super::framed::write_file(fs, dir, NAME, &self.encode())
    }

    /// Removes the file from `dir` durably (before the first append).
    pub fn remove(fs: &dyn FileSystem, dir: &Path) -> Result<()> {
        super::framed::remove_file(fs, dir, NAME)
    }
}

impl super::ChunkStore {
    /// Syncs every chunk log and records their lengths in `LOGS_CLOSED`.
    /// REQUIRES: `close`'s locks (every append lock, the metadata lock).
    pub(super) fn record_clean_close(&self) -> Result<()> {
        let chunks = self.every_chunk();
        for chunk in &chunks {
            chunk.log.sync()?;
        }
        self.durable_sequence.fetch_max(
            self.last_sequence
                .load(std::sync::atomic::Ordering::Acquire),
            std::sync::atomic::Ordering::AcqRel,
        );
        ClosedLogs {
            last_sequence: self
                .last_sequence
                .load(std::sync::atomic::Ordering::Acquire),
            lengths: chunks.iter().map(|c| (c.log.number, c.log.len())).collect(),
        }
        .write(self.fs.as_ref(), &self.dir)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> ClosedLogs {
        ClosedLogs {
            last_sequence: 77,
            lengths: [(3, 4096), (9, 0), (12, 1 << 30)].into_iter().collect(),
        }
    }

    #[test]
    fn round_trips() {
        let bytes = sample().encode();
        assert_eq!(
            ClosedLogs::decode(Path::new("LOGS_CLOSED"), &bytes).unwrap(),
            sample()
        );
    }

    #[test]
    fn every_damaged_byte_is_refused_naming_the_file() {
        let bytes = sample().encode();
        for i in 0..bytes.len() {
            let mut damaged = bytes.clone();
            damaged[i] ^= 0x40;
            let err = ClosedLogs::decode(Path::new("LOGS_CLOSED"), &damaged).unwrap_err();
            assert!(err.to_string().contains("LOGS_CLOSED"), "{err}");
        }
        for len in 0..bytes.len() {
            assert!(ClosedLogs::decode(Path::new("x"), &bytes[..len]).is_err());
        }
    }
}
