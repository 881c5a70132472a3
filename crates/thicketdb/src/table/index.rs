//! A table's index, decoded once when the table opens.
//!
//! The stored index block is prefix-free (restart interval 1) but each of
//! its entries still needs a restart-array load, a varint header and a
//! varint handle decoded per binary-search step. Point lookups search the
//! index of every candidate table, so the index is kept decoded instead:
//! separators back to back in one buffer, their end offsets, and the block
//! handles. It costs about what the block did, which it replaces in memory.

use std::cmp::Ordering;

use super::block::Block;
use super::block_handle::BlockHandle;
use super::block_iter::BlockIter;
use crate::error::{Error, Result};
use crate::format::internal_key;
use crate::iterator::InternalIterator;

#[derive(Debug)]
pub struct BlockIndex {
    /// Separator keys, back to back.
    keys: Vec<u8>,
    /// `keys[key_ends[i - 1]..key_ends[i]]` is separator `i`.
    key_ends: Vec<u32>,
    handles: Vec<BlockHandle>,
}

impl BlockIndex {
    /// Decodes every entry of an index block, so a damaged index is
    /// reported when the table opens rather than by a later lookup.
    pub fn decode(block: &Block) -> Result<BlockIndex> {
        let bad_handle =
            || Error::corruption(block.file(), block.offset(), "bad block handle in index");
        let mut index = BlockIndex {
            keys: Vec::new(),
            key_ends: Vec::new(),
            handles: Vec::new(),
        };
        let mut it = BlockIter::new(block);
        it.seek_to_first();
        while it.valid() {
            index.keys.extend_from_slice(it.key());
            let end = u32::try_from(index.keys.len()).map_err(|_| {
                Error::corruption(block.file(), block.offset(), "index keys exceed 4 GiB")
            })?;
            index.key_ends.push(end);
            index
                .handles
                .push(BlockHandle::decode(it.value()).ok_or_else(bad_handle)?);
            it.next();
        }
        it.status()?;
        Ok(index)
    }

    /// Number of data blocks.
    pub fn len(&self) -> usize {
        self.handles.len()
    }

    /// Separator `i` (< `len()`): `>=` every key of block `i`, `<` every
    /// key of block `i + 1`.
    pub fn key(&self, i: usize) -> &[u8] {
        let start = match i {
            0 => 0,
            _ => self.key_ends[i - 1] as usize,
        };
        &self.keys[start..self.key_ends[i] as usize]
    }

    pub fn handle(&self, i: usize) -> BlockHandle {
        self.handles[i]
    }

    /// The first block whose separator is `>= target`, which is the only
    /// block that can hold the first entry `>= target`; `len()` when every
    /// separator is smaller.
    pub fn seek(&self, target: &[u8]) -> usize {
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if internal_key::compare(self.key(mid), target) == Ordering::Less {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{InternalKey, ValueKind};
    use crate::table::block_builder::BlockBuilder;
    use std::path::Path;
    use std::sync::Arc;

    fn ikey(i: u32) -> Vec<u8> {
        InternalKey::new(format!("k{i:05}").as_bytes(), 7, ValueKind::Value).into_vec()
    }

    fn index_block(n: u32) -> Block {
        let mut b = BlockBuilder::new(1);
        for i in 0..n {
            let mut handle = Vec::new();
            BlockHandle::new(u64::from(i) * 100, 90).encode_to(&mut handle);
            b.add(&ikey(i * 10), &handle);
        }
        Block::new(b.finish().to_vec(), Arc::from(Path::new("i.seg")), 500).unwrap()
    }

    #[test]
    fn seek_finds_first_separator_not_less() {
        for n in [0, 1, 2, 7, 64] {
            let index = BlockIndex::decode(&index_block(n)).unwrap();
            assert_eq!(index.len(), n as usize);
            for t in 0..n * 10 + 2 {
                let want = t.div_ceil(10).min(n) as usize;
                assert_eq!(index.seek(&ikey(t)), want, "n {n} target {t}");
                if want < index.len() {
                    assert_eq!(index.key(want), ikey(want as u32 * 10).as_slice());
                    assert_eq!(index.handle(want).offset, want as u64 * 100);
                }
            }
        }
    }

    #[test]
    fn bad_handle_is_corruption_with_file_and_offset() {
        let mut b = BlockBuilder::new(1);
        b.add(&ikey(1), &[0x80]);
        let block = Block::new(b.finish().to_vec(), Arc::from(Path::new("i.seg")), 500).unwrap();
        let err = BlockIndex::decode(&block).unwrap_err();
        assert!(err.is_corruption());
        assert!(err.to_string().contains("i.seg at offset 500"), "{err}");
    }
}
