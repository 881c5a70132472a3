//! SifrDB's compaction journal (early cleaning): a long tiered merge
//! commits its outputs to an interim run every `early_cleaning_threshold`
//! tables and releases the inputs they replace, recording in the MANIFEST
//! (`MergeJournal`) where to resume after a crash. Everything the engine
//! does with the journal is decided here; `db` only commits the edits.

use std::collections::HashSet;
use std::sync::Arc;

use super::busy::{Busy, Claim};
use super::components::split_components;
use super::task::CompactionTask;
use super::Policy;
use crate::format::KeyOrder;
use crate::version::{TableMeta, Version, VersionEdit};

pub use crate::version::MergeJournal;

/// How a task uses the journal.
pub enum Journaling {
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
    /// How a task the policy picked journals.
    pub fn for_task(policy: &Policy, task: &CompactionTask) -> Journaling {
        if policy.journals(task) {
            Journaling::Fresh
        } else {
            Journaling::Off
        }
    }
}

/// An interrupted merge in `version`, before anything else is picked.
pub enum Pending {
    /// No journaled merge is pending, or one runs already.
    None,
    /// One is pending but a running task holds part of it: pick nothing.
    Blocked,
    /// The rest of the merge, ready to run under this claim.
    Ready(Box<(CompactionTask, Journaling, Claim)>),
}

/// What resuming the journal of `version` needs, beside `busy`'s tasks.
pub fn pending(version: &Version, busy: &Busy) -> Pending {
    let Some(journal) = &version.merge_journal else {
        return Pending::None;
    };
    if busy.journaling() {
        return Pending::None;
    }
    let task = resume_task(version, journal);
    let claim = Claim::of(&task, false, busy.order()).journaled(journal.level);
    if !busy.admits(&claim) {
        return Pending::Blocked;
    }
    Pending::Ready(Box::new((task, Journaling::Resume(journal.clone()), claim)))
}

/// The task that finishes `version`'s pending merge, for a manual
/// compaction (which runs alone, so no claim is needed).
pub fn resume(version: &Version) -> Option<(CompactionTask, Journaling)> {
    let journal = version.merge_journal.as_ref()?;
    Some((
        resume_task(version, journal),
        Journaling::Resume(journal.clone()),
    ))
}

/// A journal for a fresh journaled merge of `task` in `current`, its
/// interim run numbered by `new_run`; `None` when a run committed since the
/// task was picked keeps it from parking outputs in its level (the merge
/// then runs unjournaled, its outputs going straight below that run).
pub fn fresh(
    current: &Version,
    task: &CompactionTask,
    new_run: impl FnOnce() -> u64,
) -> Option<MergeJournal> {
    let first = task.merge_inputs().next()?;
    let mut input_runs: Vec<u64> = task
        .merge_inputs()
        .chain(task.moves.iter())
        .map(|i| i.run)
        .collect();
    input_runs.sort_unstable();
    input_runs.dedup();
    if !interim_run_fits(current, first.level, &input_runs) {
        return None;
    }
    Some(MergeJournal {
        level: first.level,
        input_runs,
        interim_run: new_run(),
        output_level: task.output_level,
        resume_after: Vec::new(),
    })
}

/// The edit of a checkpoint: the fresh outputs join the interim run, the
/// inputs wholly at or below `last` are released (their ids added to
/// `released`), and the journal records where to resume.
pub fn checkpoint_edit(
    task: &CompactionTask,
    journal: &mut MergeJournal,
    released: &mut HashSet<u64>,
    fresh: &[Arc<TableMeta>],
    last: &[u8],
    order: &KeyOrder,
) -> VersionEdit {
    let mut edit = VersionEdit::default();
    for t in fresh {
        edit.add_table(journal.level, journal.interim_run, t.clone());
    }
    for input in task.merge_inputs() {
        for t in &input.tables {
            if order.le(t.largest_user_key(), last) && released.insert(t.id) {
                edit.delete_table(input.level, input.run, t.id);
            }
        }
    }
    journal.resume_after = last.to_vec();
    edit.merge_journal = Some(journal.clone());
    edit
}

/// The interim run of `journal` in `current` as `(level, run, tables)`: the
/// final commit of the merge moves these outputs into the output run.
pub fn parked<'a>(
    current: &'a Version,
    journal: &MergeJournal,
) -> Option<(usize, u64, &'a [Arc<TableMeta>])> {
    current.levels[journal.level]
        .runs
        .iter()
        .find(|r| r.id == journal.interim_run)
        .map(|r| (journal.level, r.id, r.tables.as_slice()))
}

