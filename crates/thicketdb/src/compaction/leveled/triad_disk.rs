//! TRIAD-DISK: deferring L0 compaction until L0 and the L1 tables under it
//! share enough keys (TRIAD, Algorithm 2, `deferCompaction`).
//!
//! When L0 reaches `l0_compaction_trigger` runs, the overlap ratio
//! `1 - estimate(union) / sum(estimates)` is computed from the HyperLogLog
//! sketches of every L0 table and, with `triad_overlap_with_l1`, every L1
//! table an L0 table overlaps (the inputs the L0 task would merge, §4.2 and
//! Figure 5 of the paper); without it, of L0's tables alone (Algorithm 2's
//! `deferCompaction`, which reads `getLevelFiles(0)` only). The compaction is
//! deferred while the ratio is below `triad_overlap_threshold` and L0 holds
//! at most `triad_max_l0_files` runs. A table whose sketch is not in memory
//! makes the ratio unknown, and an unknown ratio never defers.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::options::Options;
use crate::table::HyperLogLog;
use crate::version::{TableMeta, Version};

/// The overlap ratio of `tables`, or `None` when a sketch is missing or the
/// tables hold no keys.
pub fn overlap_ratio<'a>(tables: impl IntoIterator<Item = &'a TableMeta>) -> Option<f64> {
    let mut union: Option<HyperLogLog> = None;
    let mut sum = 0.0;
    for t in tables {
        let sketch = t.sketch.get()?;
        sum += sketch.estimate();
        match union.as_mut() {
            Some(u) => u.merge(sketch),
            None => union = Some(HyperLogLog::clone(sketch)),
        }
    }
    let unique = union?.estimate();
    (sum > 0.0).then(|| (1.0 - unique / sum).clamp(0.0, 1.0))
}

/// The tables an L0 compaction would read: every L0 table and the tables
/// of `base`, the level L0 compacts into (L1 unless levels are sized
/// dynamically), under any of them.
pub fn l0_inputs(version: &Version, base: usize) -> Vec<Arc<TableMeta>> {
    let l0: Vec<&Arc<TableMeta>> = version.levels[0]
        .runs
        .iter()
        .flat_map(|r| &r.tables)
        .collect();
    let mut inputs: Vec<Arc<TableMeta>> = l0.iter().map(|t| Arc::clone(t)).collect();
    if let Some(below) = version.levels[base].runs.first() {
        inputs.extend(
            below
                .tables
                .iter()
                .filter(|t| {
                    l0.iter().any(|l0| {
                        t.overlaps(
                            Some(l0.smallest_user_key()),
                            Some(l0.largest_user_key()),
                            &version.order,
                        )
                    })
                })
                .cloned(),
        );
    }
    inputs
}

/// Whether to defer an L0 compaction that is due, and the ratio it saw.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Decision {
    pub defer: bool,
    pub ratio: Option<f64>,
}

/// The deferral rule and what it reports in `stats()`.
#[derive(Debug)]
pub struct TriadDisk {
    threshold: f64,
    max_runs: usize,
    /// Whether the L1 tables under L0 count in the ratio.
    with_l1: bool,
    /// Newest L0 run of the last deferred shape: a shape is counted once,
    /// however often the picker looks at it.
    deferred_shape: Mutex<Option<u64>>,
    deferred: AtomicU64,
    /// `f64::to_bits` of the last ratio computed (NaN before the first).
    last_ratio: AtomicU64,
}

impl TriadDisk {
    /// The rule, when `triad_disk` is on.
    pub fn new(options: &Options) -> Option<TriadDisk> {
        options.triad_disk.then(|| TriadDisk {
            threshold: options.triad_overlap_threshold,
            max_runs: options.triad_max_l0_files,
            with_l1: options.triad_overlap_with_l1,
            deferred_shape: Mutex::new(None),
            deferred: AtomicU64::new(0),
            last_ratio: AtomicU64::new(f64::NAN.to_bits()),
        })
    }

    /// Decides for `version`, whose L0 compaction into `base` is due. Pure:
    /// nothing is counted (`pending_bytes` asks too).
    pub fn decide(&self, version: &Version, base: usize) -> Decision {
        if version.levels[0].runs.len() > self.max_runs {
            return Decision {
                defer: false,
                ratio: None,
            };
        }
        let ratio = if self.with_l1 {
            overlap_ratio(l0_inputs(version, base).iter().map(|t| &**t))
        } else {
            overlap_ratio(
                version.levels[0]
                    .runs
                    .iter()
                    .flat_map(|r| &r.tables)
                    .map(|t| &**t),
            )
        };
        Decision {
            defer: ratio.is_some_and(|r| r < self.threshold),
            ratio,
        }
    }

    /// Records a decision the picker acted on.
    pub fn record(&self, version: &Version, decision: Decision) {
        if let Some(r) = decision.ratio {
            self.last_ratio.store(r.to_bits(), Ordering::Relaxed);
        }
        if decision.defer {
            let newest = version.levels[0].runs.first().map(|r| r.id);
            let mut shape = self.deferred_shape.lock();
            if *shape != newest {
                *shape = newest;
                self.deferred.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// L0 shapes whose compaction was deferred (each flush that left a due
    /// L0 below the threshold counts once).
    pub fn deferred(&self) -> u64 {
        self.deferred.load(Ordering::Relaxed)
    }

    /// The last overlap ratio computed, if any.
    pub fn last_ratio(&self) -> Option<f64> {
        let r = f64::from_bits(self.last_ratio.load(Ordering::Relaxed));
        (!r.is_nan()).then_some(r)
    }
}

#[cfg(test)]
mod tests;
