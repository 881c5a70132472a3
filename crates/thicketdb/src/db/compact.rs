//! Running a compaction task and committing it, for the compaction
//! threads and for manual `compact_range`; SifrDB's journaled merges with
//! early cleaning.

use std::collections::HashSet;
use std::sync::Arc;

use super::background::{collect_obsolete_files, install, new_file_number};
use super::DbInner;
use crate::compaction::executor::{bottommost_for, ExecContext, Journal};
use crate::compaction::tiered::{interim_run_fits, resume_task};
use crate::compaction::{execute, CompactionTask};
use crate::error::Result;
use crate::stats::Counters;
use crate::version::{MergeJournal, TableMeta, VersionEdit, NUM_LEVELS};

/// How a task uses the merge journal (SifrDB early cleaning).
pub(crate) enum Journaling {
    /// Outputs are committed when the task ends.
    Off,
    /// A fresh journaled merge: its outputs are committed to an interim run
    /// every `early_cleaning_threshold` tables and the inputs they replace
    /// released.
    Fresh,
    /// The rest of a journaled merge interrupted by a crash.
    Resume(MergeJournal),
}

impl Journaling {
    /// What the policy asks for a task of a manual compaction, which runs
    /// alone: a fresh journal for a merge big enough.
    fn for_manual(inner: &DbInner, task: &CompactionTask) -> Journaling {
        if inner.policy.journals(task) {
            Journaling::Fresh
        } else {
            Journaling::Off
        }
    }
}

/// Runs a task and commits it.
pub(crate) fn compact(
    inner: &Arc<DbInner>,
    task: CompactionTask,
    journaling: Journaling,
) -> Result<()> {
    let opts = &inner.options;
    let version = inner.versions.lock().current();
    let numbers = new_file_number(inner);
    let ctx = ExecContext {
        fs: inner.fs.as_ref(),
        dir: &inner.dir,
        table_cache: &inner.table_cache,
        table_options: opts.table_options(),
        target_table_size: opts.target_table_size,
        compaction_file: opts.compaction_file,
        smallest_snapshot: inner.snapshots.oldest(&inner.last_sequence),
        new_file_number: &numbers,
    };
    let mut journal = match journaling {
        Journaling::Off => None,
        Journaling::Fresh => new_journal(inner, &task),
        Journaling::Resume(journal) => {
            Counters::add(&inner.counters.merges_resumed, 1);
            Some(journal)
        }
    };
    let mut released: HashSet<u64> = HashSet::new();
    let executed = match journal.as_mut() {
        None => {
            let bottommost = bottommost_for(&version, &task);
            execute(&task, &bottommost, &ctx, None)?
        }
        Some(j) => {
            // The merge must not pin the inputs it releases as it goes.
            drop(version);
            let resume_after = (!j.resume_after.is_empty()).then(|| j.resume_after.clone());
            let mut checkpoint = |fresh: &[Arc<TableMeta>], last: &[u8]| {
                checkpoint(inner, &task, j, &mut released, fresh, last)
            };
            let never = |_: &[u8]| false;
            execute(
                &task,
                &never,
                &ctx,
                Some(Journal {
                    every: opts.early_cleaning_threshold,
                    resume_after,
                    checkpoint: &mut checkpoint,
                }),
            )?
        }
    };
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
    {
        // Built against the version current now, not the one the task was
        // picked from: tasks that committed since touched none of this
        // task's tables or ranges (their claims said so), and the edit names
        // only this task's inputs, outputs and interim run.
        let mut versions = inner.versions.lock();
        let current = versions.current();
        let output_run = task
            .output_run
            .unwrap_or_else(|| versions.new_file_number());
        let parked = journal.as_ref().and_then(|j| {
            current.levels[j.level]
                .runs
                .iter()
                .find(|r| r.id == j.interim_run)
                .map(|r| (j.level, r.id, r.tables.as_slice()))
        });
        let mut edit = task.final_edit(output_run, &executed.output.tables, &released, parked);
        edit.merge_done = journal.is_some();
        let version = versions.log_and_apply(edit)?;
        install(inner, version, None);
    }
    // Merge inputs are released once no version holds them (see
    // `collect_obsolete_files`); moved tables stay live under their new level.
    Ok(())
}

/// A journal for a fresh journaled merge, unless a run committed since the
/// task was picked keeps it from parking outputs in its level: then the
/// merge runs unjournaled, its outputs going straight below that run.
fn new_journal(inner: &DbInner, task: &CompactionTask) -> Option<MergeJournal> {
    let first = task.merge_inputs().next()?;
    let mut input_runs: Vec<u64> = task
        .merge_inputs()
        .chain(task.moves.iter())
        .map(|i| i.run)
        .collect();
    input_runs.sort_unstable();
    input_runs.dedup();
    // Checked and allocated under one lock: a run committed later gets a
    // higher id, so it sorts above the interim run, as its newer data must.
    let versions = inner.versions.lock();
    if !interim_run_fits(&versions.current(), first.level, &input_runs) {
        return None;
    }
    Some(MergeJournal {
        level: first.level,
        input_runs,
        interim_run: versions.new_file_number(),
        output_level: task.output_level,
        resume_after: Vec::new(),
    })
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
    let mut edit = VersionEdit::default();
    for t in fresh {
        edit.add_table(journal.level, journal.interim_run, t.clone());
    }
    for input in task.merge_inputs() {
        for t in &input.tables {
            if t.largest_user_key() <= last && released.insert(t.id) {
                edit.delete_table(input.level, input.run, t.id);
            }
        }
    }
    journal.resume_after = last.to_vec();
    edit.merge_journal = Some(journal.clone());
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
        for level in 0..NUM_LEVELS - 1 {
            let version = inner.versions.lock().current();
            let Some(deepest) = version.deepest_nonempty_level() else {
                break;
            };
            if level >= deepest.max(1) {
                break;
            }
            if let Some(journal) = version.merge_journal.clone() {
                let task = resume_task(&version, &journal);
                drop(version);
                compact(inner, task, Journaling::Resume(journal))?;
                continue;
            }
            if let Some(task) = inner.policy.manual(&version, level, start, end) {
                drop(version);
                let journaling = Journaling::for_manual(inner, &task);
                compact(inner, task, journaling)?;
            }
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
            inner.background_cv.wait(&mut bg);
        }
        bg.manual_compaction = true;
        while !bg.busy.is_empty() {
            inner.background_cv.wait(&mut bg);
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
