//! Choosing a compaction task from a version.

use std::sync::Arc;

use crate::options::Options;
use crate::version::{TableMeta, Version};

/// Tables taken from one run.
#[derive(Debug, Clone)]
pub struct TaskInput {
    pub level: usize,
    pub run: u64,
    pub tables: Vec<Arc<TableMeta>>,
}

/// A merge of input tables into one run of `output_level`.
#[derive(Debug, Clone)]
pub struct CompactionTask {
    /// Inputs, newest run first.
    pub inputs: Vec<TaskInput>,
    pub output_level: usize,
    /// The run the outputs join; `None` starts a new run.
    pub output_run: Option<u64>,
    /// Why this task was picked (for logs and tests).
    pub reason: String,
}

impl CompactionTask {
    pub fn input_bytes(&self) -> u64 {
        self.inputs
            .iter()
            .flat_map(|i| i.tables.iter())
            .map(|t| t.length)
            .sum()
    }
}

/// L0 is due for compaction: merge every L0 run with the L1 tables that
/// overlap them.
pub fn pick_l0(version: &Version, options: &Options) -> Option<CompactionTask> {
    let runs = version.levels[0].runs.len();
    if runs < options.l0_compaction_trigger {
        return None;
    }
    Some(l0_to_l1(
        version,
        None,
        None,
        format!(
            "L0 has {runs} runs (trigger {})",
            options.l0_compaction_trigger
        ),
    ))
}

/// A manual compaction of `[start, end]`: all of L0 plus the L1 tables that
/// overlap L0 or the range. `None` when there is nothing to do.
pub fn pick_range(
    version: &Version,
    start: Option<&[u8]>,
    end: Option<&[u8]>,
) -> Option<CompactionTask> {
    let task = l0_to_l1(version, start, end, "manual compaction".to_string());
    (!task.inputs.is_empty()).then_some(task)
}

fn l0_to_l1(
    version: &Version,
    start: Option<&[u8]>,
    end: Option<&[u8]>,
    reason: String,
) -> CompactionTask {
    let mut inputs: Vec<TaskInput> = version.levels[0]
        .runs
        .iter()
        .map(|r| TaskInput {
            level: 0,
            run: r.id,
            tables: r.tables.clone(),
        })
        .collect();
    let l0_tables = || inputs.iter().flat_map(|i| i.tables.iter());
    let lo = l0_tables().map(|t| t.smallest_user_key()).min();
    let hi = l0_tables().map(|t| t.largest_user_key()).max();
    let l1 = version.levels[1].runs.first();
    let mut l1_tables: Vec<Arc<TableMeta>> = Vec::new();
    if let Some(run) = l1 {
        for t in &run.tables {
            let under_l0 = lo.is_some() && t.overlaps(lo, hi);
            let in_range =
                (start.is_some() || end.is_some() || lo.is_none()) && t.overlaps(start, end);
            if under_l0 || in_range {
                l1_tables.push(t.clone());
            }
        }
    }
    let output_run = l1.map(|r| r.id);
    if let (Some(run), false) = (output_run, l1_tables.is_empty()) {
        inputs.push(TaskInput {
            level: 1,
            run,
            tables: l1_tables,
        });
    }
    CompactionTask {
        inputs,
        output_level: 1,
        output_run,
        reason,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::version::meta::tests::table;
    use crate::version::VersionEdit;

    fn version(l0: &[(&str, &str)], l1: &[(&str, &str)]) -> Version {
        let mut e = VersionEdit::default();
        let mut id = 100;
        for (i, (lo, hi)) in l0.iter().enumerate() {
            id += 1;
            e.add_table(0, 10 + i as u64, table(id, lo, hi));
        }
        for (lo, hi) in l1 {
            id += 1;
            e.add_table(1, 1, table(id, lo, hi));
        }
        Version::default().apply(&e).unwrap()
    }

    #[test]
    fn l0_trigger_and_overlap_selection() {
        let v = version(
            &[("c", "e"), ("d", "f")],
            &[("a", "b"), ("c", "d"), ("f", "h"), ("x", "z")],
        );
        let mut o = Options {
            l0_compaction_trigger: 3,
            ..Options::default()
        };
        assert!(pick_l0(&v, &o).is_none());
        o.l0_compaction_trigger = 2;
        let t = pick_l0(&v, &o).unwrap();
        assert_eq!(t.inputs.len(), 3);
        assert_eq!(t.inputs[0].run, 11, "newest L0 run first");
        let l1: Vec<u64> = t.inputs[2].tables.iter().map(|t| t.id).collect();
        assert_eq!(l1, vec![104, 105], "only L1 tables overlapping c..f");
        assert_eq!(t.output_run, Some(1));
    }

    #[test]
    fn manual_range_takes_l1_tables_in_range() {
        let v = version(&[], &[("a", "b"), ("c", "d"), ("x", "z")]);
        let t = pick_range(&v, Some(b"b"), Some(b"c")).unwrap();
        let ids: Vec<u64> = t.inputs[0].tables.iter().map(|t| t.id).collect();
        assert_eq!(ids, vec![101, 102]);
        assert!(pick_range(&Version::default(), None, None).is_none());
    }
}
