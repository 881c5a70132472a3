//! Runs any compaction task: each merge group is a k-way merge of its
//! inputs that drops what no reader needs; all outputs go to one segment
//! (or one per table without `compaction_file`); moves only change
//! metadata. The result is the edit that swaps inputs for outputs.

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use super::bottommost::Bottommost;
use super::drop_rule::{surviving_range_deletions, DropRule};
use super::grandparents::GrandparentCut;
use super::output::{Output, OutputSink, OutputSpec};
use super::task::{CompactionTask, TaskInput};
use crate::error::Result;
use crate::format::internal_key::{user_key, InternalKey, ValueKind};
use crate::format::range_tombstone::{successor, Fragments};
use crate::io::FileSystem;
use crate::iterator::{InternalIterator, MergingIterator};
use crate::table::TableOptions;
use crate::version::log_prefetch::{prepare, PreparedTables};
use crate::version::run_iter::RunIterator;
use crate::version::table_cache::TableCache;
use crate::version::TableMeta;

/// What the executor needs from the engine.
pub struct ExecContext<'a> {
    pub fs: &'a dyn FileSystem,
    pub dir: &'a Path,
    pub table_cache: &'a Arc<TableCache>,
    pub table_options: TableOptions,
    pub target_table_size: u64,
    /// Tables per output segment (`Options::segment_tables`).
    pub segment_tables: usize,
    pub smallest_snapshot: u64,
    pub new_file_number: &'a dyn Fn() -> u64,
    /// The level below the output and the overlap with it at which an
    /// output table is cut (LevelDB's grandparent cut; limit 0: none).
    pub grandparents: Vec<Arc<TableMeta>>,
    pub grandparent_limit: u64,
    /// Output segments bypass the page cache
    /// (`use_direct_io_for_flush_and_compaction`).
    pub direct_writes: bool,
    /// Set when the store closes: the merge stops (`OutputSpec::stop`).
    pub stop: Option<&'a AtomicBool>,
}

/// Commits the outputs persisted since the last checkpoint; the key is the
/// largest user key they cover.
pub type CheckpointFn<'a> = dyn FnMut(&[Arc<TableMeta>], &[u8]) -> Result<()> + 'a;

/// A journaled merge (SifrDB early cleaning): every `every` output tables
/// the outputs are made durable and handed to `checkpoint` with the largest
/// user key they cover, so the caller can commit them and release the
/// inputs they replace.
pub struct Journal<'a> {
    pub every: usize,
    /// Resume a merge interrupted by a crash: skip input keys up to here.
    pub resume_after: Option<Vec<u8>>,
    pub checkpoint: &'a mut CheckpointFn<'a>,
}

/// The outcome of a task: its outputs, ready to commit with
/// `CompactionTask::final_edit`.
pub struct Executed {
    pub bytes_read: u64,
    pub output: Output,
}

/// The values of `group`'s log tables (TRIAD-LOG), each log they address
/// read once before the merge, `triad_log_compaction_batch` of them held in
/// memory and the rest spilled to a scratch file (`version/log_prefetch.rs`),
/// none of those the merge drops; `None` without log tables, or with a
/// batch of 0 (one read per value).
fn prepare_log_values(
    group: &[TaskInput],
    ctx: &ExecContext<'_>,
) -> Result<Option<Arc<PreparedTables>>> {
    let budget = ctx.table_cache.logs().batch_bytes();
    let log_tables: Vec<&Arc<TableMeta>> = group
        .iter()
        .flat_map(|i| &i.tables)
        .filter(|t| t.is_log_table())
        .collect();
    if budget == 0 || log_tables.is_empty() {
        return Ok(None);
    }
    let logs = ctx.table_cache.logs();
    prepare(
        logs,
        ctx.table_cache,
        &log_tables,
        &ctx.table_options.order,
        ctx.smallest_snapshot,
        budget,
        ctx.new_file_number,
    )
    .map(Some)
}

