//! Range tombstones and their fragmented form (Pebble's keyspan fragments,
//! RocksDB's `FragmentedRangeTombstoneList`).
//!
//! A range tombstone `[start, end) @ seq` deletes every version of every
//! key in the half-open range written before `seq`. Overlapping tombstones
//! are split at every boundary into *fragments*: non-overlapping ranges in
//! key order, each carrying the sequence numbers of all tombstones stacked
//! on it, newest first. A lookup then needs one binary search and, for a
//! snapshot, the newest stacked sequence it can see.
//!
//! Range tombstones need the built-in byte order: a fragment clipped at a
//! table's last key ends at that key's immediate successor (`key ++ 0x00`),
//! which only exists in byte order. Stores with a custom comparator refuse
//! range deletes.
//!
//! The encoding (`docs/format.md`, *Range-deletion block*) is shared by
//! every table kind that carries tombstones.

use std::cmp::Ordering;

use super::coding::{get_length_prefixed, get_varint64, put_length_prefixed, put_varint64};
use super::internal_key::MAX_SEQUENCE;

/// One range deletion as written: `[start, end)` at `seq`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RangeTombstone {
    /// First key deleted.
    pub start: Vec<u8>,
    /// First key after the range (exclusive).
    pub end: Vec<u8>,
    /// Sequence number: the deletion hides versions older than it.
    pub seq: u64,
}

/// A piece of the key space with the tombstones stacked on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fragment {
    /// First key of the piece.
    pub start: Vec<u8>,
    /// Exclusive; greater than `start`.
    pub end: Vec<u8>,
    /// Strictly descending, never empty.
    pub seqs: Vec<u64>,
}

impl Fragment {
    /// The newest stacked sequence visible at `snapshot`.
    pub fn visible_seq(&self, snapshot: u64) -> Option<u64> {
        self.seqs.iter().copied().find(|&s| s <= snapshot)
    }
}

/// The byte-order successor of `key`: the smallest key greater than it.
pub fn successor(key: &[u8]) -> Vec<u8> {
    let mut s = Vec::with_capacity(key.len() + 1);
    s.extend_from_slice(key);
    s.push(0);
    s
}

/// Version byte that starts an encoded fragment list.
const ENCODING_VERSION: u8 = 1;

/// Fragments in key order, pairwise disjoint.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Fragments {
    list: Vec<Fragment>,
}

impl Fragments {
    /// Bytes the fragments hold in memory.
    pub fn memory_bytes(&self) -> u64 {
        let each = |f: &Fragment| {
            std::mem::size_of::<Fragment>()
                + f.start.capacity()
                + f.end.capacity()
                + f.seqs.capacity() * std::mem::size_of::<u64>()
        };
        self.list.iter().map(each).sum::<usize>() as u64
    }

