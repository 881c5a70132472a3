//! Runs a compaction task: k-way merge of the inputs, dropping what no
//! reader needs, output into one segment synced once, and the edit that
//! swaps inputs for outputs.

use std::path::Path;
use std::sync::Arc;

use super::drop_rule::DropRule;
use super::output::{write_tables, OutputSpec};
use super::pick::CompactionTask;
use crate::error::Result;
use crate::io::FileSystem;
use crate::iterator::{InternalIterator, MergingIterator};
use crate::run_iter::RunIterator;
use crate::table::TableOptions;
use crate::table_cache::TableCache;
use crate::version::{Version, VersionEdit};

/// What the executor needs from the engine.
pub struct ExecContext<'a> {
    pub fs: &'a dyn FileSystem,
    pub dir: &'a Path,
    pub table_cache: &'a Arc<TableCache>,
    pub table_options: TableOptions,
    pub target_table_size: u64,
    pub smallest_snapshot: u64,
    pub new_file_number: &'a dyn Fn() -> u64,
}

/// The outcome of a task, ready to commit.
pub struct Executed {
    pub edit: VersionEdit,
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub segment: Option<u64>,
}

pub fn execute(
    task: &CompactionTask,
    version: &Version,
    ctx: &ExecContext<'_>,
) -> Result<Executed> {
    let children: Vec<Box<dyn InternalIterator>> = task
        .inputs
        .iter()
        .map(|i| {
            Box::new(RunIterator::new(i.tables.clone(), ctx.table_cache.clone()))
                as Box<dyn InternalIterator>
        })
        .collect();
    let mut merged = MergingIterator::new(children);
    merged.seek_to_first();
    let deeper = &version.levels[task.output_level + 1..];
    let mut rule = DropRule::new(ctx.smallest_snapshot, |ukey: &[u8]| {
        deeper
            .iter()
            .all(|level| level.runs.iter().all(|run| run.find(ukey).is_none()))
    });
    let segment = (ctx.new_file_number)();
    let spec = OutputSpec {
        fs: ctx.fs,
        dir: ctx.dir,
        segment,
        table_options: ctx.table_options.clone(),
        target_table_size: ctx.target_table_size,
        new_table_id: ctx.new_file_number,
    };
    let output = write_tables(&spec, &mut merged, &mut |k| rule.keep(k))?;
    let output_run = task.output_run.unwrap_or_else(ctx.new_file_number);
    let mut edit = VersionEdit::default();
    for input in &task.inputs {
        for t in &input.tables {
            edit.delete_table(input.level, input.run, t.id);
        }
    }
    for t in &output.tables {
        edit.add_table(task.output_level, output_run, t.clone());
    }
    Ok(Executed {
        edit,
        bytes_read: task.input_bytes(),
        bytes_written: output.segment_bytes,
        segment: (!output.tables.is_empty()).then_some(segment),
    })
}
