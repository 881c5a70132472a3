//! Whether a merge may drop a deletion: no data older than the task's
//! inputs can hold its user key.

use std::collections::HashSet;

use super::task::CompactionTask;
use crate::format::KeyOrder;
use crate::version::{Run, Version};

/// The runs that may hold data older than a task's inputs, copied out of
/// the version the task was picked from (key ranges only: holding them
/// pins no file, so a journaled merge can still release its inputs).
pub struct Bottommost {
    /// Every run of the deeper levels, and the output level's runs other
    /// than the one the outputs join (a tiered level's older runs).
    older: Vec<Run>,
    /// The task's own tables, which the merge reads anyway.
    inputs: HashSet<u64>,
    order: KeyOrder,
}

impl Bottommost {
    pub fn of(version: &Version, task: &CompactionTask) -> Bottommost {
        let deeper = version.levels[task.output_level + 1..]
            .iter()
            .flat_map(|l| l.runs.iter());
        let siblings = version.levels[task.output_level]
            .runs
            .iter()
            .filter(|r| Some(r.id) != task.output_run);
        Bottommost {
            older: deeper.chain(siblings).cloned().collect(),
            inputs: task.all_tables().map(|t| t.id).collect(),
            order: version.order.clone(),
        }
    }

    /// Whether no table outside the task's inputs overlaps `[start, end]`
    /// (a range tombstone's range, its exclusive end counted in).
    pub fn holds_nothing_older_in(&self, start: &[u8], end: &[u8]) -> bool {
        !self.older.iter().any(|run| {
            run.overlapping(Some(start), Some(end), &self.order)
                .iter()
                .any(|t| !self.inputs.contains(&t.id))
        })
    }

    /// Whether no table outside the task's inputs can hold `user_key`.
    pub fn holds_nothing_older(&self, user_key: &[u8]) -> bool {
        !self.older.iter().any(|run| {
            run.find(user_key, &self.order)
                .is_some_and(|i| !self.inputs.contains(&run.tables[i].id))
        })
    }
}
