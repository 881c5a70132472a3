//! Level byte targets and the level L0 compacts into.
//!
//! - Static (LevelDB): L0 compacts into L1, whose target is
//!   `max_bytes_for_level_base` (or `level_base_write_buffers`
//!   memtables); each deeper level's is
//!   `level_size_multiplier` times the one above.
//! - Dynamic (`dynamic_level_bytes`, RocksDB's
//!   `level_compaction_dynamic_level_bytes`): the targets are derived from
//!   the largest level, so the tree holds the multiplier's ratio between
//!   its levels whatever its size. A small store has only its last level
//!   (plus L0): L0 compacts straight into the *base level*, the shallowest
//!   level that is given a target, and the levels above it stay empty. A
//!   static tree writes each key once into every level down to the one
//!   holding the data; a dynamic one skips the empty levels, and its last
//!   level holds ~90% of the data instead of whatever a fixed L1 target
//!   leaves there. The rule is RocksDB's `CalculateBaseBytes`.

use crate::options::Options;
use crate::version::{Version, NUM_LEVELS};

/// Byte targets per level and the level L0 compacts into.
#[derive(Debug, Clone, PartialEq)]
pub struct LevelTargets {
    /// The level L0's compactions write to (1 when static).
    pub base: usize,
    /// The byte target of each level; `u64::MAX` for L0 and for the levels
    /// above the base level (never compacted out of by size).
    pub bytes: [u64; NUM_LEVELS],
}

impl LevelTargets {
    pub fn of(options: &Options, version: &Version) -> LevelTargets {
        let sizes: Vec<u64> = version.levels.iter().map(|l| l.bytes()).collect();
        let l0_runs = version.levels[0].runs.len();
        if options.dynamic_level_bytes {
            dynamic(options, &sizes, l0_runs)
        } else {
            fixed(options)
        }
    }

    /// Whether `level` has a target (it may be compacted into the next).
    pub fn has_target(&self, level: usize) -> bool {
        level >= self.base && level < NUM_LEVELS
    }
}

fn fixed(options: &Options) -> LevelTargets {
    let mult = options.level_size_multiplier.max(1);
    let mut bytes = [u64::MAX; NUM_LEVELS];
    let mut target = options.level_base_bytes();
    for slot in bytes.iter_mut().skip(1) {
        *slot = target;
        target = target.saturating_mul(mult);
    }
    LevelTargets { base: 1, bytes }
}

