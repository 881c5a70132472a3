//! Runs any compaction task: each merge group is a k-way merge of its
//! inputs that drops what no reader needs; all outputs go to one segment
//! (or one per table without `compaction_file`); moves only change
//! metadata. The result is the edit that swaps inputs for outputs.

use std::path::Path;
use std::sync::Arc;

use super::drop_rule::DropRule;
use super::output::{Output, OutputSink, OutputSpec};
use super::task::CompactionTask;
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
    pub compaction_file: bool,
    pub smallest_snapshot: u64,
    pub new_file_number: &'a dyn Fn() -> u64,
}

/// The outcome of a task, ready to commit.
pub struct Executed {
    pub edit: VersionEdit,
    pub bytes_read: u64,
    pub output: Output,
}

pub fn execute(
    task: &CompactionTask,
    version: &Version,
    ctx: &ExecContext<'_>,
) -> Result<Executed> {
    // Older data may sit deeper, or in other runs of the output level (a
    // tiered level's older runs): a deletion must stay while any could
    // hold its key.
    let deeper = &version.levels[task.output_level + 1..];
    let siblings = version.levels[task.output_level]
        .runs
        .iter()
        .filter(|r| Some(r.id) != task.output_run);
    let inputs: Vec<u64> = task.all_tables().map(|t| t.id).collect();
    let is_bottommost = |ukey: &[u8]| {
        let elsewhere = |run: &crate::version::Run| {
            run.find(ukey)
                .is_some_and(|i| !inputs.contains(&run.tables[i].id))
        };
        deeper.iter().all(|level| !level.runs.iter().any(elsewhere))
            && !siblings.clone().any(elsewhere)
    };
    let mut sink = OutputSink::new(OutputSpec {
        fs: ctx.fs,
        dir: ctx.dir,
        table_options: ctx.table_options.clone(),
        target_table_size: ctx.target_table_size,
        compaction_file: ctx.compaction_file,
        new_file_number: ctx.new_file_number,
    });
    for group in &task.merges {
        let children: Vec<Box<dyn InternalIterator>> = group
            .iter()
            .map(|i| {
                Box::new(RunIterator::new(i.tables.clone(), ctx.table_cache.clone()))
                    as Box<dyn InternalIterator>
            })
            .collect();
        let mut merged = MergingIterator::new(children);
        merged.seek_to_first();
        let mut rule = DropRule::new(ctx.smallest_snapshot, is_bottommost);
        sink.add_stream(&mut merged, &mut |k| rule.keep(k))?;
    }
    let output = sink.finish()?;
    let output_run = task.output_run.unwrap_or_else(ctx.new_file_number);
    let mut edit = task.base_edit(output_run);
    for t in &output.tables {
        edit.add_table(task.output_level, output_run, t.clone());
    }
    Ok(Executed {
        edit,
        bytes_read: task.merge_bytes(),
        output,
    })
}
