//! A k-way merge of internal iterators, in both directions.
//!
//! Children are few (memtables, L0 runs, one per deeper run), so the
//! smallest/largest child is found by a linear scan, as LevelDB does. When
//! the direction changes, every other child is re-positioned around the
//! current key.

use std::cmp::Ordering;

use super::{EntryLocation, InternalIterator};
use crate::error::Result;
use crate::format::KeyOrder;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Direction {
    Forward,
    Reverse,
}

pub struct MergingIterator {
    children: Vec<Box<dyn InternalIterator>>,
    current: Option<usize>,
    direction: Direction,
    order: KeyOrder,
}

impl MergingIterator {
    /// Merges `children`, each sorted by `order`.
    pub fn new(children: Vec<Box<dyn InternalIterator>>, order: KeyOrder) -> MergingIterator {
        MergingIterator {
            children,
            current: None,
            direction: Direction::Forward,
            order,
        }
    }

    /// Like `seek`, but `seek_all` positions the children (on other
    /// threads if it likes) and hands them back.
    pub fn seek_with(
        &mut self,
        target: &[u8],
        seek_all: impl FnOnce(Vec<Box<dyn InternalIterator>>, &[u8]) -> Vec<Box<dyn InternalIterator>>,
    ) {
        self.children = seek_all(std::mem::take(&mut self.children), target);
        self.direction = Direction::Forward;
        self.find_smallest();
    }

    /// Forward only: moves the children from `first` on that sit before
    /// `target` (a key past the current one) to it, as when a range
    /// tombstone of a newer source covers everything they hold up to it.
    /// Returns whether the current entry was one of theirs: the merge then
    /// sits on an entry not returned yet, so the caller must not step.
    pub fn seek_older(&mut self, first: usize, target: &[u8]) -> bool {
        debug_assert!(self.direction == Direction::Forward);
        let moved = self.current.is_some_and(|c| c >= first);
        for c in self.children.iter_mut().skip(first) {
            if c.valid() && self.order.internal(c.key(), target) == Ordering::Less {
                c.seek(target);
            }
        }
        self.find_smallest();
        moved
    }

    /// Reverse only: moves the children from `first` on that sit at or
    /// after `target` to their last entry before it, as when a range
    /// tombstone of a newer source covers everything they hold from
    /// `target` up to the current entry. Returns whether the current entry
    /// was one of theirs (then the caller must not step).
    pub fn seek_older_before(&mut self, first: usize, target: &[u8]) -> bool {
        debug_assert!(self.direction == Direction::Reverse);
        let moved = self.current.is_some_and(|c| c >= first);
        for c in self.children.iter_mut().skip(first) {
            if c.valid() && self.order.internal(c.key(), target) != Ordering::Less {
                c.seek(target);
                if c.valid() {
                    c.prev();
                } else {
                    c.seek_to_last();
                }
            }
        }
        self.find_largest();
        moved
    }

    fn pick(&mut self, want: Ordering) {
        let mut best: Option<usize> = None;
        for (i, child) in self.children.iter().enumerate() {
            if !child.valid() {
                // A child that failed must stop the merge: skipping it would
                // return other children's entries as if its keys did not
                // exist.
                if child.status().is_err() {
                    self.current = None;
                    return;
                }
                continue;
            }
            best = match best {
                Some(b) if self.order.internal(child.key(), self.children[b].key()) != want => {
                    Some(b)
                }
                _ => Some(i),
            };
        }
        self.current = best;
    }

    fn find_smallest(&mut self) {
        self.pick(Ordering::Less);
    }

    fn find_largest(&mut self) {
        self.pick(Ordering::Greater);
    }

    fn cur(&self) -> usize {
        self.current.expect("merging iterator used while invalid")
    }
}

impl InternalIterator for MergingIterator {
    fn valid(&self) -> bool {
        self.current.is_some()
    }

    fn seek_to_first(&mut self) {
        for c in &mut self.children {
            c.seek_to_first();
        }
        self.direction = Direction::Forward;
        self.find_smallest();
    }

    fn seek_to_last(&mut self) {
        for c in &mut self.children {
            c.seek_to_last();
        }
        self.direction = Direction::Reverse;
        self.find_largest();
    }

    fn seek(&mut self, target: &[u8]) {
        for c in &mut self.children {
            c.seek(target);
        }
        self.direction = Direction::Forward;
        self.find_smallest();
    }

