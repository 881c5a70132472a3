//! A cursor over one block.
//!
//! Generic over how the block is held: table iterators own a `Block` (a
//! cheap handle), point lookups borrow `&Block` to avoid reference-count
//! traffic. The key buffer is reused across entries (and can be handed
//! from iterator to iterator) so that stepping does not allocate.

use std::borrow::Borrow;
use std::cmp::Ordering;

use super::block::Block;
use crate::error::{Error, Result};
use crate::format::KeyOrder;
use crate::iterator::{EntryLocation, InternalIterator};

pub struct BlockIter<B: Borrow<Block>> {
    block: B,
    /// Offset of the current entry; `block.restarts()` when not positioned.
    current: usize,
    /// Offset just past the current entry, where the next one starts.
    next: usize,
    /// Restart point at or before `current`.
    restart_index: usize,
    key: Vec<u8>,
    value_start: usize,
    value_end: usize,
    /// First corruption met; once set the iterator stays invalid.
    status: Option<Error>,
    /// The order the block's keys are sorted by, for seeks.
    order: KeyOrder,
}

impl<B: Borrow<Block>> BlockIter<B> {
    /// A cursor over `block`, whose keys are sorted by `order`.
    pub fn new(block: B, order: KeyOrder) -> BlockIter<B> {
        BlockIter::with_key_buffer(block, Vec::new(), order)
    }

    /// Like `new`, reusing `key_buf`'s allocation for the current key.
    pub fn with_key_buffer(block: B, mut key_buf: Vec<u8>, order: KeyOrder) -> BlockIter<B> {
        key_buf.clear();
        let end = block.borrow().restarts();
        let num_restarts = block.borrow().num_restarts();
        BlockIter {
            block,
            current: end,
            next: end,
            restart_index: num_restarts,
            key: key_buf,
            value_start: 0,
            value_end: 0,
            status: None,
            order,
        }
    }

    fn block(&self) -> &Block {
        self.block.borrow()
    }

    /// Gives back the key buffer for reuse by another iterator.
    pub fn into_key_buffer(self) -> Vec<u8> {
        self.key
    }

    fn invalidate(&mut self) {
        self.current = self.block().restarts();
        self.next = self.current;
        self.restart_index = self.block().num_restarts();
    }

    fn corrupt(&mut self, pos: usize) {
        if self.status.is_none() {
            self.status = Some(self.block().corruption(pos));
        }
        self.key.clear();
        self.invalidate();
    }

    fn seek_to_restart(&mut self, index: usize) {
        self.key.clear();
        self.restart_index = index;
        self.next = self.block().restart_point(index);
    }

    /// Decodes the entry at `self.next`; false at the end or on corruption.
    fn parse_next(&mut self) -> bool {
        let pos = self.next;
        if pos >= self.block().restarts() {
            self.invalidate();
            return false;
        }
        let Some(h) = self.block().entry_header(pos) else {
            self.corrupt(pos);
            return false;
        };
        if h.shared > self.key.len() {
            self.corrupt(pos);
            return false;
        }
        self.key.truncate(h.shared);
        self.key
            .extend_from_slice(&self.block.borrow().data()[h.key_start..h.key_end]);
        self.current = pos;
        self.next = h.value_end;
        self.value_start = h.key_end;
        self.value_end = h.value_end;
        while self.restart_index + 1 < self.block().num_restarts()
            && self.block().restart_point(self.restart_index + 1) <= pos
        {
            self.restart_index += 1;
        }
        true
    }
}

impl<B: Borrow<Block> + Send> InternalIterator for BlockIter<B> {
    fn valid(&self) -> bool {
        self.status.is_none() && self.current < self.block().restarts()
    }

    fn seek_to_first(&mut self) {
        self.seek_to_restart(0);
        self.parse_next();
    }

    fn seek_to_last(&mut self) {
        self.seek_to_restart(self.block().num_restarts() - 1);
        while self.parse_next() && self.next < self.block().restarts() {}
    }

    fn seek(&mut self, target: &[u8]) {
        // Find the last restart point whose key is < target, then scan.
        let num_restarts = self.block().num_restarts();
        let (mut left, mut right) = (0, num_restarts - 1);
        while left < right {
            let mid = (left + right).div_ceil(2);
            let Some(key) = self.block().restart_key(mid) else {
                let pos = self.block().restart_point(mid);
                self.corrupt(pos);
                return;
            };
            if self.order.internal(key, target) == Ordering::Less {
                left = mid;
            } else {
                right = mid - 1;
            }
        }
        // The search established key(left) < target (when left > 0) and
        // key(left + 1) >= target (when it exists): skip those comparisons,
        // which for index blocks (one entry per restart) means all of them.
        let mut known_less = left > 0;
        let known_not_less = if left + 1 < num_restarts {
            self.block().restart_point(left + 1)
        } else {
            self.block().restarts()
        };
        self.block()
            .prefetch(self.block().restart_point(left), known_not_less);
        self.seek_to_restart(left);
        while self.parse_next() {
            if self.current >= known_not_less
                || (!known_less && self.order.internal(&self.key, target) != Ordering::Less)
            {
                return;
            }
            known_less = false;
        }
    }

    fn next(&mut self) {
        debug_assert!(self.valid());
        self.parse_next();
    }

