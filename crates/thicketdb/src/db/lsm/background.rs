//! Background work: one thread flushing immutable memtables,
//! `compaction_threads` threads running compactions side by side, and
//! releasing the space of tables no version references any more.
//!
//! A compaction thread picks a task and registers its claim (`Busy`) in one
//! step under the background mutex, so no two running tasks conflict; it
//! runs and commits the task without the mutex and then releases the claim.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;

use super::compact::compact;
use super::flush::flush_oldest;
use super::obsolete::collect_obsolete_files;
use super::tree::Tree;
use super::{BackgroundState, DbInner};
use crate::compaction::busy::ClaimId;
use crate::compaction::journal::{self, Journaling, Pending};
use crate::compaction::CompactionTask;
use crate::error::{Error, Result};
use crate::stats::Counters;

/// Starts the flush thread and the compaction threads. Flushes never wait
/// behind a long compaction: they only add L0 runs, which a running task
/// neither reads nor deletes.
pub(crate) fn spawn(inner: Arc<DbInner>) -> Result<Vec<JoinHandle<()>>> {
    let compactions = (0..inner.options.compaction_threads).map(Worker::Compaction);
    std::iter::once(Worker::Flush)
        .chain(compactions)
        .map(|worker| {
            let inner = inner.clone();
            std::thread::Builder::new()
                .name(worker.name())
                .spawn(move || run(&inner, worker))
                .map_err(|e| Error::io(e, "spawning a background thread"))
        })
        .collect()
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Worker {
    Flush,
    /// The compaction thread with this index.
    Compaction(usize),
}

impl Worker {
    fn name(self) -> String {
        match self {
            Worker::Flush => "thicket-flush".to_string(),
            Worker::Compaction(i) => format!("thicket-compact-{i}"),
        }
    }
}

enum Job {
    Flush,
    /// LSbM's periodic trim of the compaction buffer.
    Trim,
    /// A task in a keyspace's tree, how it journals, and its claim (boxed:
    /// the other jobs are empty).
    Compact(Box<(Arc<Tree>, CompactionTask)>, Journaling, ClaimId),
}

fn run(inner: &Arc<DbInner>, worker: Worker) {
    loop {
        let job = {
            let mut bg = inner.background.lock();
            loop {
                if bg.shutting_down {
                    return;
                }
                if bg.error.is_none() {
                    if let Some(job) = claim_job(inner, worker, &mut bg) {
                        break job;
                    }
                    if trim_wait(inner, worker).is_some_and(|due| due.is_zero()) {
                        break Job::Trim;
                    }
                }
                match trim_wait(inner, worker) {
                    Some(due) => {
                        inner.background_cv.wait_for(bg.raw(), due);
                    }
                    None => inner.background_cv.wait(bg.raw()),
                }
            }
        };
        let start = std::time::Instant::now();
        let (result, claim, spent) = match job {
            Job::Flush => (flush_oldest(inner), None, &inner.counters.flush_micros),
            Job::Trim => (
                super::lsbm_trim::trim(inner),
                None,
                &inner.counters.compaction_micros,
            ),
            Job::Compact(task, journaling, claim) => {
                let (tree, task) = *task;
                let mut result = compact(inner, &tree, task, journaling);
                if result.is_ok() && trim_due(inner, worker) {
                    result = super::lsbm_trim::trim(inner);
                }
                (
                    result,
                    Some((tree, claim)),
                    &inner.counters.compaction_micros,
                )
            }
        };
        Counters::add(spent, start.elapsed().as_micros() as u64);
        collect_obsolete_files(inner);
        {
            let mut bg = inner.background.lock();
            // Released only now, after the task's version is installed: a
            // task picked later sees that version, not the inputs it deleted.
            if let Some((tree, claim)) = claim {
                bg.busy_in(&tree).remove(claim);
            }
            match result {
                // A compaction the close stopped failed nothing: its inputs
                // stay, its unreferenced output is gone.
                Err(Error::Closed) if inner.closed.load(Ordering::Acquire) => {}
                Err(e) => {
                    bg.error.get_or_insert(e);
                    inner.failed.store(true, Ordering::Release);
                }
                Ok(()) => {}
            }
            inner.background_cv.notify_all();
        }
        let _writers = inner.write.lock();
        inner.write_cv.notify_all();
    }
}

/// The next job for `worker`, its claim registered in `bg.busy`. An
/// interrupted journaled merge resumes before anything else is picked.
/// REQUIRES: `inner.background` held (as `bg`).
/// Keyspaces take turns: the search starts after the keyspace that got the
/// last task.
fn claim_job(inner: &DbInner, worker: Worker, bg: &mut BackgroundState) -> Option<Job> {
    let trees = inner.trees();
    if worker == Worker::Flush {
        let due = trees.iter().any(|t| !t.super_version().imms.is_empty());
        return due.then_some(Job::Flush);
    }
    if bg.manual_compaction {
        return None;
    }
    let start = bg.next_tree;
    (0..trees.len()).find_map(|i| {
        let at = (start + i) % trees.len();
        let job = claim_task(inner, &trees[at], bg)?;
        bg.next_tree = at + 1;
        Some(job)
    })
}

/// The next compaction task in `tree`, its claim registered.
/// REQUIRES: `inner.background` held (as `bg`).
fn claim_task(inner: &DbInner, tree: &Arc<Tree>, bg: &mut BackgroundState) -> Option<Job> {
    if tree.options.disable_auto_compactions {
        return None;
    }
    let sv = tree.super_version();
    let busy = bg.busy_in(tree);
    let (task, journaling, claim) = match journal::pending(&sv.version, busy) {
        Pending::Ready(ready) => *ready,
        // Nothing else may take the journal's runs before it resumes.
        Pending::Blocked => return None,
        Pending::None => {
            let task = tree.policy.pick(&sv.version, busy)?;
            tree.policy.take(&task);
            let claim = tree.policy.claim(&task, busy);
            let journaling = if claim.journaled {
                Journaling::Fresh
            } else {
                Journaling::Off
            };
            (task, journaling, claim)
        }
    };
    if !bg.idle() {
        Counters::add(&inner.counters.compactions_concurrent, 1);
    }
    let id = bg.busy_in(tree).insert(claim);
    Some(Job::Compact(Box::new((tree.clone(), task)), journaling, id))
}

/// How long the first compaction thread may sleep before the compaction
/// buffer's next trim; `None` for other threads, stores without a buffer,
/// and a zero interval (trims then follow every compaction, not a clock).
/// The soonest trim over every keyspace with a buffer.
fn trim_wait(inner: &DbInner, worker: Worker) -> Option<std::time::Duration> {
    if worker != Worker::Compaction(0) {
        return None;
    }
    inner
        .trees()
        .iter()
        .filter_map(|t| t.policy.buffer())
        .filter(|b| !b.trims_after_every_compaction())
        .map(|b| b.until_trim())
        .min()
}

/// Whether the first compaction thread should trim a buffer now.
fn trim_due(inner: &DbInner, worker: Worker) -> bool {
    worker == Worker::Compaction(0)
        && inner
            .trees()
            .iter()
            .filter_map(|t| t.policy.buffer())
            .any(|b| b.until_trim().is_zero())
}