/// Whether a journaled merge of `input_runs` may park its outputs in a run
/// of `level` created now. The interim run shadows the inputs (it holds
/// their merged, newest versions), so its id must sort above theirs and
/// below every run of newer data: no run outside the inputs may already be
/// in the level (a flush or a merge from above that committed after the
/// task was picked), for a run id allocated now sorts above it.
fn interim_run_fits(version: &Version, level: usize, input_runs: &[u64]) -> bool {
    version.levels[level]
        .runs
        .iter()
        .all(|r| input_runs.contains(&r.id))
}

/// The rest of a journaled merge interrupted by a crash: what is left of
/// its input runs (merge inputs wholly at or below the resume key were
/// released; tables still there are straddling, unread or moves), merged
/// from the first key above it.
///
/// A straddling table was partly merged: its keys up to the resume key are
/// in the parked outputs already, so it must be merged from there on even
/// when no other table overlaps it any more. Moving it whole would put
/// those keys in the output run twice, in tables that overlap. A table
/// wholly at or below the resume key is one of the original moves (a merge
/// input there would have been released). A move never straddles, because
/// the resume key is a merged key, and a move overlaps no merged table.
fn resume_task(version: &Version, journal: &MergeJournal) -> CompactionTask {
    let after = journal.resume_after.as_slice();
    let items: Vec<(usize, u64, Arc<TableMeta>)> = version.levels[journal.level]
        .runs
        .iter()
        .filter(|r| journal.input_runs.contains(&r.id))
        .flat_map(|r| {
            r.tables
                .iter()
                .map(move |t| (journal.level, r.id, t.clone()))
        })
        .collect();
    let order = &version.order;
    let straddles = |t: &TableMeta| {
        order.le(t.smallest_user_key(), after) && order.lt(after, t.largest_user_key())
    };
    let (merges, moves) = split_components(items, order, |_, t| !straddles(t));
    CompactionTask {
        merges,
        moves,
        output_level: journal.output_level,
        output_run: None,
        reason: format!("resumed merge of L{}", journal.level),
        compact_pointer: None,
        grouped: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::version::meta::tests::version;

    /// Found by the crash test. Runs 10 and 11 were being merged: tables
    /// [c,e] of run 10 and [d,k] of run 11 together, while [a,b], [m,p] and
    /// [q,r] moved. The merge checkpointed at "f" (releasing [c,e], parking
    /// [c,f] in run 50), then the process died. [d,k] now overlaps no
    /// remaining input, but it is half merged: moving it whole would put
    /// "d".."f" in the output run twice, in overlapping tables.
    #[test]
    fn a_resumed_merge_merges_a_half_read_table_and_moves_untouched_ones() {
        let v = version(&[
            (0, 11, "d", "k"),
            (0, 11, "a", "b"),
            (0, 11, "m", "p"),
            (0, 10, "q", "r"),
            (0, 50, "c", "f"),
        ]);
        let journal = MergeJournal {
            level: 0,
            input_runs: vec![10, 11],
            interim_run: 50,
            output_level: 1,
            resume_after: b"f".to_vec(),
        };
        let task = resume_task(&v, &journal);
        let merged: Vec<Vec<Vec<u64>>> = task
            .merges
            .iter()
            .map(|g| {
                g.iter()
                    .map(|i| i.tables.iter().map(|t| t.id).collect())
                    .collect()
            })
            .collect();
        assert_eq!(merged, vec![vec![vec![100]]], "the half-read table");
        let moved: Vec<u64> = task
            .moves
            .iter()
            .flat_map(|m| m.tables.iter().map(|t| t.id))
            .collect();
        assert_eq!(moved, vec![101, 102, 103], "tables the merge never read");
    }

    #[test]
    fn an_interim_run_fits_only_a_level_holding_just_the_inputs() {
        let v = version(&[(0, 10, "a", "c"), (0, 11, "b", "d"), (0, 12, "c", "e")]);
        assert!(interim_run_fits(&v, 0, &[10, 11, 12]));
        // Run 12 was flushed after the merge of runs 10 and 11 was picked:
        // an interim run would shadow its newer data.
        assert!(!interim_run_fits(&v, 0, &[10, 11]));
    }
}
