//! Blocks as stored on disk: the (possibly compressed) bytes followed by a
//! 5-byte trailer, a compression type byte and the masked CRC32C of the
//! bytes and the type byte.

use std::cell::Cell;
use std::path::Path;

use super::block_handle::BlockHandle;
use super::compression::{self, CompressionType};
use crate::error::{Error, Result};
use crate::format::checksum;
use crate::format::coding::decode_fixed32;
use crate::io::{RandomAccessFile, WritableFile};

/// Bytes following every block: type byte + masked CRC32C.
pub const BLOCK_TRAILER_LEN: usize = 5;

thread_local! {
    /// Blocks this thread read from files (read amplification).
    static BLOCKS_READ: Cell<u64> = const { Cell::new(0) };
}

/// Blocks (table blocks, and log fragments noted with
/// [`note_block_read`]) the calling thread has read from files so far: the
/// difference across a lookup is its read amplification.
pub fn blocks_read_on_this_thread() -> u64 {
    BLOCKS_READ.with(Cell::get)
}

/// Counts one block read from a file by the calling thread.
pub fn note_block_read() {
    BLOCKS_READ.with(|c| c.set(c.get() + 1));
}

/// Appends `raw` (compressed when worthwhile) and its trailer to `file`.
/// `table_start` is the table's absolute offset; `scratch` is reused
/// compression output.
pub fn write_block(
    file: &mut dyn WritableFile,
    table_start: u64,
    raw: &[u8],
    compression: CompressionType,
    scratch: &mut Vec<u8>,
) -> Result<BlockHandle> {
    let kind = compression::compress(compression, raw, scratch);
    let stored: &[u8] = if kind == CompressionType::None {
        raw
    } else {
        scratch
    };
    write_stored(file, table_start, stored, kind)
}

/// Appends a block's stored bytes, compressed as `kind` says, and its
/// trailer to `file`.
pub fn write_stored(
    file: &mut dyn WritableFile,
    table_start: u64,
    stored: &[u8],
    kind: CompressionType,
) -> Result<BlockHandle> {
    let handle = BlockHandle::new(file.len() - table_start, stored.len() as u64);
    let mut trailer = [0u8; BLOCK_TRAILER_LEN];
    trailer[0] = kind as u8;
    let crc = checksum::crc32c_two(stored, &trailer[..1]);
    trailer[1..].copy_from_slice(&checksum::mask(crc).to_le_bytes());
    file.append(stored)?;
    file.append(&trailer)?;
    Ok(handle)
}

/// Where a table's blocks are read from, for reads and error reports.
#[derive(Clone, Copy)]
pub struct TableFile<'a> {
    pub file: &'a dyn RandomAccessFile,
    pub path: &'a Path,
    /// Absolute offset of the table in the file.
    pub start: u64,
    /// Bytes of the table before its footer; every block must end by then.
    pub blocks_end: u64,
}

impl TableFile<'_> {
    /// Absolute file offset of `handle`'s block.
    /// (Saturating: a corrupt handle must yield an error, not an overflow.)
    pub fn absolute(&self, handle: BlockHandle) -> u64 {
        self.start.saturating_add(handle.offset)
    }

    /// The error for a block at `handle` whose contents do not decode.
    pub fn corruption(&self, handle: BlockHandle, reason: &str) -> Error {
        Error::corruption(self.path, self.absolute(handle), reason)
    }

    /// Reads the block at `handle`, verifies its checksum and returns its
    /// uncompressed contents.
    pub fn read_block(&self, handle: BlockHandle) -> Result<Vec<u8>> {
        let (abs, mut buf) = self.block_span(handle)?;
        self.file.read_exact_at(abs, &mut buf)?;
        self.decode(handle, buf)
    }

    /// [`read_block`](Self::read_block) when the file system can serve
    /// the block without waiting on the device (from the page cache);
    /// `None`, nothing read, when it cannot.
    pub fn read_block_resident(&self, handle: BlockHandle) -> Result<Option<Vec<u8>>> {
        let (abs, mut buf) = self.block_span(handle)?;
        if !self.file.read_exact_at_resident(abs, &mut buf)? {
            return Ok(None);
        }
        self.decode(handle, buf).map(Some)
    }

    /// The block's absolute offset and a buffer for it and its trailer.
    pub(super) fn block_span(&self, handle: BlockHandle) -> Result<(u64, Vec<u8>)> {
        let end = handle
            .offset
            .checked_add(handle.size)
            .and_then(|e| e.checked_add(BLOCK_TRAILER_LEN as u64))
            .filter(|&e| e <= self.blocks_end)
            .ok_or_else(|| self.corruption(handle, "block handle points outside the table"))?;
        let len = (end - handle.offset) as usize;
        Ok((self.absolute(handle), vec![0u8; len]))
    }

    /// Counts the block read, verifies its checksum and uncompresses it.
    pub(super) fn decode(&self, handle: BlockHandle, mut buf: Vec<u8>) -> Result<Vec<u8>> {
        let corrupt = |reason: &str| self.corruption(handle, reason);
        note_block_read();
        let size = buf.len() - BLOCK_TRAILER_LEN;
        let stored_crc = decode_fixed32(&buf, size + 1).unwrap_or(0);
        if checksum::unmask(stored_crc) != checksum::crc32c(&buf[..size + 1]) {
            return Err(corrupt("block checksum mismatch"));
        }
        match CompressionType::from_u8(buf[size]) {
            Some(CompressionType::None) => {
                buf.truncate(size);
                Ok(buf)
            }
            Some(kind) => compression::decompress(kind, &buf[..size]).map_err(corrupt),
            None => Err(corrupt("unknown block compression type")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::testutil::MemFile;

    fn write(raw: &[u8], kind: CompressionType) -> (MemFile, BlockHandle) {
        let mut file = MemFile::default();
        file.append(b"0123456789").unwrap();
        let h = write_block(&mut file, 10, raw, kind, &mut Vec::new()).unwrap();
        (file, h)
    }

    fn reader(file: &MemFile) -> TableFile<'_> {
        TableFile {
            file,
            path: Path::new("t.seg"),
            start: 10,
            blocks_end: file.size() - 10,
        }
    }

    #[test]
    fn round_trip_each_compression() {
        let raw = b"abcdefgh".repeat(100);
        for kind in [
            CompressionType::None,
            CompressionType::Lz4,
            CompressionType::Zstd,
        ] {
            let (file, h) = write(&raw, kind);
            assert_eq!(h.offset, 0);
            assert_eq!(reader(&file).read_block(h).unwrap(), raw);
            if kind != CompressionType::None {
                assert!(h.size < raw.len() as u64 / 2);
            }
        }
    }

    #[test]
    fn every_flipped_byte_is_detected() {
        let raw = b"abcdefgh".repeat(20);
        for kind in [CompressionType::None, CompressionType::Lz4] {
            let (file, h) = write(&raw, kind);
            for i in 10..file.size() as usize {
                let bad = file.with_flipped(i);
                let err = reader(&bad).read_block(h).unwrap_err();
                assert!(err.is_corruption());
                assert!(err.to_string().contains("t.seg at offset 10"), "{err}");
            }
        }
    }

    #[test]
    fn handle_outside_table_is_corruption() {
        let (file, h) = write(b"abc", CompressionType::None);
        let r = reader(&file);
        for bad in [
            BlockHandle::new(h.offset, h.size + 1),
            BlockHandle::new(u64::MAX, 1),
            BlockHandle::new(1, u64::MAX),
        ] {
            assert!(r.read_block(bad).unwrap_err().is_corruption());
        }
    }
}
