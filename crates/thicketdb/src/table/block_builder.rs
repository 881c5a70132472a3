//! Builds data and index blocks (see `block.rs` for the layout).
//!
//! Each entry stores only the suffix of its key not shared with the previous
//! key; every `restart_interval` entries the full key is stored and its
//! offset recorded as a restart point, which is what makes binary search
//! possible.

use crate::format::coding::{put_fixed32, put_varint32};

pub struct BlockBuilder {
    buf: Vec<u8>,
    restarts: Vec<u32>,
    restart_interval: usize,
    /// Entries since the last restart point.
    counter: usize,
    last_key: Vec<u8>,
    finished: bool,
}

impl BlockBuilder {
    /// `restart_interval` is clamped to at least 1.
    pub fn new(restart_interval: usize) -> BlockBuilder {
        BlockBuilder {
            buf: Vec::new(),
            restarts: vec![0],
            restart_interval: restart_interval.max(1),
            counter: 0,
            last_key: Vec::new(),
            finished: false,
        }
    }

    /// Appends an entry. Keys must be added in increasing order and the
    /// block must not be finished; the table builder guarantees both, and
    /// the caller keeps the total below 4 GiB so offsets fit in u32.
    pub fn add(&mut self, key: &[u8], value: &[u8]) {
        debug_assert!(!self.finished);
        let shared = if self.counter < self.restart_interval {
            common_prefix(&self.last_key, key)
        } else {
            self.restarts.push(self.buf.len() as u32);
            self.counter = 0;
            0
        };
        put_varint32(&mut self.buf, shared as u32);
        put_varint32(&mut self.buf, (key.len() - shared) as u32);
        put_varint32(&mut self.buf, value.len() as u32);
        self.buf.extend_from_slice(&key[shared..]);
        self.buf.extend_from_slice(value);
        self.last_key.truncate(shared);
        self.last_key.extend_from_slice(&key[shared..]);
        self.counter += 1;
    }

    /// Appends the restart array and returns the finished block bytes.
    pub fn finish(&mut self) -> &[u8] {
        if !self.finished {
            for &r in &self.restarts {
                put_fixed32(&mut self.buf, r);
            }
            put_fixed32(&mut self.buf, self.restarts.len() as u32);
            self.finished = true;
        }
        &self.buf
    }

    /// Clears the builder for the next block, keeping its allocations.
    pub fn reset(&mut self) {
        self.buf.clear();
        self.restarts.clear();
        self.restarts.push(0);
        self.counter = 0;
        self.last_key.clear();
        self.finished = false;
    }

    /// Size of the block if it were finished now.
    pub fn size_estimate(&self) -> usize {
        if self.finished {
            self.buf.len()
        } else {
            self.buf.len() + 4 * self.restarts.len() + 4
        }
    }

    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }
}

fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_compression_and_restarts() {
        let mut b = BlockBuilder::new(2);
        b.add(b"apple", b"1");
        b.add(b"apply", b"2");
        b.add(b"banana", b"3");
        let estimate = b.size_estimate();
        let block = b.finish().to_vec();
        assert_eq!(block.len(), estimate);
        // apple: full; apply: shares 4; banana: restart, full.
        assert_eq!(&block[..3], &[0, 5, 1]);
        assert_eq!(&block[9..12], &[4, 1, 1]);
        let restart_count = u32::from_le_bytes(block[block.len() - 4..].try_into().unwrap());
        assert_eq!(restart_count, 2);
    }

    #[test]
    fn reset_starts_fresh() {
        let mut b = BlockBuilder::new(16);
        b.add(b"k", b"v");
        b.finish();
        b.reset();
        assert!(b.is_empty());
        assert_eq!(b.size_estimate(), 8);
        b.add(b"k", b"v");
        assert_eq!(&b.finish()[..3], &[0, 1, 1]);
    }
}
