//! A HyperLogLog sketch of a table's distinct user keys.
//!
//! Sketches of several tables merge into a sketch of their union, which is
//! how TRIAD estimates key overlap (1 - unique(all) / sum(count)) without
//! reading the tables. Tables store sketches with p = 12 (standard error
//! 1.04 / 64 ≈ 1.6%, 4 KiB); a sketch kept in memory for many tables can be
//! folded to a lower precision ([`HyperLogLog::fold`]) for a quarter of the
//! memory per two bits dropped.

use xxhash_rust::xxh3::xxh3_64;

/// Index bits of the sketches tables store.
const P: u8 = 12;
const REGISTERS: usize = 1 << P;
/// Largest possible register: leading zeros of the remaining 64 - p bits, + 1.
const fn max_rank(p: u8) -> u8 {
    64 - p + 1
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HyperLogLog {
    /// Index bits: `registers.len() == 1 << p`.
    p: u8,
    registers: Box<[u8]>,
}

impl Default for HyperLogLog {
    fn default() -> HyperLogLog {
        HyperLogLog::new()
    }
}

impl HyperLogLog {
    /// Bytes of [`HyperLogLog::encode_to`]'s output.
    pub const ENCODED_LEN: usize = 1 + REGISTERS;

    /// Smallest precision [`HyperLogLog::fold`] goes down to.
    pub const MIN_PRECISION: u8 = 4;

    /// An empty sketch of the precision tables store.
    pub fn new() -> HyperLogLog {
        HyperLogLog::with_precision(P)
    }

    /// An empty sketch with `p` index bits (clamped to
    /// `MIN_PRECISION..=12`).
    pub fn with_precision(p: u8) -> HyperLogLog {
        let p = p.clamp(Self::MIN_PRECISION, P);
        HyperLogLog {
            p,
            registers: vec![0u8; 1 << p].into_boxed_slice(),
        }
    }

    /// Index bits of this sketch.
    pub fn precision(&self) -> u8 {
        self.p
    }

    /// Heap bytes the registers take (what a sketch costs in memory).
    pub fn memory_bytes(&self) -> usize {
        self.registers.len()
    }

    pub fn add(&mut self, key: &[u8]) {
        let p = self.p;
        let h = xxh3_64(key);
        let index = (h >> (64 - p)) as usize;
        // The guard bit bounds the rank when the remaining bits are all zero.
        let rest = (h << p) | (1 << (p - 1));
        let rank = rest.leading_zeros() as u8 + 1;
        let r = &mut self.registers[index];
        *r = (*r).max(rank);
    }

    /// The same sketch with `p` index bits (no change when `p` is not
    /// lower): exactly the sketch the same keys would have built at `p`.
    /// Each register's dropped index bits become the leading bits of the
    /// rest of the hash, so its rank is theirs when they are not all zero,
    /// and grows by their count when they are.
    pub fn fold(&self, p: u8) -> HyperLogLog {
        let p = p.max(Self::MIN_PRECISION);
        if p >= self.p {
            return self.clone();
        }
        let dropped = u32::from(self.p - p);
        let mut folded = HyperLogLog::with_precision(p);
        for (index, &rank) in self.registers.iter().enumerate() {
            if rank == 0 {
                continue;
            }
            let low = (index & ((1 << dropped) - 1)) as u32;
            let rank = if low == 0 {
                rank + dropped as u8
            } else {
                (dropped - (32 - low.leading_zeros())) as u8 + 1
            };
            let r = &mut folded.registers[index >> dropped];
            *r = (*r).max(rank);
        }
        folded
    }

    /// Makes `self` a sketch of the union of both key sets, at the lower of
    /// the two precisions.
    pub fn merge(&mut self, other: &HyperLogLog) {
        if other.p < self.p {
            *self = self.fold(other.p);
        }
        let folded;
        let other = if other.p > self.p {
            folded = other.fold(self.p);
            &folded
        } else {
            other
        };
        for (a, b) in self.registers.iter_mut().zip(other.registers.iter()) {
            *a = (*a).max(*b);
        }
    }

    /// Estimated number of distinct keys added.
    pub fn estimate(&self) -> f64 {
        let m = self.registers.len() as f64;
        let alpha = 0.7213 / (1.0 + 1.079 / m);
        let sum: f64 = self
            .registers
            .iter()
            .map(|&r| f64::powi(2.0, -i32::from(r)))
            .sum();
        let raw = alpha * m * m / sum;
        let zeros = self.registers.iter().filter(|&&r| r == 0).count();
        // Small-range correction: linear counting is more accurate while
        // many registers are still empty.
        if raw <= 2.5 * m && zeros > 0 {
            m * (m / zeros as f64).ln()
        } else {
            raw
        }
    }

    /// Encoding: one byte `p`, then the 2^p one-byte registers. Tables
    /// store p = 12 sketches only (a folded one is for memory).
    pub fn encode_to(&self, dst: &mut Vec<u8>) {
        dst.push(self.p);
        dst.extend_from_slice(&self.registers);
    }

    /// Decodes a sketch; `Err` carries the corruption reason.
    pub fn decode(src: &[u8]) -> Result<HyperLogLog, &'static str> {
        let (&p, registers) = src.split_first().ok_or("empty hyperloglog")?;
        if p != P {
            return Err("unsupported hyperloglog precision");
        }
        if registers.len() != REGISTERS {
            return Err("hyperloglog has the wrong size");
        }
        if registers.iter().any(|&r| r > max_rank(P)) {
            return Err("hyperloglog register out of range");
        }
        Ok(HyperLogLog {
            p: P,
            registers: registers.into(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sketch(range: std::ops::Range<u32>) -> HyperLogLog {
        let mut h = HyperLogLog::new();
        for i in range {
            h.add(format!("key{i}").as_bytes());
        }
        h
    }

    fn assert_close(estimate: f64, truth: f64, tolerance: f64) {
        let err = (estimate - truth).abs() / truth;
        assert!(err < tolerance, "estimate {estimate} vs {truth}");
    }

    #[test]
    fn estimates_within_five_percent() {
        assert_close(sketch(0..100_000).estimate(), 100_000.0, 0.05);
        assert_close(sketch(0..1_000).estimate(), 1_000.0, 0.05);
        assert_eq!(HyperLogLog::new().estimate(), 0.0);
    }

    #[test]
    fn duplicates_do_not_count() {
        let mut h = sketch(0..1_000);
        for i in 0..1_000 {
            h.add(format!("key{i}").as_bytes());
        }
        assert_close(h.estimate(), 1_000.0, 0.05);
    }

    #[test]
    fn merge_estimates_the_union() {
        let mut a = sketch(0..60_000);
        let b = sketch(40_000..100_000);
        a.merge(&b);
        assert_close(a.estimate(), 100_000.0, 0.05);
        // TRIAD's overlap ratio: 1 - 100k / 120k = 1/6.
        let overlap = 1.0 - a.estimate() / 120_000.0;
        assert!((overlap - 1.0 / 6.0).abs() < 0.05, "{overlap}");
    }

    #[test]
    fn encode_round_trip_and_rejects_damage() {
        let h = sketch(0..5_000);
        let mut buf = Vec::new();
        h.encode_to(&mut buf);
        assert_eq!(buf.len(), HyperLogLog::ENCODED_LEN);
        assert_eq!(HyperLogLog::decode(&buf).unwrap(), h);
        assert!(HyperLogLog::decode(&buf[..100]).is_err());
        let mut bad = buf.clone();
        bad[0] = 14;
        assert!(HyperLogLog::decode(&bad).is_err());
        let mut bad = buf;
        bad[7] = 200;
        assert!(HyperLogLog::decode(&bad).is_err());
    }

    #[test]
    fn folding_equals_building_at_the_lower_precision() {
        for p in [11, 10, 8, HyperLogLog::MIN_PRECISION] {
            let mut direct = HyperLogLog::with_precision(p);
            for i in 0..20_000 {
                direct.add(format!("key{i}").as_bytes());
            }
            let folded = sketch(0..20_000).fold(p);
            assert_eq!(folded, direct, "p = {p}");
            assert_eq!(folded.memory_bytes(), 1 << p);
        }
        let h = sketch(0..10);
        assert_eq!(h.fold(12), h);
        assert_eq!(h.fold(0).precision(), HyperLogLog::MIN_PRECISION);
    }

    #[test]
    fn merge_across_precisions_uses_the_lower_one() {
        let mut a = sketch(0..60_000);
        let b = sketch(40_000..100_000).fold(10);
        a.merge(&b);
        assert_eq!(a.precision(), 10);
        assert_close(a.estimate(), 100_000.0, 0.1);
        let mut c = sketch(0..60_000).fold(10);
        c.merge(&sketch(40_000..100_000));
        assert_eq!(c, a);
    }

    proptest! {
        #[test]
        fn decoding_random_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = HyperLogLog::decode(&bytes);
        }
    }
}
