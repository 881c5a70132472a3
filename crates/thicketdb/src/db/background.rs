//! Background work: one thread flushing immutable memtables,
//! `compaction_threads` threads running compactions side by side, and
//! releasing the space of tables no version references any more.
//!
//! A compaction thread picks a task and registers its claim (`Busy`) in one
//! step under the background mutex, so no two running tasks conflict; it
//! runs and commits the task without the mutex and then releases the claim.

use std::sync::Arc;
use std::thread::JoinHandle;

use super::compact::{compact, Journaling};
use super::{BackgroundState, DbInner, SuperVersion};
use crate::compaction::busy::ClaimId;
use crate::compaction::drop_rule::DropRule;
use crate::compaction::output::{Output, OutputSink, OutputSpec};
use crate::compaction::tiered::{resume_claim, resume_task};
use crate::compaction::CompactionTask;
use crate::error::{Error, Result};
use crate::iterator::InternalIterator;
use crate::memtable::{Memtable, MemtableIterator};
use crate::stats::Counters;
use crate::version::files::{log_path, parse_file_name, segment_path, FileKind};
use crate::version::{Version, VersionEdit};

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
    /// A task, how it journals, and its claim.
    Compact(CompactionTask, Journaling, ClaimId),
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
                }
                inner.background_cv.wait(&mut bg);
            }
        };
        let (result, claim) = match job {
            Job::Flush => (flush_oldest(inner), None),
            Job::Compact(task, journaling, claim) => {
                (compact(inner, task, journaling), Some(claim))
            }
        };
        collect_obsolete_files(inner);
        {
            let mut bg = inner.background.lock();
            // Released only now, after the task's version is installed: a
            // task picked later sees that version, not the inputs it deleted.
            if let Some(claim) = claim {
                bg.busy.remove(claim);
            }
            if let Err(e) = result {
                bg.error.get_or_insert(e);
                inner
                    .failed
                    .store(true, std::sync::atomic::Ordering::Release);
            }
            inner.background_cv.notify_all();
        }
        let _writers = inner.write.lock();
        inner.write_cv.notify_all();
    }
}

/// The next job for `worker`, its claim registered in `bg.busy`. An
/// interrupted journaled merge resumes before anything else is picked.
fn claim_job(inner: &DbInner, worker: Worker, bg: &mut BackgroundState) -> Option<Job> {
    let sv = inner.super_version();
    if worker == Worker::Flush {
        return (!sv.imms.is_empty()).then_some(Job::Flush);
    }
    if bg.manual_compaction {
        return None;
    }
    let (task, journaling, claim) = match &sv.version.merge_journal {
        Some(journal) if !bg.busy.journaling() => {
            let task = resume_task(&sv.version, journal);
            let claim = resume_claim(&task, journal);
            // Nothing else may take the journal's runs before it resumes.
            if !bg.busy.admits(&claim) {
                return None;
            }
            (task, Journaling::Resume(journal.clone()), claim)
        }
        _ => {
            let task = inner.policy.pick(&sv.version, &bg.busy)?;
            let claim = inner.policy.claim(&task, &bg.busy);
            let journaling = if claim.journaled {
                Journaling::Fresh
            } else {
                Journaling::Off
            };
            (task, journaling, claim)
        }
    };
    if !bg.busy.is_empty() {
        Counters::add(&inner.counters.compactions_concurrent, 1);
    }
    let id = bg.busy.insert(claim);
    Some(Job::Compact(task, journaling, id))
}

/// Writes a memtable's entries as L0 tables.
pub(crate) fn write_memtable(
    fs: &dyn crate::io::FileSystem,
    dir: &std::path::Path,
    options: &crate::options::Options,
    mem: Arc<Memtable>,
    smallest_snapshot: u64,
    new_file_number: &dyn Fn() -> u64,
) -> Result<Output> {
    let mut source = MemtableIterator::new(mem);
    source.seek_to_first();
    let mut rule = DropRule::new(smallest_snapshot, |_: &[u8]| false);
    let mut sink = OutputSink::new(OutputSpec {
        fs,
        dir,
        table_options: options.table_options(),
        target_table_size: options.target_table_size,
        compaction_file: options.compaction_file,
        new_file_number,
    });
    sink.add_stream(&mut source, &mut |k| rule.keep(k))?;
    sink.finish()
}

