//! An iterator that hides every entry at or below a user key: the inputs
//! of a journaled merge, whose keys up to the last checkpoint live on in
//! the interim run (SifrDB early cleaning).

use std::cmp::Ordering;

use super::{EntryLocation, InternalIterator};
use crate::error::Result;
use crate::format::internal_key::{user_key, InternalKey, ValueKind};
use crate::format::KeyOrder;

pub struct AboveKey<I> {
    inner: I,
    /// Entries whose user key is at or below this are hidden.
    floor: Vec<u8>,
    /// The first internal key after the floor's entries.
    floor_end: InternalKey,
    order: KeyOrder,
}

impl<I: InternalIterator> AboveKey<I> {
    /// Hides the entries of `inner` (sorted by `order`) up to `floor`.
    pub fn new(inner: I, floor: Vec<u8>, order: KeyOrder) -> AboveKey<I> {
        // Sequence 0 of the lowest kind sorts after every entry of `floor`.
        let floor_end = InternalKey::new(&floor, 0, ValueKind::Deletion);
        AboveKey {
            inner,
            floor,
            floor_end,
            order,
        }
    }

    fn above_floor(&self, internal_key: &[u8]) -> bool {
        self.order.user(user_key(internal_key), &self.floor) == Ordering::Greater
    }

    /// Steps past the floor's own entries after a seek to `floor_end`.
    fn skip_floor(&mut self) {
        while self.inner.valid() && !self.above_floor(self.inner.key()) {
            self.inner.next();
        }
    }
}

impl<I: InternalIterator> InternalIterator for AboveKey<I> {
    fn valid(&self) -> bool {
        self.inner.valid() && self.above_floor(self.inner.key())
    }

    fn seek_to_first(&mut self) {
        self.inner.seek(self.floor_end.encoded());
        self.skip_floor();
    }

    fn seek_to_last(&mut self) {
        self.inner.seek_to_last();
    }

    fn seek(&mut self, target: &[u8]) {
        if self.above_floor(target) {
            self.inner.seek(target);
        } else {
            self.seek_to_first();
        }
    }

    fn next(&mut self) {
        self.inner.next();
    }

    fn prev(&mut self) {
        self.inner.prev();
    }

    fn key(&self) -> &[u8] {
        self.inner.key()
    }

    fn value(&self) -> &[u8] {
        self.inner.value()
    }

    fn status(&self) -> Result<()> {
        self.inner.status()
    }

    fn location(&self) -> Option<EntryLocation> {
        self.inner.location()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iterator::VecIterator;

    fn entries(keys: &[(&str, u64)]) -> VecIterator {
        VecIterator::new(
            keys.iter()
                .map(|&(k, seq)| {
                    (
                        InternalKey::new(k.as_bytes(), seq, ValueKind::Value).into_vec(),
                        Vec::new(),
                    )
                })
                .collect(),
            KeyOrder::Bytewise,
        )
    }

    fn forward(it: &mut impl InternalIterator) -> Vec<String> {
        let mut out = Vec::new();
        while it.valid() {
            out.push(String::from_utf8(user_key(it.key()).to_vec()).unwrap());
            it.next();
        }
        out
    }

    #[test]
    fn hides_every_version_at_or_below_the_floor() {
        let base = entries(&[("a", 1), ("c", 5), ("c", 3), ("d", 2), ("f", 1)]);
        let mut it = AboveKey::new(base, b"c".to_vec(), KeyOrder::Bytewise);
        it.seek_to_first();
        assert_eq!(forward(&mut it), ["d", "f"]);
        it.seek(InternalKey::new(b"a", 9, ValueKind::Value).encoded());
        assert_eq!(forward(&mut it), ["d", "f"], "a seek below the floor");
        it.seek(InternalKey::new(b"e", 9, ValueKind::Value).encoded());
        assert_eq!(forward(&mut it), ["f"]);
    }

    #[test]
    fn backward_stops_at_the_floor() {
        let base = entries(&[("a", 1), ("c", 3), ("d", 2), ("f", 1)]);
        let mut it = AboveKey::new(base, b"c".to_vec(), KeyOrder::Bytewise);
        it.seek_to_last();
        let mut out = Vec::new();
        while it.valid() {
            out.push(user_key(it.key()).to_vec());
            it.prev();
        }
        assert_eq!(out, [b"f".to_vec(), b"d".to_vec()]);
        let mut all_hidden = AboveKey::new(
            entries(&[("a", 1), ("b", 1)]),
            b"c".to_vec(),
            KeyOrder::Bytewise,
        );
        all_hidden.seek_to_last();
        assert!(!all_hidden.valid());
        all_hidden.seek_to_first();
        assert!(!all_hidden.valid());
    }
}
