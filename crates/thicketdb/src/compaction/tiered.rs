//! The `tiered` policy: SifrDB's split MS-forest.
//!
//! Each level holds up to `runs_per_level` runs (SifrDB's growth factor for
//! forests). When a level is full, all its runs are merged into one new run
//! appended to the next level as its newest run; runs already there are not
//! touched. Runs are split into fixed-size tables, and only tables whose key
//! ranges overlap tables of another input run are rewritten: the others join
//! the new run by metadata (split storing), so a sequential load has a write
//! amplification close to 1. The last level merges its own runs into one.
//! Without split storing (`tiered_split_storing=false`) every input table is
//! rewritten: the plain Size-Tiered / stepped merge SifrDB is measured
//! against.
//! With several compaction threads a level may briefly hold more than
//! `runs_per_level` runs: merges from the level above add runs while its
//! own merge runs.

use std::sync::Arc;

use super::busy::{Busy, Claim};
use super::components::split_components;
use super::task::CompactionTask;
use crate::options::Options;
use crate::version::{TableMeta, Version, NUM_LEVELS};

#[derive(Debug)]
pub struct TieredPolicy {
    runs_per_level: usize,
    /// Whether tables overlapping no other input move instead of being
    /// rewritten.
    split_storing: bool,
    /// A merge reading at least this many bytes is journaled (0: never).
    journal_bytes: u64,
}

impl TieredPolicy {
    pub fn new(options: &Options) -> TieredPolicy {
        TieredPolicy {
            runs_per_level: options.runs_per_level.max(2),
            split_storing: options.tiered_split_storing,
            journal_bytes: (options.early_cleaning_threshold as u64)
                .saturating_mul(options.target_table_size),
        }
    }

    /// Bytes of the levels that are full.
    pub fn pending_bytes(&self, version: &Version) -> u64 {
        version
            .levels
            .iter()
            .filter(|l| l.runs.len() >= self.runs_per_level)
            .map(|l| l.bytes())
            .sum()
    }

    /// The deepest full level's merge that `busy` admits, if any level is
    /// full: merging deeper levels first keeps every level below L0 within
    /// `runs_per_level`.
    ///
    /// A merge takes every run of its level, so one merge per level runs at
    /// a time; merges of different levels touch disjoint runs and run
    /// concurrently (each writes a new run, which no reader of the level's
    /// older runs depends on). Their outputs may still not overlap in one
    /// level (see `busy`).
    pub fn pick(&self, version: &Version, busy: &Busy) -> Option<CompactionTask> {
        (0..NUM_LEVELS)
            .rev()
            .filter(|&l| version.levels[l].runs.len() >= self.runs_per_level)
            .find_map(|level| {
                let reason = format!(
                    "L{level} holds {} runs (limit {})",
                    version.levels[level].runs.len(),
                    self.runs_per_level
                );
                self.merge_level(version, level, reason)
                    .filter(|t| busy.admits(&self.claim(t, busy)))
            })
    }

    /// Whether `task` is big enough to be journaled (SifrDB early cleaning).
    pub fn journals(&self, task: &CompactionTask) -> bool {
        self.journal_bytes > 0 && task.merge_bytes() >= self.journal_bytes
    }

    /// What a tiered task holds while it runs. The MANIFEST holds one
    /// journal, so a merge big enough to journal runs unjournaled beside a
    /// journaled one rather than wait: the journal goes to the merge picked
    /// first, the deepest and biggest, and the shallow merges that keep L0
    /// from stalling writes go on meanwhile, releasing their inputs only
    /// when they finish.
    pub fn claim(&self, task: &CompactionTask, busy: &Busy) -> Claim {
        let claim = Claim::of(task, false, busy.order());
        match task.merge_inputs().next() {
            Some(first) if self.journals(task) && !busy.journaling() => {
                claim.journaled(first.level)
            }
            _ => claim,
        }
    }

