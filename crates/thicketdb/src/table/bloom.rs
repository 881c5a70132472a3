//! A whole-table Bloom filter over user keys.
//!
//! User keys, not internal keys, go in, so a point lookup at any snapshot
//! can consult it. Probes use double hashing (Kirsch–Mitzenmacher): with
//! `h = xxh3_64(key)`, probe `i` uses `g = h + i * rotl(h, 32)` (wrapping)
//! and maps it to a bit with a multiply-shift, `(g * bits) >> 64`, which is
//! much cheaper than a modulo on the lookup path. Encoding: the bit array,
//! then one byte holding the probe count `k`.

use xxhash_rust::xxh3::xxh3_64;

/// Smallest bit array, so tiny tables do not get degenerate filters.
const MIN_BITS: usize = 64;
const MAX_PROBES: u8 = 30;

/// Collects key hashes while a table is built.
pub struct BloomBuilder {
    bits_per_key: u32,
    hashes: Vec<u64>,
}

impl BloomBuilder {
    pub fn new(bits_per_key: u32) -> BloomBuilder {
        BloomBuilder {
            bits_per_key,
            hashes: Vec::new(),
        }
    }

    pub fn add(&mut self, user_key: &[u8]) {
        self.hashes.push(xxh3_64(user_key));
    }

    /// Encodes the filter for the keys added so far.
    pub fn finish(&self) -> Vec<u8> {
        let k = probe_count(self.bits_per_key);
        let bits = (self.hashes.len() * self.bits_per_key as usize).max(MIN_BITS);
        let bytes = bits.div_ceil(8);
        let bits = bytes as u64 * 8;
        let mut out = vec![0u8; bytes + 1];
        for &h in &self.hashes {
            for bit in probes(h, k, bits) {
                out[(bit / 8) as usize] |= 1 << (bit % 8);
            }
        }
        out[bytes] = k;
        out
    }
}

/// k = round(bits_per_key * ln 2), which minimises the false-positive rate.
fn probe_count(bits_per_key: u32) -> u8 {
    let k = (f64::from(bits_per_key) * std::f64::consts::LN_2).round();
    (k as u8).clamp(1, MAX_PROBES)
}

pub(crate) fn probes(hash: u64, k: u8, bits: u64) -> impl Iterator<Item = u64> {
    let delta = hash.rotate_left(32);
    (0..u64::from(k)).map(move |i| {
        let g = hash.wrapping_add(i.wrapping_mul(delta));
        ((u128::from(g) * u128::from(bits)) >> 64) as u64
    })
}

/// A decoded filter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BloomFilter {
    bits: Vec<u8>,
    k: u8,
}

impl BloomFilter {
    /// Bytes the filter holds in memory.
    pub fn memory_bytes(&self) -> u64 {
        self.bits.capacity() as u64
    }

    /// Decodes a filter; `Err` carries the corruption reason.
    pub fn decode(mut data: Vec<u8>) -> Result<BloomFilter, &'static str> {
        let k = data.pop().ok_or("empty bloom filter")?;
        if data.is_empty() {
            return Err("bloom filter has no bits");
        }
        if k == 0 || k > MAX_PROBES {
            return Err("bad bloom filter probe count");
        }
        Ok(BloomFilter { bits: data, k })
    }

    /// False means `user_key` is certainly absent.
    pub fn may_contain(&self, user_key: &[u8]) -> bool {
        let bits = self.bits.len() as u64 * 8;
        probes(xxh3_64(user_key), self.k, bits)
            .all(|bit| self.bits[(bit / 8) as usize] & (1 << (bit % 8)) != 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn key(i: u32) -> Vec<u8> {
        format!("user-key-{i}").into_bytes()
    }

    fn build(n: u32, bits_per_key: u32) -> BloomFilter {
        let mut b = BloomBuilder::new(bits_per_key);
        for i in 0..n {
            b.add(&key(i));
        }
        BloomFilter::decode(b.finish()).unwrap()
    }

    #[test]
    fn no_false_negatives_and_about_one_percent_false_positives() {
        let f = build(10_000, 10);
        assert!((0..10_000).all(|i| f.may_contain(&key(i))));
        let fp = (10_000..20_000).filter(|&i| f.may_contain(&key(i))).count();
        assert!(fp < 250, "false positive rate {}%", fp as f64 / 100.0);
    }

    #[test]
    fn probe_count_is_clamped() {
        assert_eq!(probe_count(10), 7);
        assert_eq!(probe_count(0), 1);
        assert_eq!(probe_count(1000), MAX_PROBES);
    }

    #[test]
    fn empty_filter_matches_nothing() {
        let f = build(0, 10);
        assert!(!f.may_contain(b"anything"));
    }

    #[test]
    fn bad_encodings_are_rejected() {
        assert!(BloomFilter::decode(vec![]).is_err());
        assert!(BloomFilter::decode(vec![7]).is_err());
        assert!(BloomFilter::decode(vec![0xff, 0]).is_err());
        assert!(BloomFilter::decode(vec![0xff, 31]).is_err());
    }

    proptest! {
        #[test]
        fn decoding_random_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..64), probe in any::<u64>()) {
            if let Ok(f) = BloomFilter::decode(bytes) {
                let _ = f.may_contain(&probe.to_le_bytes());
            }
        }
    }
}
