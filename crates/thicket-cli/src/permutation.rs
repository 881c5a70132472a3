//! A seeded permutation for `thicket load --random`: Fisher-Yates driven by
//! splitmix64, so the order depends only on the range and the seed.

/// splitmix64: a tiny, fast, well-mixed 64-bit generator.
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..bound` (`bound > 0`), by multiply-shift.
    pub fn below(&mut self, bound: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(bound)) >> 64) as u64
    }
}

/// The numbers `start..start + count` in an order fixed by `seed`.
pub fn permutation(start: u64, count: u64, seed: u64) -> Vec<u64> {
    let mut v: Vec<u64> = (start..start + count).collect();
    let mut rng = SplitMix64::new(seed);
    for i in (1..v.len()).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        v.swap(i, j);
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn is_a_permutation() {
        for (start, count) in [(0, 0), (0, 1), (5, 2), (100, 1000), (7, 10_007)] {
            let p = permutation(start, count, 3);
            assert_eq!(p.len() as u64, count);
            let mut sorted = p.clone();
            sorted.sort_unstable();
            assert!(sorted.iter().copied().eq(start..start + count));
        }
    }

    #[test]
    fn deterministic_for_a_seed() {
        assert_eq!(permutation(10, 500, 42), permutation(10, 500, 42));
        assert_ne!(permutation(10, 500, 42), permutation(10, 500, 43));
        // Actually shuffled, not the identity.
        assert!(!permutation(0, 500, 0).iter().copied().eq(0..500));
    }

    #[test]
    fn below_stays_in_range() {
        let mut rng = SplitMix64::new(1);
        for bound in [1u64, 2, 3, 1000, u64::MAX] {
            for _ in 0..100 {
                assert!(rng.below(bound) < bound);
            }
        }
    }
}