/// RocksDB's dynamic rule over the levels' sizes (`sizes[0]` is L0's).
fn dynamic(options: &Options, sizes: &[u64], l0_runs: usize) -> LevelTargets {
    let last = NUM_LEVELS - 1;
    let mut bytes = [u64::MAX; NUM_LEVELS];
    let first_non_empty = (1..NUM_LEVELS).find(|&l| sizes[l] > 0);
    let largest = sizes[1..].iter().copied().max().unwrap_or(0);
    let Some(first_non_empty) = first_non_empty else {
        // Nothing below L0 yet: L0 goes straight to the last level, and no
        // level compacts by size.
        return LevelTargets { base: last, bytes };
    };
    let mult = options.level_size_multiplier.max(2);
    let l0 = sizes[0];
    let base_max = options.level_base_bytes().max(l0);
    let base_min = base_max / mult;
    // The first non-empty level's target if the last level's were `largest`.
    let mut size = largest;
    for _ in first_non_empty..last {
        size /= mult;
    }
    let (base, mut base_size) = if size <= base_min {
        // More levels hold data than the multiplier needs: keep them, the
        // first at the smallest base target.
        (first_non_empty, base_min + 1)
    } else {
        let mut base = first_non_empty;
        while base > 1 && size > base_max {
            base -= 1;
            size /= mult;
        }
        (base, size.min(base_max))
    };
    let mut multiplier = mult as f64;
    // A backlogged L0 larger than the base level widens the base level and
    // narrows the ratios below it, rather than letting L0 grow.
    if l0 > base_size
        && (l0 > options.level_base_bytes() || l0_runs / 2 >= options.l0_compaction_trigger)
    {
        base_size = l0;
        multiplier = if base == last {
            1.0
        } else {
            (largest as f64 / base_size as f64).powf(1.0 / (last - base) as f64)
        };
    }
    let mut size = base_size as f64;
    for (level, slot) in bytes.iter_mut().enumerate().skip(base) {
        if level > base {
            size *= multiplier;
        }
        // Never below the base level's ceiling: an hourglass tree would
        // score deep levels above L0 and let L0 stall.
        *slot = (size.min(u64::MAX as f64) as u64).max(base_max);
    }
    LevelTargets { base, bytes }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    fn options(dynamic: bool) -> Options {
        Options {
            dynamic_level_bytes: dynamic,
            max_bytes_for_level_base: 256 * MIB,
            level_size_multiplier: 10,
            l0_compaction_trigger: 4,
            ..Options::default()
        }
    }

    fn sizes(l0: u64, below: &[(usize, u64)]) -> Vec<u64> {
        let mut s = vec![0; NUM_LEVELS];
        s[0] = l0;
        for &(level, bytes) in below {
            s[level] = bytes;
        }
        s
    }

    #[test]
    fn static_targets_start_at_l1_and_grow_by_the_multiplier() {
        let t = fixed(&options(false));
        assert_eq!(t.base, 1);
        assert_eq!(t.bytes[0], u64::MAX);
        assert_eq!(t.bytes[1], 256 * MIB);
        assert_eq!(t.bytes[2], 2560 * MIB);
    }

    #[test]
    fn an_empty_tree_compacts_l0_into_the_last_level() {
        let t = dynamic(&options(true), &sizes(128 * MIB, &[]), 2);
        assert_eq!(t.base, NUM_LEVELS - 1);
        assert!(
            t.bytes.iter().all(|&b| b == u64::MAX),
            "nothing is due by size"
        );
    }

    /// Whether `got` is within 0.1% of `want` (targets below the base
    /// level are products of floats).
    fn near(got: u64, want: u64) -> bool {
        (got as f64 - want as f64).abs() <= want as f64 / 1000.0
    }

    #[test]
    fn a_store_smaller_than_the_base_target_has_only_its_last_level() {
        let t = dynamic(&options(true), &sizes(0, &[(6, 200 * MIB)]), 0);
        assert_eq!(t.base, 6);
        assert_eq!(t.bytes[6], 256 * MIB, "raised to the base ceiling");
        assert!(t.bytes[1..6].iter().all(|&b| b == u64::MAX));
    }

    #[test]
    fn the_base_level_rises_as_the_last_level_grows() {
        // 600 MiB in L6 would give L5 60 MiB: above base_min (25.6 MiB), so
        // L5 becomes the base level (its target raised to 256 MiB).
        let t = dynamic(&options(true), &sizes(0, &[(6, 600 * MIB)]), 0);
        assert_eq!(t.base, 5);
        assert_eq!(t.bytes[5], 256 * MIB);
        // 30 GiB: L5 3 GiB, L4 300 MiB (> 256 MiB), so the base is L3.
        let t = dynamic(&options(true), &sizes(0, &[(6, 30 * 1024 * MIB)]), 0);
        assert_eq!(t.base, 3);
        assert_eq!(t.bytes[3], 256 * MIB, "raised to the base ceiling");
        assert!(near(t.bytes[4], 3072 * MIB / 10));
        assert!(near(t.bytes[5], 3072 * MIB));
        assert!(near(t.bytes[6], 30 * 1024 * MIB));
    }

    #[test]
    fn extra_levels_keep_the_first_non_empty_level_as_base() {
        // L2 and L6 hold data but L6 is small: the multiplier would want
        // fewer levels; the base stays at L2 with the minimum target.
        let t = dynamic(&options(true), &sizes(0, &[(2, MIB), (6, 100 * MIB)]), 0);
        assert_eq!(t.base, 2);
        assert_eq!(t.bytes[2], 256 * MIB, "base_min + 1, raised to the ceiling");
    }

    #[test]
    fn small_memtables_lower_the_base_level_ceiling() {
        // 1 MiB memtables: the ceiling is ten of them, so 116 MiB in L6
        // (the size of a 1M-key fill of 100-byte values) gets L4 as base
        // level (L5's 11.6 MiB is above the ceiling), where the configured
        // 256 MiB ceiling kept L6 as base level: every L0 compaction then
        // rewrote it all.
        let small = Options {
            level_sizing_from_memtable: true,
            write_buffer_size: MIB,
            ..options(true)
        };
        let t = dynamic(&small, &sizes(0, &[(6, 116 * MIB)]), 0);
        assert_eq!(t.base, 4);
        assert_eq!(t.bytes[4], 10 * MIB, "raised to the ceiling");
        assert!(near(t.bytes[5], 116 * MIB / 10));
        assert!(near(t.bytes[6], 116 * MIB));
        let fixed_ceiling = Options {
            level_sizing_from_memtable: false,
            ..small
        };
        let t = dynamic(&fixed_ceiling, &sizes(0, &[(6, 116 * MIB)]), 0);
        assert_eq!(t.base, 6);
    }

    #[test]
    fn a_backlogged_l0_widens_the_base_level() {
        let t = dynamic(
            &options(true),
            &sizes(512 * MIB, &[(5, 100 * MIB), (6, 1000 * MIB)]),
            8,
        );
        assert_eq!(t.base, 5);
        assert_eq!(t.bytes[5], 512 * MIB);
        assert!(
            near(t.bytes[6], 1000 * MIB),
            "the ratio narrows to reach L6"
        );
    }
}
