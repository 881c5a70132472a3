//! A compaction task: what to merge, what to move, and where it goes.

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

    /// The edit for everything except merge outputs: merge inputs deleted,
    /// moved tables re-homed in `output_run`.
    pub fn base_edit(&self, output_run: u64) -> VersionEdit {
        let mut edit = VersionEdit::default();
        for input in self.merge_inputs().chain(self.moves.iter()) {
            for t in &input.tables {
                edit.delete_table(input.level, input.run, t.id);
            }
        }
        for input in &self.moves {
            for t in &input.tables {
                edit.add_table(self.output_level, output_run, t.clone());
            }
        }
        edit
    }
}