/// Runs `task`. `bottommost` says whether no data older than the task's
/// inputs can hold a key (so its deletion may be dropped). With a journal
/// too: readers ignore the inputs' keys at or below the last checkpoint
/// (`Version::superseded_through`), so an input a checkpoint leaves in
/// place cannot bring back a version whose deletion the merge dropped.
pub fn execute(
    task: &CompactionTask,
    bottommost: &Bottommost,
    ctx: &ExecContext<'_>,
    mut journal: Option<Journal<'_>>,
) -> Result<Executed> {
    let mut sink = OutputSink::new(OutputSpec {
        fs: ctx.fs,
        dir: ctx.dir,
        table_options: ctx.table_options.clone(),
        target_table_size: ctx.target_table_size,
        segment_tables: ctx.segment_tables,
        new_file_number: ctx.new_file_number,
        direct_writes: ctx.direct_writes,
        stop: ctx.stop,
    })
    .with_cut(GrandparentCut::new(
        ctx.grandparents.clone(),
        ctx.grandparent_limit,
        ctx.table_options.order.clone(),
    ));
    let mut committed = 0;
    for group in &task.merges {
        // Served from `prepared`; a value missing there (none should be)
        // is read from its log alone.
        let prepared = prepare_log_values(group, ctx)?;
        let children: Vec<Box<dyn InternalIterator>> = group
            .iter()
            .map(|i| {
                // A compaction reads each input block once: keeping them
                // would evict the blocks readers use.
                Box::new(RunIterator::for_compaction(
                    i.tables.clone(),
                    ctx.table_cache.clone(),
                    prepared.clone(),
                )) as Box<dyn InternalIterator>
            })
            .collect();
        let mut merged = MergingIterator::new(children, ctx.table_options.order.clone());
        let resume_after = journal.as_ref().and_then(|j| j.resume_after.as_deref());
        let range_dels = group_range_deletions(group.iter().flat_map(|i| &i.tables), ctx)?;
        sink.set_range_deletions(
            surviving_range_deletions(range_dels.clone(), ctx.smallest_snapshot, |start, end| {
                bottommost.holds_nothing_older_in(start, end)
            }),
            resume_after.map(successor),
        );
        match resume_after {
            Some(after) => {
                merged.seek(InternalKey::new(after, 0, ValueKind::Deletion).encoded());
                while merged.valid() && ctx.table_options.order.le(user_key(merged.key()), after) {
                    merged.next();
                }
                merged.status()?;
            }
            None => merged.seek_to_first(),
        }
        let mut rule = DropRule::new(ctx.smallest_snapshot, |user_key: &[u8]| {
            bottommost.holds_nothing_older(user_key)
        })
        .with_range_deletions(range_dels);
        let Some(j) = journal.as_mut() else {
            sink.add_stream(&mut merged, &mut |k| rule.keep(k))?;
            continue;
        };
        // A group of tombstones alone has no entry but still has tables.
        while merged.valid() || sink.has_pending_range_deletions() {
            let room = j
                .every
                .saturating_sub(sink.tables().len() - committed)
                .max(1);
            sink.add_stream_until(&mut merged, &mut |k| rule.keep(k), room)?;
            // Groups (and their tables) are in key order, so a checkpoint
            // between groups is as good as one inside a group.
            if sink.tables().len() - committed >= j.every {
                sink.checkpoint()?;
                let fresh = &sink.tables()[committed..];
                let last = fresh.last().expect("a checkpoint follows new tables");
                (j.checkpoint)(fresh, last.largest_user_key())?;
                committed = sink.tables().len();
            }
        }
    }
    Ok(Executed {
        bytes_read: task.merge_bytes(),
        output: sink.finish()?,
    })
}

/// The range tombstones of a merge group's input tables, fragmented
/// together (tables without any are skipped after one look at the open
/// table, which the merge reads anyway).
fn group_range_deletions<'t>(
    tables: impl Iterator<Item = &'t Arc<TableMeta>>,
    ctx: &ExecContext<'_>,
) -> Result<Fragments> {
    let mut all = Vec::new();
    for meta in tables {
        let table = ctx.table_cache.table(meta)?;
        all.extend(table.range_deletions().tombstones());
    }
    Ok(Fragments::fragment(&all))
}
