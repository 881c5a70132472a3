//! Bytewise key order, inlined for short keys.
//!
//! Point lookups compare a key a dozen times or more, mostly keys of a few
//! tens of bytes; a call into the C library's `memcmp` for each costs more
//! than comparing eight bytes at a time in place. Long keys still go to
//! `memcmp`, which is faster on them.

use std::cmp::Ordering;

/// Keys longer than this (in their shared length) are compared by `memcmp`.
const INLINE_MAX: usize = 64;

/// Orders `a` and `b` as `a.cmp(b)` does.
#[inline]
pub fn compare_bytes(a: &[u8], b: &[u8]) -> Ordering {
    let n = a.len().min(b.len());
    if n > INLINE_MAX {
        return a.cmp(b);
    }
    let (mut a_words, mut b_words) = (a[..n].chunks_exact(8), b[..n].chunks_exact(8));
    for (x, y) in (&mut a_words).zip(&mut b_words) {
        let (x, y) = (word(x), word(y));
        if x != y {
            // Big-endian words order like the bytes they hold.
            return x.cmp(&y);
        }
    }
    for (x, y) in a_words.remainder().iter().zip(b_words.remainder()) {
        if x != y {
            return x.cmp(y);
        }
    }
    a.len().cmp(&b.len())
}

#[inline]
fn word(bytes: &[u8]) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(bytes);
    u64::from_be_bytes(w)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn orders_like_slices() {
        let cases: [(&[u8], &[u8]); 7] = [
            (b"", b""),
            (b"", b"a"),
            (b"key0000000000001", b"key0000000000002"),
            (b"key00000000000010", b"key0000000000001"),
            (b"abcdefgh\xff", b"abcdefgi"),
            (b"\x00", b""),
            (&[7; 100], &[7; 99]),
        ];
        for (a, b) in cases {
            assert_eq!(compare_bytes(a, b), a.cmp(b), "{a:?} vs {b:?}");
            assert_eq!(compare_bytes(b, a), b.cmp(a), "{b:?} vs {a:?}");
        }
    }

    proptest! {
        #[test]
        fn matches_slice_order(
            prefix in proptest::collection::vec(any::<u8>(), 0..80),
            a in proptest::collection::vec(0u8..4, 0..20),
            b in proptest::collection::vec(0u8..4, 0..20),
        ) {
            let a = [prefix.as_slice(), &a].concat();
            let b = [prefix.as_slice(), &b].concat();
            prop_assert_eq!(compare_bytes(&a, &b), a.cmp(&b));
        }
    }
}
