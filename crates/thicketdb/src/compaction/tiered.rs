//! The `tiered` policy: SifrDB's split MS-forest.
//!
//! Each level holds up to `runs_per_level` runs (SifrDB's growth factor for
//! forests). When a level is full, all its runs are merged into one new run
//! appended to the next level as its newest run; runs already there are not
//! touched. Runs are split into fixed-size tables, and only tables whose key
//! ranges overlap tables of another input run are rewritten: the others join
//! the new run by metadata (split storing), so a sequential load has a write
//! amplification close to 1. The last level merges its own runs into one.
//! With several compaction threads a level may briefly hold more than
//! `runs_per_level` runs: merges from the level above add runs while its
//! own merge runs.

use std::sync::Arc;

use super::busy::{Busy, Claim};
use super::components::split_components;
use super::task::CompactionTask;
use crate::options::Options;
use crate::version::{MergeJournal, TableMeta, Version, NUM_LEVELS};

#[derive(Debug)]
pub struct TieredPolicy {
    runs_per_level: usize,
    /// A merge reading at least this many bytes is journaled (0: never).
    journal_bytes: u64,
}

impl TieredPolicy {
    pub fn new(options: &Options) -> TieredPolicy {
        TieredPolicy {
            runs_per_level: options.runs_per_level.max(2),
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
                merge_level(version, level, reason).filter(|t| busy.admits(&self.claim(t, busy)))
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
        let claim = Claim::of(task, false);
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
        merge_level(version, level, format!("manual compaction of L{level}"))
    }
}

/// Whether a journaled merge of `input_runs` may park its outputs in a run
/// of `level` created now. The interim run shadows the inputs (it holds
/// their merged, newest versions), so its id must sort above theirs and
/// below every run of newer data: no run outside the inputs may already be
/// in the level (a flush or a merge from above that committed after the
/// task was picked), for a run id allocated now sorts above it.
pub fn interim_run_fits(version: &Version, level: usize, input_runs: &[u64]) -> bool {
    version.levels[level]
        .runs
        .iter()
        .all(|r| input_runs.contains(&r.id))
}

/// What a resumed journaled merge holds while it runs.
pub fn resume_claim(task: &CompactionTask, journal: &MergeJournal) -> Claim {
    Claim::of(task, false).journaled(journal.level)
}

/// The rest of a journaled merge interrupted by a crash: what is left of
/// its input runs (merge inputs wholly at or below the resume key were
/// released; tables still there are straddling, unread or moves), merged
/// from the first key above it.
///
/// A straddling table was partly merged: its keys up to the resume key are
/// in the parked outputs already, so it must be merged from there on even
/// when no other table overlaps it any more. Moving it whole would put
/// those keys in the output run twice, in tables that overlap. A table
/// wholly at or below the resume key is one of the original moves (a merge
/// input there would have been released). A move never straddles, because
/// the resume key is a merged key, and a move overlaps no merged table.
pub fn resume_task(version: &Version, journal: &MergeJournal) -> CompactionTask {
    let after = journal.resume_after.as_slice();
    let items: Vec<(usize, u64, Arc<TableMeta>)> = version.levels[journal.level]
        .runs
        .iter()
        .filter(|r| journal.input_runs.contains(&r.id))
        .flat_map(|r| {
            r.tables
                .iter()
                .map(move |t| (journal.level, r.id, t.clone()))
        })
        .collect();
    let straddles = |t: &TableMeta| t.smallest_user_key() <= after && t.largest_user_key() > after;
    let (merges, moves) = split_components(items, |_, t| !straddles(t));
    CompactionTask {
        merges,
        moves,
        output_level: journal.output_level,
        output_run: None,
        reason: format!("resumed merge of L{}", journal.level),
    }
}

/// All runs of `level` into one new run of the next level.
fn merge_level(version: &Version, level: usize, reason: String) -> Option<CompactionTask> {
    let runs = &version.levels[level].runs;
    if runs.is_empty() {
        return None;
    }
    let items: Vec<(usize, u64, Arc<TableMeta>)> = runs
        .iter()
        .flat_map(|r| r.tables.iter().map(move |t| (level, r.id, t.clone())))
        .collect();
    let (merges, moves) = split_components(items, |_, _| true);
    Some(CompactionTask {
        merges,
        moves,
        output_level: (level + 1).min(NUM_LEVELS - 1),
        output_run: None,
        reason,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compaction::busy::Busy;
    use crate::compaction::task::TaskInput;
    use crate::version::meta::tests::table;
    use crate::version::VersionEdit;

    fn version(shape: &[(usize, u64, &str, &str)]) -> Version {
        let mut edit = VersionEdit::default();
        for (i, &(level, run, lo, hi)) in shape.iter().enumerate() {
            edit.add_table(level, run, table(100 + i as u64, lo, hi));
        }
        Version::default().apply(&edit).unwrap()
    }

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

    /// Found by the crash test. Runs 10 and 11 were being merged: tables
    /// [c,e] of run 10 and [d,k] of run 11 together, while [a,b], [m,p] and
    /// [q,r] moved. The merge checkpointed at "f" (releasing [c,e], parking
    /// [c,f] in run 50), then the process died. [d,k] now overlaps no
    /// remaining input, but it is half merged: moving it whole would put
    /// "d".."f" in the output run twice, in overlapping tables.
    #[test]
    fn a_resumed_merge_merges_a_half_read_table_and_moves_untouched_ones() {
        let v = version(&[
            (0, 11, "d", "k"),
            (0, 11, "a", "b"),
            (0, 11, "m", "p"),
            (0, 10, "q", "r"),
            (0, 50, "c", "f"),
        ]);
        let journal = MergeJournal {
            level: 0,
            input_runs: vec![10, 11],
            interim_run: 50,
            output_level: 1,
            resume_after: b"f".to_vec(),
        };
        let task = resume_task(&v, &journal);
        let merged: Vec<Vec<Vec<u64>>> = task.merges.iter().map(|g| ids(g)).collect();
        assert_eq!(merged, vec![vec![vec![100]]], "the half-read table");
        let moved: Vec<u64> = task
            .moves
            .iter()
            .flat_map(|m| m.tables.iter().map(|t| t.id))
            .collect();
        assert_eq!(moved, vec![101, 102, 103], "tables the merge never read");
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

    #[test]
    fn an_interim_run_fits_only_a_level_holding_just_the_inputs() {
        let v = version(&[(0, 10, "a", "c"), (0, 11, "b", "d"), (0, 12, "c", "e")]);
        assert!(interim_run_fits(&v, 0, &[10, 11, 12]));
        // Run 12 was flushed after the merge of runs 10 and 11 was picked:
        // an interim run would shadow its newer data.
        assert!(!interim_run_fits(&v, 0, &[10, 11]));
    }
}
