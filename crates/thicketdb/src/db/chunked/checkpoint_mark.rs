//! `CHECKPOINT` (YoDB §3.5): in `durability=async`, the last checkpoint
//! the checkpointer completed: every write of `incarnation` numbered up to
//! `sequence` is durable. Present only while the store runs (or last ran)
//! in the asynchronous mode; its incarnation equal to the recovery table's
//! current one tells an open that the last run ended without a clean
//! close in that mode. Format (`docs/format.md`, *Checkpoint mark*):
//! `magic "TKCHKPNT" | fixed32 version (1) | fixed32 body length | body |
//! fixed32 masked crc32c(body)`, body: `varint32 incarnation |
//! varint64 sequence`.

use std::path::Path;

use crate::error::{Error, Result};
use crate::format::coding::{get_varint32, get_varint64, put_varint32, put_varint64};
use crate::io::FileSystem;

const MAGIC: &[u8; 8] = b"TKCHKPNT";
const VERSION: u32 = 1;

/// The file's path in `dir`.
/// The file's name.
const NAME: &str = "CHECKPOINT";

/// A completed checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CheckpointMark {
    /// The incarnation the checkpoint was taken in.
    pub incarnation: u32,
    /// Every write up to it is durable.
    pub sequence: u64,
}

impl CheckpointMark {
    /// The file's bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut body = Vec::new();
        put_varint32(&mut body, self.incarnation);
        put_varint64(&mut body, self.sequence);
        super::framed::encode(MAGIC, VERSION, &body)
    }

    /// Parses the file; errors name `file` and the offset of the damage.
    pub fn decode(file: &Path, data: &[u8]) -> Result<CheckpointMark> {
        let bad = |offset: usize, why: &str| Error::corruption(file, offset as u64, why);
        let (_, body) = super::framed::decode(file, data, MAGIC, "checkpoint mark", &[VERSION])?;
        let len = body.len();
        let mut cur = body;
        let at = |cur: &[u8]| super::framed::HEADER + len - cur.len();
        let incarnation =
            get_varint32(&mut cur).ok_or_else(|| bad(at(cur), "truncated incarnation"))?;
        let sequence = get_varint64(&mut cur).ok_or_else(|| bad(at(cur), "truncated sequence"))?;
        if !cur.is_empty() {
            return Err(bad(at(cur), "bytes after the sequence"));
        }
        Ok(CheckpointMark {
            incarnation,
            sequence,
        })
    }

    /// The mark in `dir`, if there is one.
    pub fn read(fs: &dyn FileSystem, dir: &Path) -> Result<Option<CheckpointMark>> {
        super::framed::read_file(fs, dir, NAME)?
            .map(|(path, data)| CheckpointMark::decode(&path, &data))
            .transpose()
    }

    /// Writes the mark in `dir` durably and atomically: a crash leaves the
    /// previous one or this one.
    pub fn write(&self, fs: &dyn FileSystem, dir: &Path) -> Result<()> {
        super::framed::write_file(fs, dir, NAME, &self.encode())
    }

    /// Removes the mark from `dir` durably (a run in the synchronous mode).
    pub fn remove(fs: &dyn FileSystem, dir: &Path) -> Result<()> {
        super::framed::remove_file(fs, dir, NAME)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_damage_names_the_file() {
        let mark = CheckpointMark {
            incarnation: 2,
            sequence: (2 << 52) + 956,
        };
        let bytes = mark.encode();
        assert_eq!(
            CheckpointMark::decode(Path::new("CHECKPOINT"), &bytes).unwrap(),
            mark
        );
        let err =
            CheckpointMark::decode(Path::new("CHECKPOINT"), &bytes[..bytes.len() - 1]).unwrap_err();
        assert!(err.to_string().contains("CHECKPOINT"), "{err}");
    }
}
