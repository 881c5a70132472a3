//! Running a compaction task and committing it, for the compaction
//! threads and for manual `compact_range`; SifrDB's journaled merges with
//! early cleaning.

use std::collections::HashSet;
use std::sync::Arc;

use super::background::{collect_obsolete_files, install, new_file_number};
use super::DbInner;
use crate::compaction::executor::{ExecContext, Executed, Journal};
use crate::compaction::journal::{self, Journaling, MergeJournal};
use crate::compaction::{execute, Bottommost, CompactionTask};
use crate::error::{Error, Result};
use crate::stats::Counters;
use crate::version::TableMeta;

/// Runs a task and commits it.
pub(crate) fn compact(
    inner: &Arc<DbInner>,
    task: CompactionTask,
    journaling: Journaling,
) -> Result<()> {
    let mut journal = start_journal(inner, &task, journaling);
    let mut released: HashSet<u64> = HashSet::new();
    let executed = run(inner, &task, journal.as_mut(), &mut released)?;
    count(inner, &task, &executed);
    commit(inner, &task, &executed, journal.as_ref(), &released)
}

/// The journal the task runs under, if any.
fn start_journal(
    inner: &DbInner,
    task: &CompactionTask,
    journaling: Journaling,
) -> Option<MergeJournal> {
    match journaling {
        Journaling::Off => None,
        Journaling::Fresh => {
            // Checked and allocated under one lock: a run committed later
            // gets a higher id, so it sorts above the interim run, as its
            // newer data must.
            let versions = inner.versions.lock();
            journal::fresh(&versions.current(), task, || versions.new_file_number())
        }
        Journaling::Resume(journal) => {
            Counters::add(&inner.counters.merges_resumed, 1);
            Some(journal)
        }
    }
}

/// Merges the task's inputs into output tables; a journaled merge commits
/// checkpoints as it goes, adding the inputs they release to `released`.
fn run(
    inner: &Arc<DbInner>,
    task: &CompactionTask,
    journal: Option<&mut MergeJournal>,
    released: &mut HashSet<u64>,
) -> Result<Executed> {
    let opts = &inner.options;
    let numbers = new_file_number(inner);
    // Copied out of the version: holding the version would pin the inputs
    // a journaled merge releases as it goes.
    let (bottommost, (grandparents, grandparent_limit)) = {
        let version = inner.versions.lock().current();
        (
            Bottommost::of(&version, task),
            inner.policy.grandparents(&version, task),
        )
    };
    let ctx = ExecContext {
        fs: inner.fs.as_ref(),
        dir: &inner.dir,
        table_cache: &inner.table_cache,
        table_options: opts.table_options(),
        target_table_size: opts.target_table_size,
        segment_tables: opts.segment_tables(),
        smallest_snapshot: inner.snapshots.oldest(&inner.last_sequence),
        new_file_number: &numbers,
        grandparents,
        grandparent_limit,
    };
    let Some(j) = journal else {
        return execute(task, &bottommost, &ctx, None);
    };
    let resume_after = (!j.resume_after.is_empty()).then(|| j.resume_after.clone());
    let mut checkpoint =
        |fresh: &[Arc<TableMeta>], last: &[u8]| checkpoint(inner, task, j, released, fresh, last);
    execute(
        task,
        &bottommost,
        &ctx,
        Some(Journal {
            every: opts.early_cleaning_threshold,
            resume_after,
            checkpoint: &mut checkpoint,
        }),
    )
}

fn count(inner: &DbInner, task: &CompactionTask, executed: &Executed) {
    let c = &inner.counters;
    if !task.merges.is_empty() {
        Counters::add(&c.compactions_merge, 1);
    }
    if !task.moves.is_empty() {
        Counters::add(&c.compactions_move, 1);
        Counters::add(
            &c.tables_moved,
            task.moves.iter().map(|m| m.tables.len() as u64).sum(),
        );
    }
    Counters::add(&c.compaction_bytes_read, executed.bytes_read);
    Counters::add(&c.compaction_bytes_written, executed.output.bytes);
    Counters::add(&c.fsyncs_compaction, executed.output.syncs);
    for input in task.merge_inputs() {
        c.level_read(input.level, input.tables.iter().map(|t| t.length).sum());
    }
    c.level_written(task.output_level, executed.output.bytes);
}

