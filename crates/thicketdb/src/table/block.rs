//! A decoded (uncompressed) data or index block.
//!
//! Layout: prefix-compressed entries, then the restart array (u32 LE entry
//! offsets, the first always 0), then the u32 LE restart count. The block
//! remembers its file and absolute offset so that iterators can report
//! corruption precisely long after the block was read.
//!
//! In memory a block is one shared allocation: a copy of the restart array
//! in front of the block's bytes. A cached lookup then finds the restart
//! points on the cache line it touches anyway to take its reference,
//! instead of missing once more at the far end of the block.

use std::path::Path;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::format::coding::{decode_fixed32, get_varint32};

/// Extra bytes charged per cached block for the handle and allocator.
const OVERHEAD: usize = 64;

/// A cheap, cloneable handle to a validated block.
#[derive(Clone)]
pub struct Block {
    /// `num_restarts` u32 LE restart points, then the block's bytes.
    bytes: Arc<[u8]>,
    /// Offset of the restart array in the block's bytes; entries occupy
    /// `data()[..restarts]`.
    restarts: usize,
    num_restarts: usize,
    file: Arc<Path>,
    offset: u64,
}

impl std::fmt::Debug for Block {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Block")
            .field("file", &self.file)
            .field("offset", &self.offset)
            .field("len", &self.data().len())
            .field("restarts", &self.num_restarts)
            .finish()
    }
}

/// The decoded header of one entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct EntryHeader {
    pub shared: usize,
    pub key_start: usize,
    pub key_end: usize,
    pub value_end: usize,
}

impl Block {
    /// Validates the restart array of `data`, read from `file` at absolute
    /// offset `offset`. Entries are checked lazily, as they are visited.
    pub fn new(data: Vec<u8>, file: Arc<Path>, offset: u64) -> Result<Block> {
        let corrupt = |reason: &str| Error::corruption(&*file, offset, reason);
        let len = data.len();
        let count = len
            .checked_sub(4)
            .and_then(|pos| decode_fixed32(&data, pos))
            .ok_or_else(|| corrupt("block too short for its restart count"))?
            as usize;
        let restarts = count
            .checked_mul(4)
            .and_then(|n| len.checked_sub(n + 4))
            .filter(|_| count > 0)
            .ok_or_else(|| corrupt("bad block restart count"))?;
        // Binary search relies on restart offsets being increasing and
        // inside the entry area; checking once here keeps lookups simple.
        let mut prev = None;
        for i in 0..count {
            let point = decode_fixed32(&data, restarts + 4 * i).unwrap_or(u32::MAX) as usize;
            if point >= restarts.max(1)
                || prev.is_some_and(|p| point <= p)
                || (i == 0 && point != 0)
            {
                return Err(corrupt("bad block restart array"));
            }
            prev = Some(point);
        }
        let mut bytes = Vec::with_capacity(4 * count + len);
        bytes.extend_from_slice(&data[restarts..restarts + 4 * count]);
        bytes.extend_from_slice(&data);
        Ok(Block {
            bytes: Arc::from(bytes),
            restarts,
            num_restarts: count,
            file,
            offset,
        })
    }

    /// Bytes charged to the block cache.
    pub fn charge(&self) -> usize {
        self.bytes.len() + OVERHEAD
    }

    /// Absolute offset of the block in its file.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The file the block was read from.
    pub(crate) fn file(&self) -> &Path {
        &self.file
    }

    /// The block's bytes as stored (after decompression).
    pub(crate) fn data(&self) -> &[u8] {
        &self.bytes[4 * self.num_restarts..]
    }

    pub(crate) fn restarts(&self) -> usize {
        self.restarts
    }

    pub(crate) fn num_restarts(&self) -> usize {
        self.num_restarts
    }

    /// Entry offset of restart point `i` (< `num_restarts`, validated).
    pub(crate) fn restart_point(&self, i: usize) -> usize {
        decode_fixed32(&self.bytes, 4 * i).unwrap_or(0) as usize
    }

    /// Decodes the header of the entry at `pos`, checking that the key and
    /// value lie inside the entry area.
    pub(crate) fn entry_header(&self, pos: usize) -> Option<EntryHeader> {
        let area = self.data().get(..self.restarts)?;
        let rest = area.get(pos..)?;
        let (shared, non_shared, value_len, header_len) = match rest {
            // Fast path: all three lengths fit in one byte each.
            [a, b, c, ..] if (a | b | c) < 0x80 => (*a as usize, *b as usize, *c as usize, 3),
            _ => {
                let mut cur = rest;
                let shared = get_varint32(&mut cur)? as usize;
                let non_shared = get_varint32(&mut cur)? as usize;
                let value_len = get_varint32(&mut cur)? as usize;
                (shared, non_shared, value_len, rest.len() - cur.len())
            }
        };
        let key_start = pos + header_len;
        let key_end = key_start.checked_add(non_shared)?;
        let value_end = key_end.checked_add(value_len)?;
        (value_end <= self.restarts).then_some(EntryHeader {
            shared,
            key_start,
            key_end,
            value_end,
        })
    }

    /// The full key stored at restart point `i`, whose entry shares nothing
    /// with its predecessor; `None` if the entry is malformed.
    pub(crate) fn restart_key(&self, i: usize) -> Option<&[u8]> {
        let h = self.entry_header(self.restart_point(i))?;
        (h.shared == 0).then(|| &self.data()[h.key_start..h.key_end])
    }

    /// The corruption error for a malformed entry at `pos`.
    pub(crate) fn corruption(&self, pos: usize) -> Error {
        Error::corruption(
            &*self.file,
            self.offset,
            format!("malformed block entry at block offset {pos}"),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::coding::put_fixed32;
    use proptest::prelude::*;

    fn file() -> Arc<Path> {
        Arc::from(Path::new("t.seg"))
    }

    #[test]
    fn empty_block_has_one_restart() {
        let mut data = Vec::new();
        put_fixed32(&mut data, 0);
        put_fixed32(&mut data, 1);
        let b = Block::new(data, file(), 0).unwrap();
        assert_eq!(b.restarts(), 0);
        assert_eq!(b.num_restarts(), 1);
        assert!(b.entry_header(0).is_none());
    }

    #[test]
    fn rejects_bad_restart_arrays() {
        let cases: [&[u32]; 4] = [&[], &[0, 0], &[4, 1], &[0, 1000]];
        for restarts in cases {
            let mut data = vec![1u8, 0, 0, 0, 0, 0, 0, 0];
            for r in restarts {
                put_fixed32(&mut data, *r);
            }
            put_fixed32(&mut data, restarts.len() as u32);
            let err = Block::new(data, file(), 77).err().unwrap();
            assert!(err.is_corruption(), "{restarts:?}");
            assert!(err.to_string().contains("offset 77"));
        }
        assert!(Block::new(vec![1, 2], file(), 0).is_err());
        assert!(Block::new(vec![0xff; 8], file(), 0).is_err());
    }

    proptest! {
        #[test]
        fn decoding_random_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..128)) {
            if let Ok(b) = Block::new(bytes, file(), 0) {
                for i in 0..b.num_restarts() {
                    let _ = b.restart_key(i);
                }
                for pos in 0..b.data().len() + 2 {
                    let _ = b.entry_header(pos);
                }
            }
        }
    }
}
