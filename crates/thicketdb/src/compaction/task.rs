//! A compaction task: what to merge, what to move, and where it goes.

use std::collections::HashSet;
use std::sync::Arc;

use crate::version::{TableMeta, VersionEdit};

/// Tables taken from one run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskInput {
    pub level: usize,
    pub run: u64,
    pub tables: Vec<Arc<TableMeta>>,
}

/// A set of merges and metadata-only moves into one run of `output_level`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompactionTask {
    /// Groups merged independently; their key ranges are disjoint, so their
    /// outputs (written to one segment) never overlap each other. Inside a
    /// group, inputs are ordered newest run first.
    pub merges: Vec<Vec<TaskInput>>,
    /// Tables promoted to the output level by metadata only (no overlap
    /// there): BoLT's settled compaction, LevelDB's trivial move.
    pub moves: Vec<TaskInput>,
    pub output_level: usize,
    /// The run the outputs join; `None` starts a new run.
    pub output_run: Option<u64>,
    /// Why this task was picked (for logs and tests).
    pub reason: String,
    /// LevelDB's round-robin compaction pointer this task advanced
    /// (level, largest internal key taken), recorded by its edit so that
    /// the round robin resumes where it was after a reopen.
    pub compact_pointer: Option<(usize, Vec<u8>)>,
    /// BoLT's group compaction picked more than one victim of the input
    /// level by its byte budget (LevelDB picks one; its input expansion and
    /// an L0 pick take more, but are not groups).
    pub grouped: bool,
}

impl CompactionTask {
    /// Every input of the merges.
    pub fn merge_inputs(&self) -> impl Iterator<Item = &TaskInput> {
        self.merges.iter().flatten()
    }

    /// Bytes the merges read.
    pub fn merge_bytes(&self) -> u64 {
        self.merge_inputs()
            .flat_map(|i| i.tables.iter())
            .map(|t| t.length)
            .sum()
    }

    /// Every table the task takes out of its place.
    pub fn all_tables(&self) -> impl Iterator<Item = &Arc<TableMeta>> {
        self.merge_inputs()
            .chain(self.moves.iter())
            .flat_map(|i| i.tables.iter())
    }

    /// The edit that completes the task: inputs not already `released`
    /// are deleted, moved tables and `outputs` join `output_run`, and so do
    /// the outputs a journaled merge parked in `interim` (level, run, tables).
    pub fn final_edit(
        &self,
        output_run: u64,
        outputs: &[Arc<TableMeta>],
        released: &HashSet<u64>,
        interim: Option<(usize, u64, &[Arc<TableMeta>])>,
    ) -> VersionEdit {
        let mut edit = VersionEdit::default();
        for input in self.merge_inputs().chain(self.moves.iter()) {
            for t in input.tables.iter().filter(|t| !released.contains(&t.id)) {
                edit.delete_table(input.level, input.run, t.id);
            }
        }
        for input in &self.moves {
            for t in &input.tables {
                edit.add_table(self.output_level, output_run, t.clone());
            }
        }
        if let Some((level, run, parked)) = interim {
            for t in parked {
                edit.delete_table(level, run, t.id);
                edit.add_table(self.output_level, output_run, t.clone());
            }
        }
        let parked_ids: HashSet<u64> = interim
            .map(|(_, _, parked)| parked.iter().map(|t| t.id).collect())
            .unwrap_or_default();
        for t in outputs.iter().filter(|t| !parked_ids.contains(&t.id)) {
            edit.add_table(self.output_level, output_run, t.clone());
        }
        edit.compact_pointers.extend(self.compact_pointer.clone());
        edit
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::version::meta::tests::table;
    use crate::version::Version;

    fn input(level: usize, run: u64, tables: &[&Arc<TableMeta>]) -> TaskInput {
        TaskInput {
            level,
            run,
            tables: tables.iter().map(|&t| t.clone()).collect(),
        }
    }

    fn ids(v: &Version, level: usize) -> Vec<u64> {
        v.levels[level].runs[0]
            .tables
            .iter()
            .map(|t| t.id)
            .collect()
    }

    #[test]
    fn tasks_picked_from_one_version_commit_in_either_order() {
        let (l1_ac, l1_mp) = (table(1, "a", "c"), table(2, "m", "p"));
        let (l2_ab, l2_nn) = (table(3, "a", "b"), table(4, "n", "n"));
        let mut base = VersionEdit::default();
        for (level, run, t) in [
            (1, 10, &l1_ac),
            (1, 10, &l1_mp),
            (2, 20, &l2_ab),
            (2, 20, &l2_nn),
        ] {
            base.add_table(level, run, t.clone());
        }
        let picked_from = Version::default().apply(&base).unwrap();
        let task = |victim, under| CompactionTask {
            merges: vec![vec![input(1, 10, &[victim]), input(2, 20, &[under])]],
            moves: Vec::new(),
            output_level: 2,
            output_run: Some(20),
            reason: String::new(),
            compact_pointer: None,
            grouped: false,
        };
        let left =
            task(&l1_ac, &l2_ab).final_edit(20, &[table(5, "a", "c")], &HashSet::new(), None);
        let right =
            task(&l1_mp, &l2_nn).final_edit(20, &[table(6, "m", "p")], &HashSet::new(), None);
        let one_way = picked_from.apply(&left).unwrap().apply(&right).unwrap();
        let other_way = picked_from.apply(&right).unwrap().apply(&left).unwrap();
        assert_eq!(one_way, other_way);
        assert!(one_way.levels[1].runs.is_empty(), "both victims left L1");
        assert_eq!(
            ids(&one_way, 2),
            [5, 6],
            "each output replaced its own inputs"
        );
    }
}