/// Swaps the task's inputs for its outputs in one edit. Merge inputs are
/// released once no version holds them (`collect_obsolete_files`); moved
/// tables stay live under their new level.
/// Takes `versions`, then `super_version` through `install`.
fn commit(
    inner: &DbInner,
    task: &CompactionTask,
    executed: &Executed,
    journal: Option<&MergeJournal>,
    released: &HashSet<u64>,
) -> Result<()> {
    // Built against the version current now, not the one the task was
    // picked from: tasks that committed since touched none of this task's
    // tables or ranges (their claims said so), and the edit names only this
    // task's inputs, outputs and interim run.
    let mut versions = inner.versions.lock();
    let current = versions.current();
    let output_run = task
        .output_run
        .unwrap_or_else(|| versions.new_file_number());
    let parked = journal.and_then(|j| journal::parked(&current, j));
    let mut edit = task.final_edit(output_run, &executed.output.tables, released, parked);
    edit.merge_done = journal.is_some();
    if let Some(buffer) = inner.policy.buffer() {
        let change = buffer
            .extend_task_edit(&current, task, &mut edit, || versions.new_file_number())
            .map_err(|why| Error::invariant(format!("buffer edit does not apply: {why}")))?;
        super::buffer::count(inner, change);
    }
    let version = versions.log_and_apply(edit)?;
    install(inner, version, None);
    Ok(())
}

/// Commits a merge checkpoint: the fresh outputs join the interim run, the
/// inputs wholly at or below `last` are released, and the journal records
/// where to resume.
fn checkpoint(
    inner: &DbInner,
    task: &CompactionTask,
    journal: &mut MergeJournal,
    released: &mut HashSet<u64>,
    fresh: &[Arc<TableMeta>],
    last: &[u8],
) -> Result<()> {
    let order = &inner.options.comparator;
    let edit = journal::checkpoint_edit(task, journal, released, fresh, last, order);
    {
        let mut versions = inner.versions.lock();
        let version = versions.log_and_apply(edit)?;
        install(inner, version, None);
    }
    Counters::add(&inner.counters.merge_checkpoints, 1);
    collect_obsolete_files(inner);
    Ok(())
}

/// Manual compaction on the caller's thread. It waits for the running
/// background compactions and keeps new ones from starting until it is
/// done: it walks every level, which no claim could describe more simply.
pub(crate) fn compact_range(
    inner: &Arc<DbInner>,
    start: Option<&[u8]>,
    end: Option<&[u8]>,
) -> Result<()> {
    inner.check_background_error()?;
    let result = (|| -> Result<()> {
        let _exclusive = ExclusiveCompaction::enter(inner);
        inner.check_background_error()?;
        let mut level = 0;
        loop {
            let version = inner.versions.lock().current();
            if level >= inner.policy.manual_end(&version) {
                break;
            }
            // A merge a crash interrupted finishes first; the level it was
            // on is then looked at again.
            if let Some((task, journaling)) = journal::resume(&version) {
                drop(version);
                compact(inner, task, journaling)?;
                continue;
            }
            if let Some(task) = inner.policy.manual(&version, level, start, end) {
                drop(version);
                let journaling = Journaling::for_task(&inner.policy, &task);
                compact(inner, task, journaling)?;
            }
            level += 1;
        }
        Ok(())
    })();
    collect_obsolete_files(inner);
    if let Err(e) = &result {
        super::write::set_background_error(inner, e.clone());
    }
    super::write::wake_background(inner);
    result
}

/// Held by a manual compaction: no background compaction runs meanwhile.
struct ExclusiveCompaction<'a> {
    inner: &'a DbInner,
}

impl<'a> ExclusiveCompaction<'a> {
    /// Waits for other manual compactions, stops new background tasks from
    /// starting, then waits for the running ones to finish.
    fn enter(inner: &'a DbInner) -> ExclusiveCompaction<'a> {
        let mut bg = inner.background.lock();
        while bg.manual_compaction {
            inner.background_cv.wait(bg.raw());
        }
        bg.manual_compaction = true;
        while !bg.busy.is_empty() {
            inner.background_cv.wait(bg.raw());
        }
        ExclusiveCompaction { inner }
    }
}

impl Drop for ExclusiveCompaction<'_> {
    fn drop(&mut self) {
        let mut bg = self.inner.background.lock();
        bg.manual_compaction = false;
        self.inner.background_cv.notify_all();
    }
}
