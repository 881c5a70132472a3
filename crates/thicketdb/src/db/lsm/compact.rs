//! Running a compaction task and committing it, for the compaction
//! threads and for manual `compact_range`; SifrDB's journaled merges with
//! early cleaning.

use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::background_state::{set_background_error, wake_background};
use super::obsolete::collect_obsolete_files;
use super::super_version::install;
use super::tree::Tree;
use super::DbInner;
use crate::compaction::executor::{ExecContext, Executed, Journal};
use crate::compaction::journal::{self, Journaling, MergeJournal};
use crate::compaction::{execute, Bottommost, CompactionTask};
use crate::error::{Error, Result};
use crate::stats::Counters;
use crate::table::TableOptions;
use crate::version::{TableMeta, Version, VersionSet};

/// Runs a task and commits it.
/// A task of a keyspace dropped meanwhile commits nothing and fails
/// nothing (its inputs may be gone already): its outputs are garbage for
/// open's sweep.
pub(crate) fn compact(
    inner: &Arc<DbInner>,
    tree: &Tree,
    task: CompactionTask,
    journaling: Journaling,
) -> Result<()> {
    let result = (|| {
        let mut journal = start_journal(inner, tree, &task, journaling)?;
        let mut released: HashSet<u64> = HashSet::new();
        let executed = run(inner, tree, &task, journal.as_mut(), &mut released)?;
        count(inner, &task, &executed);
        commit(inner, tree, &task, &executed, journal.as_ref(), &released)
    })();
    match result {
        Err(_) if tree.dropped.load(Ordering::Acquire) => Ok(()),
        other => other,
    }
}

/// The current version of `tree`, or `KeyspaceNotFound` once dropped.
fn current_of(versions: &VersionSet, tree: &Tree) -> Result<Arc<Version>> {
    versions
        .current_of(tree.id)
        .ok_or_else(|| Error::KeyspaceNotFound(tree.name.clone()))
}

/// The journal the task runs under, if any.
fn start_journal(
    inner: &DbInner,
    tree: &Tree,
    task: &CompactionTask,
    journaling: Journaling,
) -> Result<Option<MergeJournal>> {
    Ok(match journaling {
        Journaling::Off => None,
        Journaling::Fresh => {
            // Checked and allocated under one lock: a run committed later
            // gets a higher id, so it sorts above the interim run, as its
            // newer data must.
            let versions = inner.versions.lock();
            journal::fresh(&*current_of(&versions, tree)?, task, || {
                versions.new_file_number()
            })
        }
        Journaling::Resume(journal) => {
            Counters::add(&inner.counters.merges_resumed, 1);
            Some(journal)
        }
    })
}

