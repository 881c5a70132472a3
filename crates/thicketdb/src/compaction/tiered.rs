//! The `tiered` policy: SifrDB's split MS-forest.
//!
//! Each level holds up to `runs_per_level` runs (SifrDB's growth factor for
//! forests). When a level is full, all its runs are merged into one new run
//! appended to the next level as its newest run; runs already there are not
//! touched. Runs are split into fixed-size tables, and only tables whose key
//! ranges overlap tables of another input run are rewritten: the others join
//! the new run by metadata (split storing), so a sequential load has a write
//! amplification close to 1. The last level merges its own runs into one.

use std::sync::Arc;

use super::components::split_components;
use super::task::CompactionTask;
use crate::options::Options;
use crate::version::{MergeJournal, TableMeta, Version, NUM_LEVELS};

#[derive(Debug)]
pub struct TieredPolicy {
    runs_per_level: usize,
}

impl TieredPolicy {
    pub fn new(options: &Options) -> TieredPolicy {
        TieredPolicy {
            runs_per_level: options.runs_per_level.max(2),
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

    /// The deepest full level's merge, if any level is full: merging deeper
    /// levels first keeps every level below L0 within `runs_per_level`.
    pub fn pick(&self, version: &Version) -> Option<CompactionTask> {
        let level = (0..NUM_LEVELS)
            .rev()
            .find(|&l| version.levels[l].runs.len() >= self.runs_per_level)?;
        let reason = format!(
            "L{level} holds {} runs (limit {})",
            version.levels[level].runs.len(),
            self.runs_per_level
        );
        merge_level(version, level, reason)
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

/// The rest of a journaled merge interrupted by a crash: what is left of
/// its input runs (merge inputs wholly at or below the resume key were
/// released; tables still there are straddling, unread or moves), merged
/// from the first key above it.
pub fn resume_task(version: &Version, journal: &MergeJournal) -> CompactionTask {
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
    let (merges, moves) = split_components(items, |_| true);
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
    let (merges, moves) = split_components(items, |_| true);
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

    #[test]
    fn waits_until_a_level_is_full() {
        let v = version(&[(0, 10, "a", "b"), (0, 11, "c", "d")]);
        assert!(policy().pick(&v).is_none());
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
        let task = policy().pick(&v).unwrap();
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
        let task = policy().pick(&v).unwrap();
        assert_eq!(task.output_level, last);
        let one = version(&[(last, 1, "a", "c")]);
        assert!(policy().manual(&one, last).is_none());
        let l2 = version(&[(2, 1, "a", "c")]);
        assert_eq!(policy().manual(&l2, 2).unwrap().output_level, 3);
    }
}