    /// Fragments `tombstones` (any order, overlapping or not). Empty
    /// ranges are ignored.
    pub fn fragment<'a>(tombstones: impl IntoIterator<Item = &'a RangeTombstone>) -> Fragments {
        let tombstones: Vec<&RangeTombstone> =
            tombstones.into_iter().filter(|t| t.start < t.end).collect();
        let mut bounds: Vec<&[u8]> = tombstones
            .iter()
            .flat_map(|t| [t.start.as_slice(), t.end.as_slice()])
            .collect();
        bounds.sort_unstable();
        bounds.dedup();
        let mut stacks: Vec<Vec<u64>> = vec![Vec::new(); bounds.len().saturating_sub(1)];
        for t in &tombstones {
            let from = bounds.partition_point(|b| *b < t.start.as_slice());
            let to = bounds.partition_point(|b| *b < t.end.as_slice());
            for stack in &mut stacks[from..to] {
                stack.push(t.seq);
            }
        }
        let mut list: Vec<Fragment> = Vec::new();
        for (i, mut seqs) in stacks.into_iter().enumerate() {
            if seqs.is_empty() {
                continue;
            }
            seqs.sort_unstable_by(|a, b| b.cmp(a));
            seqs.dedup();
            let (start, end) = (bounds[i], bounds[i + 1]);
            // Neighbours with the same stack read the same: one fragment.
            match list.last_mut() {
                Some(last) if last.end == start && last.seqs == seqs => last.end = end.to_vec(),
                _ => list.push(Fragment {
                    start: start.to_vec(),
                    end: end.to_vec(),
                    seqs,
                }),
            }
        }
        Fragments { list }
    }

    /// Fragments already in key order and pairwise disjoint.
    pub fn from_sorted(list: Vec<Fragment>) -> Fragments {
        debug_assert!(list.windows(2).all(|w| w[0].end <= w[1].start));
        Fragments { list }
    }

    /// The fragments, in key order.
    pub fn into_list(self) -> Vec<Fragment> {
        self.list
    }

    /// Every fragment's stacked sequences as tombstones, so that fragment
    /// lists can be merged by fragmenting them together.
    pub fn tombstones(&self) -> impl Iterator<Item = RangeTombstone> + '_ {
        self.list.iter().flat_map(|f| {
            f.seqs.iter().map(|&seq| RangeTombstone {
                start: f.start.clone(),
                end: f.end.clone(),
                seq,
            })
        })
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    pub fn iter(&self) -> std::slice::Iter<'_, Fragment> {
        self.list.iter()
    }

    /// The fragment holding `key`, if any.
    pub fn find(&self, key: &[u8]) -> Option<&Fragment> {
        let i = self.list.partition_point(|f| f.end.as_slice() <= key);
        self.list.get(i).filter(|f| f.start.as_slice() <= key)
    }

    /// The newest tombstone sequence covering `key` visible at `snapshot`
    /// (0: none).
    pub fn covering_seq(&self, key: &[u8], snapshot: u64) -> u64 {
        self.find(key)
            .and_then(|f| f.visible_seq(snapshot))
            .unwrap_or(0)
    }

    /// The fragments cut to `[lower, upper)` (`None`: unbounded).
    pub fn clip(&self, lower: Option<&[u8]>, upper: Option<&[u8]>) -> Fragments {
        let list = self
            .list
            .iter()
            .filter_map(|f| {
                let start = match lower {
                    Some(l) if l > f.start.as_slice() => l,
                    _ => &f.start,
                };
                let end = match upper {
                    Some(u) if u < f.end.as_slice() => u,
                    _ => &f.end,
                };
                (start < end).then(|| Fragment {
                    start: start.to_vec(),
                    end: end.to_vec(),
                    seqs: f.seqs.clone(),
                })
            })
            .collect();
        Fragments { list }
    }

    /// Keeps, per fragment, only the sequences `keep` accepts; fragments
    /// left without any disappear, touching ones left alike merge.
    pub fn retain_seqs(&mut self, mut keep: impl FnMut(&Fragment, u64) -> bool) {
        let mut list: Vec<Fragment> = Vec::with_capacity(self.list.len());
        for mut f in std::mem::take(&mut self.list) {
            let kept: Vec<u64> = f.seqs.iter().copied().filter(|&s| keep(&f, s)).collect();
            if kept.is_empty() {
                continue;
            }
            match list.last_mut() {
                Some(last) if last.end == f.start && last.seqs == kept => last.end = f.end,
                _ => {
                    f.seqs = kept;
                    list.push(f);
                }
            }
        }
        self.list = list;
    }

    /// Smallest start and largest end, when not empty.
    pub fn bounds(&self) -> Option<(&[u8], &[u8])> {
        Some((&self.list.first()?.start, &self.list.last()?.end))
    }

    /// Smallest and largest stacked sequence, when not empty.
    pub fn seq_range(&self) -> Option<(u64, u64)> {
        let mut seqs = self.list.iter().flat_map(|f| f.seqs.iter().copied());
        let first = seqs.next()?;
        Some(seqs.fold((first, first), |(lo, hi), s| (lo.min(s), hi.max(s))))
    }

    /// Stacked sequences over all fragments (the entries of the block).
    pub fn stacked(&self) -> u64 {
        self.list.iter().map(|f| f.seqs.len() as u64).sum()
    }

    /// `version u8 | count varint | count × (start | end | n varint | n × seq varint)`,
    /// keys length-prefixed.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = vec![ENCODING_VERSION];
        put_varint64(&mut out, self.list.len() as u64);
        for f in &self.list {
            put_length_prefixed(&mut out, &f.start);
            put_length_prefixed(&mut out, &f.end);
            put_varint64(&mut out, f.seqs.len() as u64);
            for &s in &f.seqs {
                put_varint64(&mut out, s);
            }
        }
        out
    }

    /// Decodes and validates an encoded list; `Err` names what is wrong.
    pub fn decode(src: &[u8]) -> Result<Fragments, &'static str> {
        let (&version, mut src) = src.split_first().ok_or("empty range-deletion block")?;
        if version != ENCODING_VERSION {
            return Err("unknown range-deletion block version");
        }
        let count = get_varint64(&mut src).ok_or("truncated fragment count")?;
        // Each fragment takes at least 5 bytes: no count beyond that.
        if count > src.len() as u64 / 5 {
            return Err("fragment count exceeds the block");
        }
        let mut list: Vec<Fragment> = Vec::with_capacity(count as usize);
        for _ in 0..count {
            let start = get_length_prefixed(&mut src).ok_or("truncated fragment start")?;
            let end = get_length_prefixed(&mut src).ok_or("truncated fragment end")?;
            if start >= end {
                return Err("fragment start not below its end");
            }
            if list.last().is_some_and(|p| p.end.as_slice() > start) {
                return Err("fragments overlap or are out of order");
            }
            let n = get_varint64(&mut src).ok_or("truncated sequence count")?;
            if n == 0 || n > src.len() as u64 {
                return Err("bad sequence count");
            }
            let mut seqs = Vec::with_capacity(n as usize);
            for _ in 0..n {
                let s = get_varint64(&mut src).ok_or("truncated sequence")?;
                // Writes are numbered from 1; 0 would read as "nothing
                // covers" (`covering_seq`).
                if s == 0 || s > MAX_SEQUENCE {
                    return Err("sequence number out of range");
                }
                if seqs
                    .last()
                    .is_some_and(|&p: &u64| p.cmp(&s) != Ordering::Greater)
                {
                    return Err("stacked sequences not strictly descending");
                }
                seqs.push(s);
            }
            list.push(Fragment {
                start: start.to_vec(),
                end: end.to_vec(),
                seqs,
            });
        }
        if !src.is_empty() {
            return Err("trailing bytes after the fragments");
        }
        Ok(Fragments { list })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(start: &str, end: &str, seq: u64) -> RangeTombstone {
        RangeTombstone {
            start: start.into(),
            end: end.into(),
            seq,
        }
    }

    fn shape(f: &Fragments) -> Vec<(String, String, Vec<u64>)> {
        f.iter()
            .map(|f| {
                (
                    String::from_utf8(f.start.clone()).unwrap(),
                    String::from_utf8(f.end.clone()).unwrap(),
                    f.seqs.clone(),
                )
            })
            .collect()
    }

    fn s(start: &str, end: &str, seqs: &[u64]) -> (String, String, Vec<u64>) {
        (start.into(), end.into(), seqs.to_vec())
    }

    #[test]
    fn overlapping_tombstones_split_at_every_boundary() {
        let f = Fragments::fragment(&[t("a", "e", 5), t("c", "g", 9), t("x", "x", 3)]);
        assert_eq!(
            shape(&f),
            [s("a", "c", &[5]), s("c", "e", &[9, 5]), s("e", "g", &[9])]
        );
        assert_eq!(f.covering_seq(b"d", 100), 9);
        assert_eq!(f.covering_seq(b"d", 8), 5, "snapshot below the newer one");
        assert_eq!(f.covering_seq(b"d", 4), 0);
        assert_eq!(f.covering_seq(b"g", 100), 0, "end is exclusive");
        assert_eq!(f.covering_seq(b"0", 100), 0);
        assert_eq!(f.seq_range(), Some((5, 9)));
        assert_eq!(f.stacked(), 4);
    }

    #[test]
    fn equal_neighbours_merge_and_duplicates_collapse() {
        let f = Fragments::fragment(&[t("a", "c", 4), t("c", "e", 4), t("b", "d", 4)]);
        assert_eq!(shape(&f), [s("a", "e", &[4])]);
        let merged = Fragments::fragment(&f.tombstones().chain(f.tombstones()).collect::<Vec<_>>());
        assert_eq!(merged, f);
    }

    #[test]
    fn clip_and_retain() {
        let f = Fragments::fragment(&[t("a", "e", 5), t("c", "g", 9)]);
        assert_eq!(
            shape(&f.clip(Some(b"b"), Some(b"d"))),
            [s("b", "c", &[5]), s("c", "d", &[9, 5])]
        );
        assert_eq!(shape(&f.clip(Some(b"f"), None)), [s("f", "g", &[9])]);
        assert!(f.clip(Some(b"g"), None).is_empty());
        let mut g = f.clone();
        g.retain_seqs(|_, seq| seq > 5);
        assert_eq!(shape(&g), [s("c", "g", &[9])], "alike neighbours merge");
    }

    #[test]
    fn encoding_round_trips_and_rejects_damage() {
        let f = Fragments::fragment(&[t("a", "e", 5), t("c", "g", 9), t("", "\0", 1)]);
        let bytes = f.encode();
        assert_eq!(Fragments::decode(&bytes), Ok(f.clone()));
        assert!(Fragments::decode(&bytes[..bytes.len() - 1]).is_err());
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(Fragments::decode(&longer).is_err());
        // Found by the fuzz target: one fragment [\x01, b) at sequence 0.
        assert!(Fragments::decode(b"\x01\x01\x01\x00\x01b\x01\x00").is_err());
        let mut bad_version = bytes.clone();
        bad_version[0] = 9;
        assert!(Fragments::decode(&bad_version).is_err());
        let reversed = Fragments {
            list: f.list.iter().rev().cloned().collect(),
        };
        assert!(Fragments::decode(&reversed.encode()).is_err());
        let ascending = Fragments {
            list: vec![Fragment {
                start: b"a".to_vec(),
                end: b"b".to_vec(),
                seqs: vec![1, 2],
            }],
        };
        assert!(Fragments::decode(&ascending.encode()).is_err());
    }

    mod generated {
        use super::super::*;
        use proptest::prelude::*;

        fn tombstone() -> impl Strategy<Value = RangeTombstone> {
            let key = proptest::collection::vec(0u8..4, 0..3);
            (key.clone(), key, 1u64..50).prop_map(|(start, end, seq)| RangeTombstone {
                start,
                end,
                seq,
            })
        }

        proptest! {
            #[test]
            fn decoding_random_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
                let _ = Fragments::decode(&bytes);
            }

            /// Fragments answer as the tombstones they came from, and
            /// survive encoding.
            #[test]
            fn fragments_answer_as_their_tombstones(
                tombstones in proptest::collection::vec(tombstone(), 0..8),
                probe in proptest::collection::vec(0u8..4, 0..3),
                snapshot in 0u64..60,
            ) {
                let f = Fragments::fragment(&tombstones);
                let want = tombstones
                    .iter()
                    .filter(|t| t.start <= probe && probe < t.end && t.seq <= snapshot)
                    .map(|t| t.seq)
                    .max()
                    .unwrap_or(0);
                prop_assert_eq!(f.covering_seq(&probe, snapshot), want);
                prop_assert_eq!(Fragments::decode(&f.encode()), Ok(f.clone()));
            }
        }
    }
}
