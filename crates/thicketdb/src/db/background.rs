//! Background work: flushing immutable memtables, compacting L0, and
//! releasing the space of tables no version references any more.

use std::collections::HashSet;
use std::sync::Arc;
use std::thread::JoinHandle;

use super::{DbInner, SuperVersion};
use crate::compaction::drop_rule::DropRule;
use crate::compaction::executor::{bottommost_for, ExecContext, Journal};
use crate::compaction::output::{Output, OutputSink, OutputSpec};
use crate::compaction::tiered::resume_task;
use crate::compaction::PolicyKind;
use crate::compaction::{execute, CompactionTask};
use crate::error::{Error, Result};
use crate::iterator::InternalIterator;
use crate::memtable::{Memtable, MemtableIterator};
use crate::stats::Counters;
use crate::version::files::{log_path, parse_file_name, segment_path, FileKind};
use crate::version::{MergeJournal, TableMeta, Version, VersionEdit, NUM_LEVELS};

/// Starts the flush thread and the compaction thread. Flushes never wait
/// behind a long compaction: they only add L0 runs, which a running task
/// neither reads nor deletes.
pub(crate) fn spawn(inner: Arc<DbInner>) -> Result<Vec<JoinHandle<()>>> {
    [Worker::Flush, Worker::Compaction]
        .into_iter()
        .map(|worker| {
            let inner = inner.clone();
            std::thread::Builder::new()
                .name(worker.name().into())
                .spawn(move || run(&inner, worker))
                .map_err(|e| Error::io(e, "spawning a background thread"))
        })
        .collect()
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Worker {
    Flush,
    Compaction,
}

impl Worker {
    fn name(self) -> &'static str {
        match self {
            Worker::Flush => "thicket-flush",
            Worker::Compaction => "thicket-compact",
        }
    }
}

enum Job {
    Flush,
    Compact(CompactionTask),
    Resume(CompactionTask, MergeJournal),
}

fn run(inner: &Arc<DbInner>, worker: Worker) {
    loop {
        {
            let mut bg = inner.background.lock();
            loop {
                if bg.shutting_down {
                    return;
                }
                if bg.error.is_none() && next_job(inner, worker).is_some() {
                    break;
                }
                inner.background_cv.wait(&mut bg);
            }
        }
        let result = {
            let _exclusive = match worker {
                Worker::Flush => inner.flush_lock.lock(),
                Worker::Compaction => inner.compaction_lock.lock(),
            };
            // Pick under the lock: a manual compaction may have changed the
            // version since the check above.
            match next_job(inner, worker) {
                Some(Job::Flush) => flush_oldest(inner),
                Some(Job::Compact(task)) => compact(inner, task, None),
                Some(Job::Resume(task, journal)) => compact(inner, task, Some(journal)),
                None => Ok(()),
            }
        };
        collect_obsolete_files(inner);
        {
            let mut bg = inner.background.lock();
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

fn next_job(inner: &DbInner, worker: Worker) -> Option<Job> {
    let sv = inner.super_version();
    if worker == Worker::Flush {
        return (!sv.imms.is_empty()).then_some(Job::Flush);
    }
    if let Some(journal) = &sv.version.merge_journal {
        return Some(Job::Resume(
            resume_task(&sv.version, journal),
            journal.clone(),
        ));
    }
    inner.policy.pick(&sv.version).map(Job::Compact)
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

fn new_file_number(inner: &DbInner) -> impl Fn() -> u64 + '_ {
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
fn install(inner: &DbInner, version: Arc<Version>, flushed: Option<&Arc<Memtable>>) {
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

/// Runs a task and commits it. A tiered merge big enough is journaled:
/// its outputs are committed to an interim run every
/// `early_cleaning_threshold` tables and the inputs they replace released
/// (SifrDB early cleaning); `resume` continues such a merge after a crash.
fn compact(inner: &Arc<DbInner>, task: CompactionTask, resume: Option<MergeJournal>) -> Result<()> {
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
    if resume.is_some() {
        Counters::add(&inner.counters.merges_resumed, 1);
    }
    let mut journal = resume.or_else(|| new_journal(inner, &task));
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
    // Moved tables stay live under their new level; merge inputs die, and
    // are released once no reader holds them (see `collect_obsolete_files`).
    let dead: Vec<Arc<TableMeta>> = task
        .merges
        .into_iter()
        .flatten()
        .flat_map(|i| i.tables)
        .filter(|t| !released.contains(&t.id))
        .collect();
    inner.obsolete.lock().extend(dead);
    Ok(())
}

/// A journal for a fresh tiered merge expected to write at least
/// `early_cleaning_threshold` tables.
fn new_journal(inner: &DbInner, task: &CompactionTask) -> Option<MergeJournal> {
    let opts = &inner.options;
    let threshold = opts.early_cleaning_threshold as u64;
    let journaled = opts.compaction_policy == PolicyKind::Tiered
        && threshold > 0
        && task.merge_bytes() >= threshold * opts.target_table_size;
    if !journaled {
        return None;
    }
    let first = task.merge_inputs().next()?;
    let mut input_runs: Vec<u64> = task
        .merge_inputs()
        .chain(task.moves.iter())
        .map(|i| i.run)
        .collect();
    input_runs.sort_unstable();
    input_runs.dedup();
    Some(MergeJournal {
        level: first.level,
        input_runs,
        interim_run: inner.versions.lock().new_file_number(),
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
    let mut dead = Vec::new();
    for input in task.merge_inputs() {
        for t in &input.tables {
            if t.largest_user_key() <= last && released.insert(t.id) {
                edit.delete_table(input.level, input.run, t.id);
                dead.push(t.clone());
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
    inner.obsolete.lock().extend(dead);
    collect_obsolete_files(inner);
    Ok(())
}

/// Manual compaction on the caller's thread, excluding background jobs.
pub(crate) fn compact_range(
    inner: &Arc<DbInner>,
    start: Option<&[u8]>,
    end: Option<&[u8]>,
) -> Result<()> {
    inner.check_background_error()?;
    let result = (|| -> Result<()> {
        let _exclusive = inner.compaction_lock.lock();
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
                compact(inner, task, Some(journal))?;
                continue;
            }
            if let Some(task) = inner.policy.manual(&version, level, start, end) {
                drop(version);
                compact(inner, task, None)?;
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
