//! Short index keys.
//!
//! An index entry only needs a key `>=` every key of its block and `<`
//! every key of the next block; a short one keeps the index small and its
//! binary search cache-friendly.

use crate::format::internal_key::{self, pack_trailer, ValueKind, MAX_SEQUENCE};

/// Writes into `dst` an internal key `k` with `last <= k < next`, shorter
/// than `last` when their user keys allow it; otherwise `last` itself.
pub fn shortest_separator(dst: &mut Vec<u8>, last: &[u8], next: &[u8]) {
    dst.clear();
    let (a, b) = (internal_key::user_key(last), internal_key::user_key(next));
    let diff = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    if diff < a.len() && diff < b.len() {
        // Bumping the first differing byte yields a user key strictly
        // between the two, provided it stays below `b`'s byte; the maximal
        // trailer then makes it sort first among that user key's entries.
        if a[diff]
            .checked_add(1)
            .is_some_and(|bumped| bumped < b[diff])
        {
            dst.extend_from_slice(&a[..=diff]);
            dst[diff] += 1;
            dst.extend_from_slice(&pack_trailer(MAX_SEQUENCE, ValueKind::SEEK).to_le_bytes());
            return;
        }
    }
    dst.extend_from_slice(last);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{InternalKey, KeyOrder};
    use proptest::prelude::*;
    use std::cmp::Ordering;

    fn ik(user: &[u8], seq: u64) -> Vec<u8> {
        InternalKey::new(user, seq, ValueKind::Value).into_vec()
    }

    #[test]
    fn shortens_when_possible() {
        let mut dst = Vec::new();
        shortest_separator(&mut dst, &ik(b"abcdef", 5), &ik(b"abzzzz", 9));
        assert_eq!(internal_key::user_key(&dst), b"abd");
        shortest_separator(&mut dst, &ik(b"abc", 5), &ik(b"abd", 9));
        assert_eq!(dst, ik(b"abc", 5));
        shortest_separator(&mut dst, &ik(b"ab", 5), &ik(b"abc", 9));
        assert_eq!(dst, ik(b"ab", 5));
        shortest_separator(&mut dst, &ik(b"k", 9), &ik(b"k", 5));
        assert_eq!(dst, ik(b"k", 9));
    }

    proptest! {
        #[test]
        fn separator_lies_between(a in proptest::collection::vec(any::<u8>(), 0..8), sa in 0..1000u64,
                                  b in proptest::collection::vec(any::<u8>(), 0..8), sb in 0..1000u64) {
            let (x, y) = (ik(&a, sa), ik(&b, sb));
            let (last, next) = match KeyOrder::Bytewise.internal(&x, &y) {
                Ordering::Less => (x, y),
                Ordering::Greater => (y, x),
                Ordering::Equal => return Ok(()),
            };
            let mut dst = Vec::new();
            shortest_separator(&mut dst, &last, &next);
            prop_assert_ne!(KeyOrder::Bytewise.internal(&last, &dst), Ordering::Greater);
            prop_assert_eq!(KeyOrder::Bytewise.internal(&dst, &next), Ordering::Less);
            prop_assert!(dst.len() <= last.len());
        }
    }
}