pub(crate) fn new_file_number(inner: &DbInner) -> impl Fn() -> u64 + '_ {
    move || inner.versions.lock().new_file_number()
}

fn flush_oldest(inner: &Arc<DbInner>) -> Result<()> {
    let sv = inner.super_version();
    let Some(imm) = sv.imms.last().cloned() else {
        return Ok(());
    };
    let latest = inner
        .last_sequence
        .load(std::sync::atomic::Ordering::Acquire);
    let output = write_memtable(
        inner.fs.as_ref(),
        &inner.dir,
        &inner.options,
        imm.clone(),
        inner.snapshots.oldest(&inner.last_sequence),
        &new_file_number(inner),
    )?;
    let c = &inner.counters;
    Counters::add(&c.flushes, 1);
    Counters::add(&c.flush_bytes_written, output.bytes);
    Counters::add(&c.fsyncs_flush, output.syncs);
    c.level_written(0, output.bytes);
    let mut versions = inner.versions.lock();
    let run = versions.new_file_number();
    let mut edit = VersionEdit::default();
    for t in &output.tables {
        edit.add_table(0, run, t.clone());
    }
    edit.last_sequence = Some(latest);
    // The oldest memtable still unflushed decides which logs are needed.
    let now = inner.super_version();
    let still_needed = now
        .imms
        .iter()
        .rev()
        .find(|m| !Arc::ptr_eq(m, &imm))
        .unwrap_or(&now.mem);
    edit.log_number = Some(still_needed.log_number());
    let version = versions.log_and_apply(edit)?;
    let log_number = versions.log_number();
    install(inner, version, Some(&imm));
    drop(versions);
    delete_obsolete_logs(inner, log_number);
    Ok(())
}

/// Publishes a new version, dropping `flushed` from the immutable list.
pub(crate) fn install(inner: &DbInner, version: Arc<Version>, flushed: Option<&Arc<Memtable>>) {
    let mut sv = inner.super_version.write();
    let imms = sv
        .imms
        .iter()
        .filter(|m| flushed.is_none_or(|f| !Arc::ptr_eq(m, f)))
        .cloned()
        .collect();
    *sv = Arc::new(SuperVersion {
        mem: sv.mem.clone(),
        imms,
        pending_compaction_bytes: inner.policy.pending_bytes(&version),
        version,
    });
}

fn delete_obsolete_logs(inner: &DbInner, log_number: u64) {
    let Ok(names) = inner.fs.list(&inner.dir) else {
        return;
    };
    for name in names {
        if let Some(FileKind::Log(n)) = parse_file_name(&name) {
            if n < log_number {
                // Failing to delete only leaves garbage for the next sweep.
                let _ = inner.fs.remove(&log_path(&inner.dir, n));
            }
        }
    }
}

/// Releases dead tables no reader can reach any more: punches their byte
/// ranges out of their segments, and deletes segments with no table left.
pub(crate) fn collect_obsolete_files(inner: &DbInner) {
    let mut obsolete = inner.obsolete.lock();
    let (tables_in_use, segments_in_use) = inner.versions.lock().in_use();
    let (unreachable, still_used): (Vec<_>, Vec<_>) = obsolete
        .drain(..)
        .partition(|t| !tables_in_use.contains(&t.id));
    *obsolete = still_used;
    for table in unreachable {
        inner.table_cache.evict_table(table.id);
        let segment_dead = !segments_in_use.contains(&table.segment)
            && !obsolete.iter().any(|t| t.segment == table.segment);
        if segment_dead {
            inner.table_cache.evict_segment(table.segment);
            let path = segment_path(&inner.dir, table.segment);
            if inner.fs.exists(&path) && inner.fs.remove(&path).is_ok() {
                Counters::add(&inner.counters.segments_deleted, 1);
            }
        } else if let Ok(file) = inner.table_cache.segment_file(table.segment) {
            if let Ok(true) = file.punch_hole(table.offset, table.length) {
                Counters::add(&inner.counters.holes_punched, 1);
            }
        }
    }
}