    /// A manual compaction: the runs of `level` merged into one run of the
    /// next level (of the same level for the last one). The range is not
    /// used: a forest merges whole runs.
    pub fn manual(&self, version: &Version, level: usize) -> Option<CompactionTask> {
        let runs = version.levels[level].runs.len();
        let last = level + 1 == NUM_LEVELS;
        if runs == 0 || (last && runs < 2) {
            return None;
        }
        self.merge_level(version, level, format!("manual compaction of L{level}"))
    }

    /// All runs of `level` into one new run of the next level.
    fn merge_level(
        &self,
        version: &Version,
        level: usize,
        reason: String,
    ) -> Option<CompactionTask> {
        let runs = &version.levels[level].runs;
        if runs.is_empty() {
            return None;
        }
        let items: Vec<(usize, u64, Arc<TableMeta>)> = runs
            .iter()
            .flat_map(|r| r.tables.iter().map(move |t| (level, r.id, t.clone())))
            .collect();
        let (merges, moves) = split_components(items, &version.order, |_, _| self.split_storing);
        Some(CompactionTask {
            merges,
            moves,
            output_level: (level + 1).min(NUM_LEVELS - 1),
            output_run: None,
            reason,
            compact_pointer: None,
            grouped: false,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compaction::busy::Busy;
    use crate::compaction::task::TaskInput;
    use crate::version::meta::tests::version;

    fn ids(inputs: &[TaskInput]) -> Vec<Vec<u64>> {
        inputs
            .iter()
            .map(|i| i.tables.iter().map(|t| t.id).collect())
            .collect()
    }

    fn policy() -> TieredPolicy {
        TieredPolicy::new(&Options {
            runs_per_level: 3,
            ..Options::default()
        })
    }

    /// Every merge reads at least one 100-byte fixture table: journaled.
    fn journaling_policy() -> TieredPolicy {
        TieredPolicy::new(&Options {
            runs_per_level: 3,
            early_cleaning_threshold: 1,
            target_table_size: 100,
            ..Options::default()
        })
    }

    /// (input level, output level) of `n` picks from one version, each
    /// task registered as running before the next pick.
    fn picks_while_running(
        policy: &TieredPolicy,
        v: &Version,
        n: usize,
    ) -> Vec<Option<(usize, usize)>> {
        let mut busy = Busy::default();
        (0..n)
            .map(|_| {
                let task = policy.pick(v, &busy)?;
                busy.insert(policy.claim(&task, &busy));
                let input = task.merge_inputs().chain(task.moves.iter()).next()?;
                Some((input.level, task.output_level))
            })
            .collect()
    }

    /// Three full levels: L0 (runs 10-12), L1 (runs 20-22), L2 (runs 30-32).
    fn three_full_levels() -> Version {
        version(&[
            (0, 10, "a", "c"),
            (0, 11, "b", "d"),
            (0, 12, "c", "e"),
            (1, 20, "a", "c"),
            (1, 21, "b", "d"),
            (1, 22, "c", "e"),
            (2, 30, "m", "n"),
            (2, 31, "m", "o"),
            (2, 32, "n", "p"),
        ])
    }
    #[test]
    fn waits_until_a_level_is_full() {
        let v = version(&[(0, 10, "a", "b"), (0, 11, "c", "d")]);
        assert!(policy().pick(&v, &Busy::default()).is_none());
    }

    #[test]
    fn full_level_becomes_a_new_run_below_rewriting_only_overlaps() {
        let v = version(&[
            (0, 10, "a", "c"),
            (0, 10, "m", "n"),
            (0, 11, "b", "d"),
            (0, 12, "x", "z"),
            (1, 5, "a", "z"),
        ]);
        let task = policy().pick(&v, &Busy::default()).unwrap();
        assert_eq!(task.output_level, 1);
        assert_eq!(task.output_run, None, "a new run; L1's run 5 is untouched");
        assert_eq!(task.merges.len(), 1);
        assert_eq!(
            ids(&task.merges[0]),
            vec![vec![102], vec![100]],
            "newest run first"
        );
        let mut moved: Vec<u64> = task
            .moves
            .iter()
            .flat_map(|m| m.tables.iter().map(|t| t.id))
            .collect();
        moved.sort_unstable();
        assert_eq!(moved, vec![101, 103]);
        assert!(task.all_tables().all(|t| t.id != 104));
    }

    #[test]
    fn without_split_storing_a_merge_rewrites_every_table() {
        let v = version(&[
            (0, 10, "a", "c"),
            (0, 10, "m", "n"),
            (0, 11, "b", "d"),
            (0, 12, "x", "z"),
        ]);
        let size_tiered = TieredPolicy::new(&Options {
            runs_per_level: 3,
            tiered_split_storing: false,
            early_cleaning_threshold: 0,
            ..Options::default()
        });
        let task = size_tiered.pick(&v, &Busy::default()).unwrap();
        assert!(task.moves.is_empty(), "nothing moves by metadata");
        let mut rewritten: Vec<u64> = task.all_tables().map(|t| t.id).collect();
        rewritten.sort_unstable();
        assert_eq!(rewritten, vec![100, 101, 102, 103]);
        assert_eq!(task.merges.len(), 3, "disjoint groups still merge apart");
    }

    #[test]
    fn last_level_merges_into_itself_and_manual_walks_levels() {
        let last = NUM_LEVELS - 1;
        let v = version(&[
            (last, 1, "a", "c"),
            (last, 2, "b", "d"),
            (last, 3, "e", "f"),
        ]);
        let task = policy().pick(&v, &Busy::default()).unwrap();
        assert_eq!(task.output_level, last);
        let one = version(&[(last, 1, "a", "c")]);
        assert!(policy().manual(&one, last).is_none());
        let l2 = version(&[(2, 1, "a", "c")]);
        assert_eq!(policy().manual(&l2, 2).unwrap().output_level, 3);
    }

    #[test]
    fn merges_of_different_levels_run_side_by_side_one_per_level() {
        // Deepest first: L2's merge, then L1's (its new L2 run lies in
        // [a,e], L2's merge writes L3), then L0's into a new L1 run while
        // L1's older runs are merged.
        assert_eq!(
            picks_while_running(&policy(), &three_full_levels(), 4),
            [Some((2, 3)), Some((1, 2)), Some((0, 1)), None]
        );
    }

    #[test]
    fn merges_beside_a_journaled_one_run_unjournaled() {
        let (policy, v) = (journaling_policy(), three_full_levels());
        let mut busy = Busy::default();
        let mut journaled = Vec::new();
        while let Some(task) = policy.pick(&v, &busy) {
            let claim = policy.claim(&task, &busy);
            journaled.push((task.output_level, claim.journaled));
            busy.insert(claim);
        }
        assert_eq!(journaled, [(3, true), (2, false), (1, false)]);
    }

    #[test]
    fn merges_whose_outputs_overlap_in_one_level_wait() {
        let last = NUM_LEVELS - 1;
        // The last level merges into itself over [a,d]; the level above
        // would add a run over [c,e] to it.
        let overlapping = version(&[
            (last - 1, 20, "c", "d"),
            (last - 1, 21, "d", "e"),
            (last - 1, 22, "c", "e"),
            (last, 1, "a", "c"),
            (last, 2, "b", "d"),
            (last, 3, "a", "b"),
        ]);
        assert_eq!(
            picks_while_running(&policy(), &overlapping, 2),
            [Some((last, last)), None]
        );
        let disjoint = version(&[
            (last - 1, 20, "x", "y"),
            (last - 1, 21, "x", "z"),
            (last - 1, 22, "y", "z"),
            (last, 1, "a", "c"),
            (last, 2, "b", "d"),
            (last, 3, "a", "b"),
        ]);
        assert_eq!(
            picks_while_running(&policy(), &disjoint, 2),
            [Some((last, last)), Some((last - 1, last))]
        );
    }
}
