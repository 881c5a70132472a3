//! Pointers to blocks within a table.

use crate::format::coding::{get_varint64, put_varint64};

/// Where a block lives: `offset` is relative to the table's first byte (a
/// table can sit anywhere in its segment) and `size` counts the stored block
/// bytes, excluding the 5-byte trailer that follows them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct BlockHandle {
    pub offset: u64,
    pub size: u64,
}

impl BlockHandle {
    pub fn new(offset: u64, size: u64) -> BlockHandle {
        BlockHandle { offset, size }
    }

    /// Appends the varint encoding used in index entries.
    pub fn encode_to(&self, dst: &mut Vec<u8>) {
        put_varint64(dst, self.offset);
        put_varint64(dst, self.size);
    }

    /// Decodes an index entry's value, which must hold exactly one handle.
    pub fn decode(mut src: &[u8]) -> Option<BlockHandle> {
        let offset = get_varint64(&mut src)?;
        let size = get_varint64(&mut src)?;
        src.is_empty().then_some(BlockHandle { offset, size })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn round_trip(offset in any::<u64>(), size in any::<u64>()) {
            let h = BlockHandle::new(offset, size);
            let mut buf = Vec::new();
            h.encode_to(&mut buf);
            prop_assert!(buf.len() <= 20);
            prop_assert_eq!(BlockHandle::decode(&buf), Some(h));
        }
    }

    #[test]
    fn rejects_truncated_and_trailing_bytes() {
        let mut buf = Vec::new();
        BlockHandle::new(300, 4096).encode_to(&mut buf);
        assert_eq!(BlockHandle::decode(&buf[..buf.len() - 1]), None);
        buf.push(0);
        assert_eq!(BlockHandle::decode(&buf), None);
    }
}
