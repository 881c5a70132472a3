//! Range tombstones added one at a time (a memtable's): fragments keyed by
//! their start, so an insert re-fragments only the fragments it overlaps
//! (O(k log n)) instead of copying the whole list, and a lookup is one
//! ordered-map search.

use std::collections::BTreeMap;
use std::ops::Bound;

use super::range_tombstone::{Fragment, Fragments, RangeTombstone};

/// Disjoint fragments by start key.
#[derive(Debug, Default)]
pub struct FragmentMap {
    by_start: BTreeMap<Vec<u8>, Fragment>,
}

impl FragmentMap {
    /// Stacks `t` on the fragments it overlaps (an empty range adds
    /// nothing).
    pub fn insert(&mut self, t: &RangeTombstone) {
        if t.start >= t.end {
            return;
        }
        let before = self
            .by_start
            .range::<[u8], _>((Bound::Unbounded, Bound::Excluded(t.start.as_slice())))
            .next_back()
            .filter(|(_, f)| f.end > t.start)
            .map(|(k, _)| k.clone());
        let inside: Vec<Vec<u8>> = self
            .by_start
            .range::<[u8], _>((
                Bound::Included(t.start.as_slice()),
                Bound::Excluded(t.end.as_slice()),
            ))
            .map(|(k, _)| k.clone())
            .collect();
        let overlapped: Vec<Fragment> = before
            .into_iter()
            .chain(inside)
            .filter_map(|k| self.by_start.remove(&k))
            .collect();
        let mut tombstones: Vec<RangeTombstone> =
            Fragments::from_sorted(overlapped).tombstones().collect();
        tombstones.push(t.clone());
        for f in Fragments::fragment(&tombstones).into_list() {
            self.by_start.insert(f.start.clone(), f);
        }
    }

    /// The newest tombstone sequence covering `key` visible at `snapshot`
    /// (0: none).
    pub fn covering_seq(&self, key: &[u8], snapshot: u64) -> u64 {
        self.by_start
            .range::<[u8], _>((Bound::Unbounded, Bound::Included(key)))
            .next_back()
            .filter(|(_, f)| f.end.as_slice() > key)
            .and_then(|(_, f)| f.visible_seq(snapshot))
            .unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.by_start.is_empty()
    }

    /// The fragments as a list, in key order.
    pub fn to_fragments(&self) -> Fragments {
        Fragments::from_sorted(self.by_start.values().cloned().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn tombstone() -> impl Strategy<Value = RangeTombstone> {
        (
            proptest::collection::vec(0u8..4, 0..3),
            proptest::collection::vec(0u8..4, 0..3),
            1u64..50,
        )
            .prop_map(|(start, end, seq)| RangeTombstone { start, end, seq })
    }

    fn t(start: &str, end: &str, seq: u64) -> RangeTombstone {
        RangeTombstone {
            start: start.into(),
            end: end.into(),
            seq,
        }
    }

    #[test]
    fn adding_one_by_one_equals_fragmenting_all() {
        let all = [
            t("c", "g", 9),
            t("a", "e", 5),
            t("x", "z", 2),
            t("b", "y", 11),
            t("e", "f", 12),
            t("q", "q", 1),
        ];
        let mut one_by_one = FragmentMap::default();
        for (n, tombstone) in all.iter().enumerate() {
            one_by_one.insert(tombstone);
            let expected = Fragments::fragment(&all[..=n]);
            for probe in [
                "", "a", "b", "bb", "c", "d", "e", "f", "g", "q", "x", "y", "z",
            ] {
                for snapshot in [1, 6, 10, 100] {
                    assert_eq!(
                        one_by_one.covering_seq(probe.as_bytes(), snapshot),
                        expected.covering_seq(probe.as_bytes(), snapshot),
                        "after {n}: {probe}@{snapshot}"
                    );
                }
            }
            let list = one_by_one.to_fragments();
            assert_eq!(Fragments::decode(&list.encode()), Ok(list.clone()));
        }
    }

    proptest! {
        /// Added one by one, tombstones answer as when fragmented all at
        /// once, through the map and through its list.
        #[test]
        fn inserting_one_by_one_answers_as_fragmenting_all(
            tombstones in proptest::collection::vec(tombstone(), 0..10),
            probe in proptest::collection::vec(0u8..4, 0..3),
            snapshot in 0u64..60,
        ) {
            let mut map = FragmentMap::default();
            for (n, t) in tombstones.iter().enumerate() {
                map.insert(t);
                let all = Fragments::fragment(&tombstones[..=n]);
                let want = all.covering_seq(&probe, snapshot);
                prop_assert_eq!(map.covering_seq(&probe, snapshot), want);
                let list = map.to_fragments();
                prop_assert_eq!(list.covering_seq(&probe, snapshot), want);
                prop_assert!(list.iter().zip(list.iter().skip(1)).all(|(a, b)| a.end <= b.start));
            }
        }
    }
}