    fn prev(&mut self) {
        debug_assert!(self.valid());
        // Entries only decode forwards: back up to the restart point before
        // the current entry and scan forward to the entry preceding it.
        let original = self.current;
        while self.block().restart_point(self.restart_index) >= original {
            if self.restart_index == 0 {
                self.key.clear();
                self.invalidate();
                return;
            }
            self.restart_index -= 1;
        }
        self.seek_to_restart(self.restart_index);
        while self.parse_next() && self.next < original {}
    }

    fn key(&self) -> &[u8] {
        &self.key
    }

    fn value(&self) -> &[u8] {
        &self.block().data()[self.value_start..self.value_end]
    }

    fn status(&self) -> Result<()> {
        match &self.status {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }

    fn location(&self) -> Option<EntryLocation> {
        self.valid().then(|| self.block().location(self.current))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{InternalKey, ValueKind};
    use crate::table::block_builder::BlockBuilder;
    use proptest::prelude::*;
    use std::path::PathBuf;
    use std::sync::Arc;

    fn ikey(i: u32) -> Vec<u8> {
        InternalKey::new(
            format!("key{i:06}").as_bytes(),
            u64::from(i),
            ValueKind::Value,
        )
        .into_vec()
    }

    fn build(n: u32, interval: usize) -> Arc<Block> {
        let mut b = BlockBuilder::new(interval);
        for i in 0..n {
            b.add(&ikey(i * 2), format!("v{i}").as_bytes());
        }
        let data = b.finish().to_vec();
        Arc::new(Block::new(data, Arc::new(PathBuf::from("b.seg")), 100).unwrap())
    }

    fn collect_forward(it: &mut BlockIter<Arc<Block>>) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        it.seek_to_first();
        while it.valid() {
            out.push(it.key().to_vec());
            it.next();
        }
        out
    }

    #[test]
    fn round_trip_both_directions() {
        for interval in [1, 2, 16, 1000] {
            let block = build(500, interval);
            let mut it = BlockIter::new(block, KeyOrder::Bytewise);
            let keys = collect_forward(&mut it);
            let expected: Vec<_> = (0..500).map(|i| ikey(i * 2)).collect();
            assert_eq!(keys, expected);
            let mut back = Vec::new();
            it.seek_to_last();
            while it.valid() {
                back.push(it.key().to_vec());
                it.prev();
            }
            back.reverse();
            assert_eq!(back, expected);
            assert!(it.status().is_ok());
        }
    }

    #[test]
    fn seek_lands_on_first_key_at_or_after_target() {
        let mut it = BlockIter::new(build(200, 16), KeyOrder::Bytewise);
        for t in 0..401 {
            it.seek(&ikey(t));
            if t >= 399 {
                assert!(!it.valid());
                continue;
            }
            let want = t.div_ceil(2);
            assert_eq!(it.key(), ikey(want * 2).as_slice(), "target {t}");
            assert_eq!(it.value(), format!("v{want}").as_bytes());
            if want > 0 {
                it.prev();
                assert_eq!(it.key(), ikey((want - 1) * 2).as_slice());
                it.next();
            }
            it.next();
            if want + 1 < 200 {
                assert_eq!(it.key(), ikey((want + 1) * 2).as_slice());
            }
        }
    }

    #[test]
    fn empty_block_is_never_valid() {
        let mut it = BlockIter::new(build(0, 16), KeyOrder::Bytewise);
        it.seek_to_first();
        assert!(!it.valid());
        it.seek_to_last();
        assert!(!it.valid());
        it.seek(&ikey(1));
        assert!(!it.valid());
        assert!(it.status().is_ok());
    }

    #[test]
    fn key_buffer_is_reused() {
        let block = build(10, 4);
        let mut it =
            BlockIter::with_key_buffer(&*block, Vec::with_capacity(64), KeyOrder::Bytewise);
        it.seek_to_last();
        let buf = it.into_key_buffer();
        assert!(buf.capacity() >= 64);
    }

    #[test]
    fn corrupt_entry_sets_status() {
        let mut b = BlockBuilder::new(16);
        b.add(&ikey(1), b"v");
        b.add(&ikey(2), b"v");
        let mut data = b.finish().to_vec();
        // Second entry claims to share more bytes than the first key has.
        let second = 3 + ikey(1).len() + 1;
        data[second] = 100;
        let block = Block::new(data, Arc::new(PathBuf::from("b.seg")), 4096).unwrap();
        let mut it = BlockIter::new(&block, KeyOrder::Bytewise);
        it.seek_to_first();
        assert!(it.valid());
        it.next();
        assert!(!it.valid());
        let err = it.status().unwrap_err();
        assert!(err.is_corruption());
        assert!(err.to_string().contains("b.seg at offset 4096"));
        it.seek_to_first();
        assert!(!it.valid(), "errors are sticky");
    }

    proptest! {
        #[test]
        fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200), target in proptest::collection::vec(any::<u8>(), 0..20)) {
            if let Ok(block) = Block::new(bytes, Arc::new(PathBuf::from("r")), 0) {
                let mut it = BlockIter::new(&block, KeyOrder::Bytewise);
                it.seek_to_first();
                let mut steps = 0;
                while it.valid() && steps < 100 { it.next(); steps += 1; }
                it.seek_to_last();
                while it.valid() && steps < 200 { it.prev(); steps += 1; }
                it.seek(&target);
                if it.valid() { let _ = (it.key(), it.value()); }
            }
        }
    }
}
