//! A table's index, decoded once when the table opens.
//!
//! The stored index block is prefix-free (restart interval 1) but each of
//! its entries still needs a restart-array load, a varint header and a
//! varint handle decoded per binary-search step. Point lookups search the
//! index of every candidate table, so the index is kept decoded instead:
//! separators back to back in one buffer, their end offsets, and the block
//! handles. It costs about what the block did, which it replaces in memory.
//!
//! Each separator also gets an 8-byte big-endian *prefix*: the 8 user-key
//! bytes after the prefix all the table's separators share (zero-padded).
//! A search compares those integers, one contiguous array, and looks at a
//! full key only when prefixes tie. Prefixes order keys bytewise: under a
//! custom comparator every step compares full keys through it.

use std::cmp::Ordering;

use super::block::Block;
use super::block_handle::BlockHandle;
use super::block_iter::BlockIter;
use crate::error::{Error, Result};
use crate::format::internal_key::user_key;
use crate::format::KeyOrder;
use crate::iterator::InternalIterator;

#[derive(Debug)]
pub struct BlockIndex {
    /// Separator keys, back to back.
    keys: Vec<u8>,
    /// `keys[key_ends[i - 1]..key_ends[i]]` is separator `i`.
    key_ends: Vec<u32>,
    handles: Vec<BlockHandle>,
    /// Length of the user-key prefix every separator shares.
    common: usize,
    /// Per separator: its 8 user-key bytes after `common`, big endian;
    /// empty under a custom comparator.
    prefixes: Vec<u64>,
    order: KeyOrder,
}

impl BlockIndex {
    /// Decodes every entry of an index block, so a damaged index is
    /// reported when the table opens rather than by a later lookup.
    pub fn decode(block: &Block, order: KeyOrder) -> Result<BlockIndex> {
        let bad_handle =
            || Error::corruption(block.file(), block.offset(), "bad block handle in index");
        let mut index = BlockIndex {
            keys: Vec::new(),
            key_ends: Vec::new(),
            handles: Vec::new(),
            common: 0,
            prefixes: Vec::new(),
            order,
        };
        let mut it = BlockIter::new(block, KeyOrder::Bytewise);
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
        if !index.order.is_bytewise() {
            return Ok(index);
        }
        if let Some(last) = index.len().checked_sub(1) {
            let (a, b) = (user_key(index.key(0)), user_key(index.key(last)));
            index.common = a.iter().zip(b).take_while(|(x, y)| x == y).count();
        }
        index.prefixes = (0..index.len())
            .map(|i| prefix_after(user_key(index.key(i)), index.common))
            .collect();
        Ok(index)
    }

    /// Bytes the decoded index holds in memory.
    pub fn memory_bytes(&self) -> u64 {
        (self.keys.capacity()
            + self.key_ends.capacity() * std::mem::size_of::<u32>()
            + self.handles.capacity() * std::mem::size_of::<BlockHandle>()
            + self.prefixes.capacity() * std::mem::size_of::<u64>()) as u64
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
        let target_user = user_key(target);
        // The prefixes order separators only among keys that share the
        // common prefix; any other target is placed by full keys.
        let target_prefix = (self.order.is_bytewise()
            && target_user.starts_with(self.common_prefix()))
        .then(|| prefix_after(target_user, self.common));
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let order = match target_prefix {
                Some(t) if self.prefixes[mid] != t => self.prefixes[mid].cmp(&t),
                _ => self.order.internal(self.key(mid), target),
            };
            if order == Ordering::Less {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    fn common_prefix(&self) -> &[u8] {
        match self.len() {
            0 => &[],
            _ => &user_key(self.key(0))[..self.common],
        }
    }
}

/// The 8 bytes of `key` after its first `skip`, zero-padded, as a big-endian
/// integer: integers order like the keys they come from, ties aside.
fn prefix_after(key: &[u8], skip: usize) -> u64 {
    let mut bytes = [0u8; 8];
    let rest = key.get(skip..).unwrap_or_default();
    let n = rest.len().min(8);
    bytes[..n].copy_from_slice(&rest[..n]);
    u64::from_be_bytes(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{InternalKey, ValueKind};
    use crate::table::block_builder::BlockBuilder;
    use proptest::strategy::Just;
    use std::path::PathBuf;
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
        Block::new(b.finish().to_vec(), Arc::new(PathBuf::from("i.seg")), 500).unwrap()
    }

    #[test]
    fn seek_finds_first_separator_not_less() {
        for n in [0, 1, 2, 7, 64] {
            let index = BlockIndex::decode(&index_block(n), KeyOrder::Bytewise).unwrap();
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
    fn prefixes_skip_the_shared_user_key_prefix() {
        let index = BlockIndex::decode(&index_block(64), KeyOrder::Bytewise).unwrap();
        // Separators k00000..k00630 share "k00".
        assert_eq!(index.common, 3);
        assert_eq!(index.prefixes[1], u64::from_be_bytes(*b"010\0\0\0\0\0"));
        assert_eq!(prefix_after(b"ab", 5), 0);
    }

    fn block_of(user_keys: &[Vec<u8>]) -> Block {
        let mut b = BlockBuilder::new(1);
        for (i, k) in user_keys.iter().enumerate() {
            let mut handle = Vec::new();
            BlockHandle::new(i as u64, 1).encode_to(&mut handle);
            b.add(InternalKey::new(k, 9, ValueKind::Value).encoded(), &handle);
        }
        Block::new(b.finish().to_vec(), Arc::new(PathBuf::from("i.seg")), 0).unwrap()
    }

    proptest::proptest! {
        #[test]
        fn seek_agrees_with_a_plain_binary_search(
            mut keys in proptest::collection::btree_set(
                proptest::collection::vec(proptest::prelude::prop_oneof![Just(0u8), Just(7), Just(255)], 0..12), 0..40),
            targets in proptest::collection::vec(
                (proptest::prelude::any::<bool>(), proptest::collection::vec(proptest::prelude::prop_oneof![Just(0u8), Just(7), Just(255)], 0..12), 0u64..20), 1..20),
            shared in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..10),
        ) {
            let keys: Vec<Vec<u8>> = std::mem::take(&mut keys)
                .into_iter()
                .map(|k| [shared.clone(), k].concat())
                .collect();
            let index = BlockIndex::decode(&block_of(&keys), KeyOrder::Bytewise).unwrap();
            for (with_shared, t, seq) in targets {
                let t = if with_shared { [shared.clone(), t].concat() } else { t };
                let target = InternalKey::new(&t, seq, ValueKind::Value).into_vec();
                let plain = (0..index.len())
                    .position(|i| KeyOrder::Bytewise.internal(index.key(i), &target) != Ordering::Less)
                    .unwrap_or(index.len());
                proptest::prop_assert_eq!(index.seek(&target), plain);
            }
        }
    }

    #[test]
    fn bad_handle_is_corruption_with_file_and_offset() {
        let mut b = BlockBuilder::new(1);
        b.add(&ikey(1), &[0x80]);
        let block = Block::new(b.finish().to_vec(), Arc::new(PathBuf::from("i.seg")), 500).unwrap();
        let err = BlockIndex::decode(&block, KeyOrder::Bytewise).unwrap_err();
        assert!(err.is_corruption());
        assert!(err.to_string().contains("i.seg at offset 500"), "{err}");
    }
}