    fn next(&mut self) {
        let cur = self.cur();
        if self.direction != Direction::Forward {
            let key = self.children[cur].key().to_vec();
            for (i, c) in self.children.iter_mut().enumerate() {
                if i == cur {
                    continue;
                }
                c.seek(&key);
                if c.valid() && self.order.internal(c.key(), &key) == Ordering::Equal {
                    c.next();
                }
            }
            self.direction = Direction::Forward;
        }
        self.children[cur].next();
        self.find_smallest();
    }

    fn prev(&mut self) {
        let cur = self.cur();
        if self.direction != Direction::Reverse {
            let key = self.children[cur].key().to_vec();
            for (i, c) in self.children.iter_mut().enumerate() {
                if i == cur {
                    continue;
                }
                c.seek(&key);
                if c.valid() {
                    c.prev();
                } else {
                    c.seek_to_last();
                }
            }
            self.direction = Direction::Reverse;
        }
        self.children[cur].prev();
        self.find_largest();
    }

    fn key(&self) -> &[u8] {
        self.children[self.cur()].key()
    }

    fn value(&self) -> &[u8] {
        self.children[self.cur()].value()
    }

    fn status(&self) -> Result<()> {
        self.children.iter().try_for_each(|c| c.status())
    }

    fn location(&self) -> Option<EntryLocation> {
        self.children[self.current?].location()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::internal_key::{InternalKey, ValueKind};
    use crate::iterator::VecIterator;
    use proptest::prelude::*;

    fn source(keys: &[(u8, u64)]) -> Box<dyn InternalIterator> {
        let mut entries: Vec<(Vec<u8>, Vec<u8>)> = keys
            .iter()
            .map(|&(k, s)| {
                (
                    InternalKey::new(&[k], s, ValueKind::Value).into_vec(),
                    vec![k],
                )
            })
            .collect();
        entries.sort_by(|a, b| KeyOrder::Bytewise.internal(&a.0, &b.0));
        entries.dedup_by(|a, b| a.0 == b.0);
        Box::new(VecIterator::new(entries, KeyOrder::Bytewise))
    }

    struct Failing;

    impl InternalIterator for Failing {
        fn valid(&self) -> bool {
            false
        }
        fn seek_to_first(&mut self) {}
        fn seek_to_last(&mut self) {}
        fn seek(&mut self, _: &[u8]) {}
        fn next(&mut self) {}
        fn prev(&mut self) {}
        fn key(&self) -> &[u8] {
            unreachable!("never valid")
        }
        fn value(&self) -> &[u8] {
            unreachable!("never valid")
        }
        fn status(&self) -> Result<()> {
            Err(crate::error::Error::corruption("x.seg", 7, "bad block"))
        }
    }

    #[test]
    fn a_failed_child_stops_the_merge() {
        let mut it = MergingIterator::new(
            vec![source(&[(1, 1), (2, 2)]), Box::new(Failing)],
            KeyOrder::Bytewise,
        );
        it.seek_to_first();
        assert!(!it.valid());
        assert!(it.status().unwrap_err().is_corruption());
        it.seek_to_last();
        assert!(!it.valid());
    }

    proptest! {
        #[test]
        fn matches_sorted_union_with_direction_changes(
            parts in proptest::collection::vec(proptest::collection::vec((any::<u8>(), 0u64..1000), 0..20), 1..5),
            moves in proptest::collection::vec(any::<bool>(), 0..60),
        ) {
            // Sequence numbers are made unique across sources, as in the engine.
            let mut seq = 0;
            let parts: Vec<Vec<(u8, u64)>> = parts.into_iter().map(|p| p.into_iter().map(|(k, _)| { seq += 1; (k, seq) }).collect()).collect();
            let mut expected: Vec<Vec<u8>> = parts.iter().flatten()
                .map(|&(k, s)| InternalKey::new(&[k], s, ValueKind::Value).into_vec()).collect();
            expected.sort_by(|a, b| KeyOrder::Bytewise.internal(a, b));
            let mut it = MergingIterator::new(
                parts.iter().map(|p| source(p)).collect(),
                KeyOrder::Bytewise,
            );
            it.seek_to_first();
            let mut got = Vec::new();
            while it.valid() { got.push(it.key().to_vec()); it.next(); }
            prop_assert_eq!(&got, &expected);

            if expected.is_empty() { return Ok(()); }
            let mut pos = expected.len() / 2;
            it.seek(&expected[pos]);
            for forward in moves {
                prop_assert!(it.valid());
                prop_assert_eq!(it.key(), &expected[pos][..]);
                if forward {
                    if pos + 1 == expected.len() { break; }
                    it.next(); pos += 1;
                } else {
                    if pos == 0 { break; }
                    it.prev(); pos -= 1;
                }
            }
        }
    }
}
