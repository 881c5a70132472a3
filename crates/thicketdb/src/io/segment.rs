//! Segment files (`NNNNNN.seg`): one per flush or compaction, holding the
//! task's tables back to back after a small header, made durable by a single
//! `fdatasync` (BoLT's compaction file). Tables inside are addressed by
//! `(segment, offset, length)`; see `docs/format.md`.

use std::path::Path;

use super::fs::{FileSystem, WritableFile};
use crate::error::{Error, Result};
use crate::format::checksum;
use crate::format::coding::{decode_fixed32, put_fixed32};

/// Magic bytes at the start of every segment.
pub const SEGMENT_MAGIC: &[u8; 8] = b"THKTSEG\x01";
/// Version of the segment container format.
pub const SEGMENT_FORMAT_VERSION: u32 = 1;
/// Size of the segment header; the first table starts here.
pub const SEGMENT_HEADER_LEN: u64 = 16;

/// Encodes the segment header.
pub fn encode_header() -> Vec<u8> {
    let mut h = Vec::with_capacity(SEGMENT_HEADER_LEN as usize);
    h.extend_from_slice(SEGMENT_MAGIC);
    put_fixed32(&mut h, SEGMENT_FORMAT_VERSION);
    let crc = checksum::mask(checksum::crc32c(&h));
    put_fixed32(&mut h, crc);
    h
}

/// Checks a segment header read from `file`.
pub fn verify_header(file: &Path, header: &[u8]) -> Result<()> {
    if header.len() < SEGMENT_HEADER_LEN as usize || &header[..8] != SEGMENT_MAGIC {
        return Err(Error::corruption(file, 0, "bad segment magic"));
    }
    let stored = decode_fixed32(header, 12).unwrap_or(0);
    if checksum::unmask(stored) != checksum::crc32c(&header[..12]) {
        return Err(Error::corruption(
            file,
            12,
            "segment header checksum mismatch",
        ));
    }
    let version = decode_fixed32(header, 8).unwrap_or(0);
    if version != SEGMENT_FORMAT_VERSION {
        return Err(Error::corruption(
            file,
            8,
            format!("unsupported segment format version {version}"),
        ));
    }
    Ok(())
}

/// Writes one segment: the header, then whatever tables the caller appends.
pub struct SegmentWriter {
    file: Box<dyn WritableFile>,
}

impl SegmentWriter {
    /// Creates the segment; with `direct`, written around the page cache
    /// (`use_direct_io_for_flush_and_compaction`).
    pub fn create(fs: &dyn FileSystem, path: &Path, direct: bool) -> Result<SegmentWriter> {
        let mut file = match direct {
            true => fs.create_direct(path)?,
            false => fs.create(path)?,
        };
        file.append(&encode_header())?;
        Ok(SegmentWriter { file })
    }

    /// The file tables are appended to; a table's offset is `len()` before
    /// its first byte is appended.
    pub fn file(&mut self) -> &mut dyn WritableFile {
        self.file.as_mut()
    }

    /// Bytes written so far.
    pub fn len(&self) -> u64 {
        self.file.len()
    }

    /// True when only the header was written.
    pub fn is_empty(&self) -> bool {
        self.len() <= SEGMENT_HEADER_LEN
    }

    /// Makes what was written so far durable (a merge checkpoint).
    pub fn sync(&mut self) -> Result<()> {
        self.file.sync()
    }

    /// Makes the whole segment durable with one `fdatasync`.
    pub fn finish(mut self) -> Result<u64> {
        self.file.sync()?;
        Ok(self.file.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trip_and_damage() {
        let h = encode_header();
        assert_eq!(h.len() as u64, SEGMENT_HEADER_LEN);
        verify_header(Path::new("x.seg"), &h).unwrap();
        let mut bad = h.clone();
        bad[9] ^= 1;
        assert!(verify_header(Path::new("x.seg"), &bad)
            .unwrap_err()
            .is_corruption());
    }
}