/// Merges the task's inputs into output tables; a journaled merge commits
/// checkpoints as it goes, adding the inputs they release to `released`.
fn run(
    inner: &Arc<DbInner>,
    tree: &Tree,
    task: &CompactionTask,
    journal: Option<&mut MergeJournal>,
    released: &mut HashSet<u64>,
) -> Result<Executed> {
    let opts = &tree.options;
    let numbers = inner.file_numbers();
    // Copied out of the version: holding the version would pin the inputs
    // a journaled merge releases as it goes.
    let (bottommost, (grandparents, grandparent_limit)) = {
        let version = current_of(&inner.versions.lock(), tree)?;
        (
            Bottommost::of(&version, task),
            tree.policy.grandparents(&version, task),
        )
    };
    let ctx = ExecContext {
        fs: inner.fs.as_ref(),
        dir: &inner.dir,
        table_cache: &inner.table_cache,
        table_options: TableOptions {
            keyspace: tree.id,
            ..opts.table_options()
        },
        target_table_size: opts.target_table_size,
        segment_tables: opts.segment_tables(),
        smallest_snapshot: inner.snapshots.oldest(&inner.last_sequence),
        new_file_number: &numbers,
        grandparents,
        grandparent_limit,
        direct_writes: inner.options.use_direct_io_for_flush_and_compaction,
        stop: Some(&inner.closed),
    };
    let Some(j) = journal else {
        return execute(task, &bottommost, &ctx, None);
    };
    let resume_after = (!j.resume_after.is_empty()).then(|| j.resume_after.clone());
    let mut checkpoint = |fresh: &[Arc<TableMeta>], last: &[u8]| {
        checkpoint(inner, tree, task, j, released, fresh, last)
    };
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
    // LevelDB moves a task's lone victim only; BoLT's settled compaction
    // promotes victims beside others.
    let moved: usize = task.moves.iter().map(|m| m.tables.len()).sum();
    let lone_trivial_move = task.merges.is_empty() && moved == 1;
    if !lone_trivial_move {
        Counters::add(&c.tables_settled, moved as u64);
    }
    if task.grouped {
        Counters::add(&c.compactions_grouped, 1);
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
    tree: &Tree,
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
    let current = current_of(&versions, tree)?;
    let output_run = task
        .output_run
        .unwrap_or_else(|| versions.new_file_number());
    let parked = journal.and_then(|j| journal::parked(&current, j));
    let mut edit = task.final_edit(output_run, &executed.output.tables, released, parked);
    edit.merge_done = journal.is_some();
    edit.keyspace = tree.id;
    if let Some(buffer) = tree.policy.buffer() {
        let change = buffer
            .extend_task_edit(&current, task, &mut edit, || versions.new_file_number())
            .map_err(|why| Error::invariant(format!("buffer edit does not apply: {why}")))?;
        super::lsbm_trim::count(inner, change);
    }
    if let Some(version) = versions.log_and_apply(edit)? {
        install(tree, version, None);
    }
    Ok(())
}

/// Commits a merge checkpoint: the fresh outputs join the interim run, the
/// inputs wholly at or below `last` are released, and the journal records
/// where to resume.
fn checkpoint(
    inner: &DbInner,
    tree: &Tree,
    task: &CompactionTask,
    journal: &mut MergeJournal,
    released: &mut HashSet<u64>,
    fresh: &[Arc<TableMeta>],
    last: &[u8],
) -> Result<()> {
    let order = &tree.options.comparator;
    let mut edit = journal::checkpoint_edit(task, journal, released, fresh, last, order);
    edit.keyspace = tree.id;
    {
        let mut versions = inner.versions.lock();
        if let Some(version) = versions.log_and_apply(edit)? {
            install(tree, version, None);
        }
    }
    Counters::add(&inner.counters.merge_checkpoints, 1);
    crate::db::whitebox::crash_point("merge_checkpoint");
    collect_obsolete_files(inner);
    Ok(())
}

/// Manual compaction on the caller's thread. It waits for the running
/// background compactions and keeps new ones from starting until it is
/// done: it walks every level, which no claim could describe more simply.
pub(crate) fn compact_range(
    inner: &Arc<DbInner>,
    tree: &Tree,
    start: Option<&[u8]>,
    end: Option<&[u8]>,
) -> Result<()> {
    inner.check_background_error()?;
    let result = (|| -> Result<()> {
        let _exclusive = ExclusiveCompaction::enter(inner);
        inner.check_background_error()?;
        let mut level = 0;
        loop {
            let version = current_of(&inner.versions.lock(), tree)?;
            if level >= tree.policy.manual_end(&version) {
                break;
            }
            // A merge a crash interrupted finishes first; the level it was
            // on is then looked at again.
            if let Some((task, journaling)) = journal::resume(&version) {
                drop(version);
                compact(inner, tree, task, journaling)?;
                continue;
            }
            if let Some(task) = tree.policy.manual(&version, level, start, end) {
                drop(version);
                let journaling = Journaling::for_task(&tree.policy, &task);
                compact(inner, tree, task, journaling)?;
            }
            level += 1;
        }
        Ok(())
    })();
    collect_obsolete_files(inner);
    let result = match result {
        // Dropped meanwhile: nothing is left to compact, and the store is fine.
        Err(_) if tree.dropped.load(Ordering::Acquire) => tree.check_live(),
        Err(e) => {
            set_background_error(inner, e.clone());
            Err(e)
        }
        ok => ok,
    };
    wake_background(inner);
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
        while !bg.idle() {
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
