//! Key-choosing generators, after YCSB's (`site.ycsb.generator`):
//! `ZipfianGenerator` (Gray et al., "Quickly Generating Billion-Record
//! Synthetic Databases", SIGMOD 1994), `ScrambledZipfianGenerator` (FNV-1a
//! scattering of a Zipfian over 10^10 items), `SkewedLatestGenerator` and
//! `HotspotIntegerGenerator`. The formulas and constants are YCSB's; only the
//! uniform source is ours (splitmix64, seeded, so every engine sees the same
//! sequence).

use crate::permutation::SplitMix64;

/// YCSB's default Zipfian constant.
pub const ZIPFIAN_CONSTANT: f64 = 0.99;
/// `ScrambledZipfianGenerator.ITEM_COUNT`.
pub const SCRAMBLED_ITEM_COUNT: u64 = 10_000_000_000;
/// `ScrambledZipfianGenerator.ZETAN`: zeta(ITEM_COUNT, 0.99), precomputed.
pub const SCRAMBLED_ZETAN: f64 = 26.469_028_201_783_02;

/// A seeded source of uniform numbers.
pub struct Rng(SplitMix64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(SplitMix64::new(seed))
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// Uniform in `[0, 1)` with 53 bits.
    pub fn next_f64(&mut self) -> f64 {
        (self.0.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in `0..bound` (`bound > 0`).
    pub fn below(&mut self, bound: u64) -> u64 {
        self.0.below(bound)
    }
}

/// YCSB's `Utils.fnvhash64`: FNV-1a over the 8 little-endian bytes of
/// `val`, then `Math.abs`.
pub fn fnvhash64(val: u64) -> u64 {
    const OFFSET_BASIS: u64 = 0xCBF2_9CE4_8422_2325;
    const PRIME: u64 = 1_099_511_628_211;
    let mut val = val;
    let mut hash = OFFSET_BASIS;
    for _ in 0..8 {
        hash ^= val & 0xff;
        hash = hash.wrapping_mul(PRIME);
        val >>= 8;
    }
    (hash as i64).unsigned_abs()
}

/// `ZipfianGenerator.zetastatic`: sum of `1 / (i+1)^theta` for `i` in
/// `st..n`, added to `initial`.
pub fn zeta(st: u64, n: u64, theta: f64, initial: f64) -> f64 {
    (st..n).fold(initial, |sum, i| sum + 1.0 / ((i + 1) as f64).powf(theta))
}

/// Items `base..base+items`; `base` is the most popular, then `base + 1`...
#[derive(Debug, Clone)]
pub struct Zipfian {
    items: u64,
    base: u64,
    theta: f64,
    alpha: f64,
    zetan: f64,
    eta: f64,
    zeta2theta: f64,
    count_for_zeta: u64,
}

impl Zipfian {
    /// Items `0..items` with constant `theta`.
    pub fn new(items: u64, theta: f64) -> Zipfian {
        Zipfian::with_zetan(0, items - 1, theta, zeta(0, items, theta, 0.0))
    }

    /// Items `min..=max` with a precomputed `zetan`.
    pub fn with_zetan(min: u64, max: u64, theta: f64, zetan: f64) -> Zipfian {
        let items = max - min + 1;
        let zeta2theta = zeta(0, 2, theta, 0.0);
        Zipfian {
            items,
            base: min,
            theta,
            alpha: 1.0 / (1.0 - theta),
            zetan,
            eta: (1.0 - (2.0 / items as f64).powf(1.0 - theta)) / (1.0 - zeta2theta / zetan),
            zeta2theta,
            count_for_zeta: items,
        }
    }

    /// `nextLong(itemcount)`. A larger `itemcount` than last time extends
    /// zeta incrementally; like YCSB (`allowitemcountdecrease = false`), a
    /// smaller one keeps the old zeta, and eta keeps the constructor's item
    /// count.
    pub fn next_long(&mut self, itemcount: u64, rng: &mut Rng) -> u64 {
        if itemcount > self.count_for_zeta {
            self.zetan = zeta(self.count_for_zeta, itemcount, self.theta, self.zetan);
            self.count_for_zeta = itemcount;
            self.eta = (1.0 - (2.0 / self.items as f64).powf(1.0 - self.theta))
                / (1.0 - self.zeta2theta / self.zetan);
        }
        let u = rng.next_f64();
        let uz = u * self.zetan;
        if uz < 1.0 {
            return self.base;
        }
        if uz < 1.0 + 0.5f64.powf(self.theta) {
            return self.base + 1;
        }
        self.base + (itemcount as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as u64
    }

    pub fn next(&mut self, rng: &mut Rng) -> u64 {
        self.next_long(self.items, rng)
    }
}

/// Zipfian popularity scattered over `min..=max` by `fnvhash64`.
#[derive(Debug, Clone)]
pub struct ScrambledZipfian {
    gen: Zipfian,
    min: u64,
    itemcount: u64,
}

impl ScrambledZipfian {
    pub fn new(min: u64, max: u64) -> ScrambledZipfian {
        ScrambledZipfian {
            gen: Zipfian::with_zetan(0, SCRAMBLED_ITEM_COUNT, ZIPFIAN_CONSTANT, SCRAMBLED_ZETAN),
            min,
            itemcount: max - min + 1,
        }
    }

    pub fn next(&mut self, rng: &mut Rng) -> u64 {
        self.min + fnvhash64(self.gen.next(rng)) % self.itemcount
    }
}

/// Favors the most recently inserted items: `last - zipfian(last)`.
#[derive(Debug, Clone)]
pub struct SkewedLatest {
    zipfian: Zipfian,
}

impl SkewedLatest {
    /// `last`: the basis counter's last value when created (at least 1).
    pub fn new(last: u64) -> SkewedLatest {
        SkewedLatest {
            zipfian: Zipfian::new(last.max(1), ZIPFIAN_CONSTANT),
        }
    }

    /// A number in `0..=last`, `last` being the newest item now.
    pub fn next(&mut self, last: u64, rng: &mut Rng) -> u64 {
        last - self.zipfian.next_long(last.max(1), rng).min(last)
    }
}

/// `hot_op_fraction` of the draws fall uniformly in the lowest
/// `hotset_fraction` of `lower..=upper`, the rest uniformly in the others.
#[derive(Debug, Clone)]
pub struct Hotspot {
    lower: u64,
    hot_interval: u64,
    cold_interval: u64,
    hot_op_fraction: f64,
}

impl Hotspot {
    pub fn new(lower: u64, upper: u64, hotset_fraction: f64, hot_op_fraction: f64) -> Hotspot {
        let interval = upper - lower + 1;
        let hot_interval = ((interval as f64 * hotset_fraction) as u64).clamp(1, interval);
        Hotspot {
            lower,
            hot_interval,
            cold_interval: interval - hot_interval,
            hot_op_fraction,
        }
    }

    pub fn next(&mut self, rng: &mut Rng) -> u64 {
        if self.cold_interval == 0 || rng.next_f64() < self.hot_op_fraction {
            self.lower + rng.below(self.hot_interval)
        } else {
            self.lower + self.hot_interval + rng.below(self.cold_interval)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(n: usize, samples: usize, mut draw: impl FnMut() -> u64) -> Vec<u64> {
        let mut c = vec![0u64; n];
        for _ in 0..samples {
            c[draw() as usize] += 1;
        }
        c
    }

    #[test]
    fn zipfian_frequencies_follow_theory() {
        let (n, samples) = (1000u64, 2_000_000usize);
        for theta in [0.99, 0.8] {
            let mut rng = Rng::new(7);
            let mut z = Zipfian::new(n, theta);
            let c = counts(n as usize, samples, || z.next(&mut rng));
            let zn = zeta(0, n, theta, 0.0);
            // Items 0 and 1 are exact in Gray's method; the tail is an
            // approximation of the same law.
            for (i, tol) in [(0usize, 0.02), (1, 0.03), (2, 0.25), (9, 0.25), (99, 0.25)] {
                let expect = samples as f64 / ((i + 1) as f64).powf(theta) / zn;
                let got = c[i] as f64;
                assert!(
                    (got - expect).abs() / expect < tol,
                    "theta {theta} item {i}: got {got}, expected {expect}"
                );
            }
            // Popularity decreases with rank.
            let head: u64 = c[..10].iter().sum();
            let next: u64 = c[10..20].iter().sum();
            assert!(head > 3 * next, "head {head} next {next}");
        }
    }

    #[test]
    fn zipfian_grows_its_item_count_incrementally() {
        let mut rng = Rng::new(1);
        let mut z = Zipfian::new(100, ZIPFIAN_CONSTANT);
        let mut seen_high = false;
        for _ in 0..100_000 {
            let v = z.next_long(200, &mut rng);
            assert!(v < 200);
            seen_high |= v >= 100;
        }
        assert!(seen_high);
        assert!((z.zetan - zeta(0, 200, ZIPFIAN_CONSTANT, 0.0)).abs() < 1e-9);
    }

    #[test]
    fn fnvhash64_matches_ycsb() {
        // FNV-1a of eight zero bytes, as YCSB computes it.
        let mut h: u64 = 0xCBF2_9CE4_8422_2325;
        for _ in 0..8 {
            h = h.wrapping_mul(1_099_511_628_211);
        }
        assert_eq!(fnvhash64(0), (h as i64).unsigned_abs());
        assert_ne!(fnvhash64(1), fnvhash64(256));
        assert!(fnvhash64(u64::MAX) <= 1 << 63);
    }

    #[test]
    fn scrambled_zipfian_scatters_the_popular_items() {
        let n = 10_000u64;
        let samples = 1_000_000;
        let mut rng = Rng::new(3);
        let mut g = ScrambledZipfian::new(0, n - 1);
        let c = counts(n as usize, samples, || g.next(&mut rng));
        // The hottest item is the image of Zipfian rank 0, with the
        // probability of rank 0 over 10^10 items (plus the few ranks that
        // collide with it modulo n).
        let top = fnvhash64(0) % n;
        let max = *c.iter().max().unwrap();
        assert_eq!(c[top as usize], max);
        let p0 = 1.0 / SCRAMBLED_ZETAN;
        let got = max as f64 / samples as f64;
        assert!(
            got >= p0 * 0.97 && got < p0 * 1.3,
            "top frequency {got}, rank-0 {p0}"
        );
        // The ten hottest items are spread over the range, not clustered.
        let mut idx: Vec<usize> = (0..n as usize).collect();
        idx.sort_by_key(|&i| std::cmp::Reverse(c[i]));
        let mut hot: Vec<usize> = idx[..10].to_vec();
        hot.sort_unstable();
        assert!(hot[9] - hot[0] > n as usize / 2, "hot items {hot:?}");
        assert!(hot.windows(2).all(|w| w[1] - w[0] > 1), "hot items {hot:?}");
        // Skewed: the hottest 1% of items take far more than 1% of draws.
        let head: u64 = idx[..100].iter().map(|&i| c[i]).sum();
        assert!(head as f64 / samples as f64 > 0.2);
    }

    #[test]
    fn skewed_latest_favors_the_newest() {
        let mut rng = Rng::new(5);
        let mut g = SkewedLatest::new(999);
        let mut last = 999;
        let mut newest = 0;
        let samples = 200_000;
        for i in 0..samples {
            if i % 1000 == 0 {
                last += 1; // an insert happened
            }
            let v = g.next(last, &mut rng);
            assert!(v <= last);
            if v == last {
                newest += 1;
            }
        }
        // The newest item is drawn with Zipfian rank-0 probability.
        let p0 = 1.0 / zeta(0, 1000, ZIPFIAN_CONSTANT, 0.0);
        let got = newest as f64 / samples as f64;
        assert!((got - p0).abs() / p0 < 0.1, "newest {got} expected {p0}");
    }

    #[test]
    fn hotspot_sends_the_hot_fraction_of_draws_to_the_hot_set() {
        for (set, ops) in [(0.01, 0.99), (0.2, 0.8)] {
            let mut rng = Rng::new(9);
            let mut g = Hotspot::new(0, 99_999, set, ops);
            let hot_top = (100_000.0 * set) as u64;
            let samples = 500_000;
            let hot = (0..samples).filter(|_| g.next(&mut rng) < hot_top).count();
            let got = hot as f64 / samples as f64;
            assert!((got - ops).abs() < 0.01, "hot share {got} expected {ops}");
        }
    }
}
