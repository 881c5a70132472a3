//! Opening a chunked store: the chunk list from `CHUNKS`, each funk's
//! table opened and each chunk log read once (its records listed in its
//! filters, its last sequence number found; no entry is kept in memory)
//! unless a clean close recorded it in `LOGS_CLOSED` (then it is read on
//! first need, `chunk_log.rs`),
//! unfinished cross-chunk batches completed from the batch log, torn log
//! tails rewritten, and files no chunk names deleted.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};

use super::batch_log::{self, BatchLog};
use super::checkpoint_mark::CheckpointMark;
use super::chunk::{open_table, Chunk, ChunkLog};
use super::chunk_space::{space_options, ChunkSpace};
use super::closed::ClosedLogs;
use super::durable_prefix::{self, SeqRange};
use super::files::{chunk_list_path, chunk_list_temp_path, parse_numbered};
use super::incarnations::Incarnations;
use super::log_filter::LogFilters;
use super::manifest::{ChunkList, ChunkRecord, KeyspaceRecord};
use super::munk::MunkCache;
use super::row_cache::RowCache;
use super::{ChunkSet, ChunkStore, Writer};
use crate::db::batch::WriteBatch;
use crate::db::identity::check_stored_identity;
use crate::db::keyspace_rules::DEFAULT_KEYSPACE;
use crate::db::keyspace_rules::DEFAULT_KEYSPACE_NAME;
use crate::db::snapshot::SnapshotRegistry;
use crate::error::{Error, Result};
use crate::io::{FileLock, FileSystem};
use crate::log::RecoveryMode;
use crate::options::{Durability, Options};
use crate::stats::Counters;
use crate::table::{BlockCache, TableContext};
use crate::version::files::{lock_path, options_path, temp_path};

/// Opens the chunked store in `dir`, in phases: the directory and its
/// identity (`prepare`), the chunk list and how the last run is recovered
/// (`Recovery`), every keyspace's chunks with their logs read or left for
/// later (`open_keyspaces`), the cut that keeps a durable prefix
/// (`plan_cut`), then, read-write only, the logs made whole and the new run
/// recorded (`finish_recovery`).
pub(super) fn open(
    dir: &Path,
    options: Options,
    fs: Arc<dyn FileSystem>,
    read_only: bool,
) -> Result<ChunkStore> {
    let lock = prepare(dir, &options, fs.as_ref(), read_only)?;
    let list_path = chunk_list_path(dir);
    let list = ChunkList::decode(&list_path, &fs.read_to_vec(&list_path)?)?;
    let counters = Arc::new(Counters::default());
    counters.restore(&list.counters);
    let context = table_context(&options)?;
    // A damaged `LOGS_CLOSED` only costs reading every log.
    let closed = ClosedLogs::read(fs.as_ref(), dir).ok().flatten();
    // A clean close synced every log: all it recorded is durable.
    let durable = match (list.durable_sequence, &closed) {
        (Some(d), Some(c)) => Some(d.max(c.last_sequence)),
        (d, c) => d.or(c.as_ref().map(|c| c.last_sequence)),
    };
    let stored_incarnations = Incarnations::read(fs.as_ref(), dir)?;
    // The stored bits win: the sequence numbers on disk are laid out so.
    let incarnations = stored_incarnations
        .clone()
        .unwrap_or_else(|| Incarnations::new(options.incarnation_bits));
    let recovery = Recovery::of(
        closed.is_some(),
        CheckpointMark::read(fs.as_ref(), dir)?,
        &incarnations,
    );
    // The table this run keeps (the next incarnation's after a recovery
    // from a checkpoint), and the one every log read leaves ignored
    // records out by (past the checkpoint, also when no incarnation is
    // left: those logs are rewritten without them).
    let kept = match &recovery {
        Recovery::Lazy { next } => next.clone(),
        _ => incarnations.clone(),
    };
    let last = LastRun {
        reading: Arc::new(recovery.ignoring(&incarnations)),
        recovery,
        closed,
        durable,
        kept,
    };
    let mut logs = open_keyspaces(dir, &options, &fs, &list, &context, &last)?;
    let plan = plan_cut(fs.as_ref(), dir, &list, &options, &last, &mut logs)?;
    let LastRun { durable, kept, .. } = last;
    let last_sequence = plan.last_sequence;
    let is_async = options.durability == Durability::Async && !read_only;
    let munks = MunkCache::new(options.munk_cache_bytes);
    let row_cache = RowCache::new(options.row_cache_bytes, options.row_cache_tables);
    let spaces = std::mem::take(&mut logs.spaces);
    let store = ChunkStore {
        dir: dir.to_path_buf(),
        options,
        fs: fs.clone(),
        counters,
        snapshots: Arc::new(SnapshotRegistry::default()),
        last_sequence: AtomicU64::new(last_sequence),
        // Raised below once the logs read are synced.
        durable_sequence: AtomicU64::new(durable.unwrap_or(0)),
        incarnation: kept.current(),
        checkpointed: AtomicU64::new(match is_async {
            true => last_sequence,
            false => u64::MAX,
        }),
        checkpointer: Default::default(),
        last_checkpoint_at: Mutex::new(std::time::Instant::now()),
        sync_group: Default::default(),
        default: spaces[0].clone(),
        spaces: RwLock::new(Arc::new(spaces)),
        writer: Mutex::new(None),
        context,
        munks,
        row_cache,
        read_only,
        closed: AtomicBool::new(false),
        failed: Mutex::new(None),
        lock: Mutex::new(lock),
        builds: Default::default(),
        #[cfg(test)]
        before_build: Mutex::new(None),
        #[cfg(test)]
        before_switch: Mutex::new(None),
        #[cfg(test)]
        before_sync_round: Mutex::new(None),
    };
    let missing = missing_parts(&store, &plan.batches, &plan.log_ends, list.batch_log_number)?;
    if read_only {
        // Nothing is completed: the unfinished batch (the last write: a
        // crash cut it short) is hidden below its first sequence number.
        if let Some(part) = missing.first() {
            let visible = part.batch_first - 1;
            store
                .last_sequence
                .store(visible, std::sync::atomic::Ordering::Release);
        }
        return Ok(store);
    }
    // Before anything is written in the new incarnation (a crash now
    // must find the table that ignores the old one's unsaved writes).
    if stored_incarnations.as_ref() != Some(&kept) {
        kept.write(fs.as_ref(), dir)?;
    }
    finish_recovery(&store, &list, &logs, &plan, missing, is_async)?;
    Ok(store)
}

/// Validates `options` against the directory: takes the lock (read-write),
/// refuses another profile or comparator, creates a new store when asked.
/// Returns the lock.
fn prepare(
    dir: &Path,
    options: &Options,
    fs: &dyn FileSystem,
    read_only: bool,
) -> Result<Option<Box<dyn FileLock>>> {
    options.validate()?;
    if !options.comparator.is_bytewise() {
        return Err(Error::InvalidArgument(
            "the chunked layout needs the built-in byte order".into(),
        ));
    }
    let lock = if read_only {
        None
    } else {
        fs.create_dir_all(dir)?;
        Some(fs.lock(&lock_path(dir))?)
    };
    if fs.exists(&options_path(dir)) {
        if options.error_if_exists {
            return Err(Error::InvalidArgument(format!(
                "a store already exists in {}",
                dir.display()
            )));
        }
        check_stored_identity(fs, dir, options)?;
    } else if read_only || !options.create_if_missing {
        return Err(Error::InvalidArgument(format!(
            "no store in {} and create_if_missing is false",
            dir.display()
        )));
    } else {
        create(fs, dir, options)?;
    }
    Ok(lock)
}

/// The tables' context: the shared block cache (or one of the store's own)
/// under a store id of this open's own.
fn table_context(options: &Options) -> Result<TableContext> {
    let cache = match &options.block_cache {
        Some(shared) => shared.for_new_store()?,
        None => BlockCache::new(options.block_cache_size).for_new_store()?,
    };
    Ok(TableContext {
        cache: Some(Arc::new(cache)),
        order: options.comparator.clone(),
        filter_policy: options.filter_policy.clone(),
        value_log: None,
        charge_metadata: options.charge_table_metadata,
    })
}

/// What the last run left and how this open recovers it.
struct LastRun {
    recovery: Recovery,
    /// The logs a clean close recorded (`LOGS_CLOSED`).
    closed: Option<ClosedLogs>,
    /// Every write up to it is durable.
    durable: Option<u64>,
    /// The incarnation table this run keeps.
    kept: Incarnations,
    /// The table every log read leaves ignored records out by.
    reading: Arc<Incarnations>,
}

/// Every keyspace's chunks as opened, and what their logs hold.
struct OpenedLogs {
    spaces: Vec<Arc<ChunkSpace>>,
    /// Per keyspace, per chunk: the sequence numbers of each record its
    /// log holds (none read for a log a clean close recorded).
    log_ranges: Vec<Vec<Vec<SeqRange>>>,
    /// The last sequence number a clean close recorded for such a log.
    closed_ends: Vec<Vec<u64>>,
    /// (keyspace, chunk) of the logs to rewrite: torn, or holding writes
    /// past the cut.
    torn: Vec<(usize, usize)>,
}

/// Opens every keyspace's chunks: each funk's table, and its log read now
/// or, after a clean close or a recovery from a checkpoint, on first need.
fn open_keyspaces(
    dir: &Path,
    options: &Options,
    fs: &Arc<dyn FileSystem>,
    list: &ChunkList,
    context: &TableContext,
    last: &LastRun,
) -> Result<OpenedLogs> {
    let LastRun {
        recovery,
        closed,
        reading,
        ..
    } = last;
    let list_path = chunk_list_path(dir);
    let mut log_ranges: Vec<Vec<Vec<SeqRange>>> = Vec::with_capacity(list.keyspaces.len());
    let mut closed_ends: Vec<Vec<u64>> = Vec::with_capacity(list.keyspaces.len());
    let mut torn = Vec::new();
    let mut spaces = Vec::with_capacity(list.keyspaces.len());
    for (s, record) in list.keyspaces.iter().enumerate() {
        let space_options = match record.id {
            0 => options.clone(),
            _ => {
                let what = format!("{} (keyspace {:?})", list_path.display(), record.name);
                space_options(options, &Options::decode(&what, &record.options)?)?
            }
        };
        let mut chunks = Vec::with_capacity(record.chunks.len());
        let mut ranges = Vec::with_capacity(record.chunks.len());
        let mut ends = Vec::with_capacity(record.chunks.len());
        for (i, chunk) in record.chunks.iter().enumerate() {
            let table = match chunk.table_number {
                0 => None,
                n => Some((n, open_table(fs.as_ref(), dir, n, context.clone())?)),
            };
            let number = chunk.log_number;
            let lazy = match (recovery, closed_length(fs.as_ref(), dir, closed, number)) {
                // Read on first need, cut at any damage then.
                (Recovery::Lazy { .. }, _) => {
                    let len = fs.file_size(&super::files::chunk_log_path(dir, number))?;
                    Some((len, 0, true))
                }
                (_, Some((len, last))) => Some((len, last, false)),
                (_, None) => None,
            };
            let (log, log_ranges, log_last, is_torn) = match lazy {
                Some((len, last, may_be_torn)) => {
                    let log = ChunkLog::open_unread(
                        fs.clone(),
                        dir,
                        number,
                        filters(&space_options),
                        len,
                        reading.clone(),
                        may_be_torn,
                    )?;
                    (log, Vec::new(), last, false)
                }
                None => {
                    let (log, ranges, torn) = ChunkLog::open(
                        fs.as_ref(),
                        dir,
                        number,
                        filters(&space_options),
                        options.wal_recovery_mode,
                        reading,
                    )?;
                    (log, ranges, 0, torn)
                }
            };
            if is_torn {
                torn.push((s, i));
            }
            ranges.push(log_ranges);
            ends.push(log_last);
            chunks.push(Arc::new(Chunk::new(
                chunk.start.clone(),
                table,
                log,
                fs.clone(),
                dir.to_path_buf(),
            )));
        }
        log_ranges.push(ranges);
        closed_ends.push(ends);
        spaces.push(Arc::new(ChunkSpace::new(
            record.id,
            record.name.clone(),
            space_options,
            ChunkSet { chunks },
        )));
    }
    Ok(OpenedLogs {
        spaces,
        log_ranges,
        closed_ends,
        torn,
    })
}

/// Which writes of the last run an open keeps.
struct CutPlan {
    /// The first sequence number not kept (`u64::MAX`: all kept).
    cut: u64,
    /// The batch log's batches below the cut.
    batches: Vec<batch_log::LoggedBatch>,
    /// Per keyspace, per chunk: the last sequence number it holds.
    log_ends: Vec<Vec<u64>>,
    /// The store's last sequence number.
    last_sequence: u64,
}

/// Reads the batch log and finds the cut: the writes kept are those below
/// it (up to the first one missing past the durable sequence, or the
/// checkpoint); logs holding writes past it join `logs.torn`.
fn plan_cut(
    fs: &dyn FileSystem,
    dir: &Path,
    list: &ChunkList,
    options: &Options,
    last: &LastRun,
    logs: &mut OpenedLogs,
) -> Result<CutPlan> {
    let (recovery, durable, kept) = (&last.recovery, last.durable, &last.kept);
    let mut batches = batch_log::read(fs, dir, list.batch_log_number, options.wal_recovery_mode)?;
    if let Recovery::Lazy { .. } = recovery {
        // The checkpointed batches are whole in the chunk logs.
        batches.clear();
    }
    let batch_ranges = batches
        .iter()
        .map(|(first, record)| {
            let count = crate::db::batch::DecodedBatch::parse(record)
                .map_err(Error::invariant)?
                .count;
            Ok((*first, first + u64::from(count).saturating_sub(1)))
        })
        .collect::<Result<Vec<_>>>()?;
    let cut = match *recovery {
        // The logs' records past the checkpoint are left out already; the
        // batch log's are dropped here.
        Recovery::Cut { checkpointed } => checkpointed + 1,
        Recovery::Lazy { .. } => u64::MAX,
        // Salvaging a damaged store keeps every record it can read.
        Recovery::Logs => durable
            .filter(|_| options.wal_recovery_mode != RecoveryMode::SkipAnyCorruption)
            .and_then(|d| {
                let logged = logs.log_ranges.iter().flatten().flatten().copied();
                durable_prefix::first_gap(d, logged.chain(batch_ranges.iter().copied()))
            })
            .unwrap_or(u64::MAX),
    };
    batches.truncate(batch_ranges.iter().filter(|r| r.0 < cut).count());
    let kept_last = |ranges: &[SeqRange]| {
        ranges
            .iter()
            .filter(|r| r.0 < cut)
            .map(|r| r.1)
            .max()
            .unwrap_or(0)
    };
    // Below the durable sequence a chunk may hold a write in its funk
    // rather than its log; without one (a version-2 list), below the
    // list's last sequence.
    let floor = durable.unwrap_or(list.last_sequence);
    // Per keyspace, per chunk: the last sequence number it holds.
    let log_ends: Vec<Vec<u64>> = logs
        .log_ranges
        .iter()
        .zip(&logs.closed_ends)
        .map(|(ranges, ends)| {
            ranges
                .iter()
                .zip(ends)
                .map(|(r, &end)| kept_last(r).max(end).max(floor))
                .collect()
        })
        .collect();
    // Logs holding writes past the cut are rewritten without them.
    for (s, ranges) in logs.log_ranges.iter().enumerate() {
        for (i, r) in ranges.iter().enumerate() {
            if r.iter().any(|r| r.0 >= cut) && !logs.torn.contains(&(s, i)) {
                logs.torn.push((s, i));
            }
        }
    }
    let last_sequence = log_ends
        .iter()
        .flatten()
        .copied()
        .chain([kept_last(&batch_ranges), floor, kept.base()])
        .max()
        .unwrap_or(0);
    Ok(CutPlan {
        cut,
        batches,
        log_ends,
        last_sequence,
    })
}

/// A read-write open's last phase: torn logs rewritten, logged batches
/// completed, every log read synced, a new batch log, the chunk list and
/// the checkpoint mark written, unnamed files deleted.
fn finish_recovery(
    store: &ChunkStore,
    list: &ChunkList,
    logs: &OpenedLogs,
    plan: &CutPlan,
    missing: Vec<MissingPart>,
    is_async: bool,
) -> Result<()> {
    let fs = store.fs.as_ref();
    let dir = store.dir.as_path();
    let (torn, cut, last_sequence) = (&logs.torn, plan.cut, plan.last_sequence);
    // Before the first append: the lengths it records stop being true.
    ClosedLogs::remove(fs, dir)?;
    let mut next_file_number = list.next_file_number;
    rewrite_logs(store, torn, cut, &mut next_file_number)?;
    for chunk in store.every_chunk() {
        chunk.log.reopen_for_append(fs)?;
    }
    complete_batches(store, missing)?;
    // What a crash left in the page cache is durable before the list
    // counts it so (a rewritten or completed log is synced already).
    let spaces = store.spaces();
    for (s, ranges) in logs.log_ranges.iter().enumerate() {
        let set = spaces[s].chunk_set();
        for (i, r) in ranges.iter().enumerate() {
            if !r.is_empty() && !torn.contains(&(s, i)) {
                set.chunks[i].log.sync()?;
            }
        }
    }
    store
        .durable_sequence
        .fetch_max(last_sequence, std::sync::atomic::Ordering::AcqRel);
    // The old batch log's batches are now whole in the chunk logs.
    let batch_log = BatchLog::create(fs, dir, next_file_number)?;
    next_file_number += 1;
    *store.writer.lock() = Some(Writer {
        batch_log,
        next_file_number,
        next_keyspace_id: list.next_keyspace_id,
    });
    store.write_chunk_list(store.writer.lock().as_ref().expect("just set"))?;
    // The mark says how this run's crash is recovered: from a checkpoint
    // (the first: everything recovered), or by reading the logs.
    match is_async {
        true => CheckpointMark {
            incarnation: store.incarnation,
            sequence: last_sequence,
        }
        .write(fs, dir)?,
        false => CheckpointMark::remove(fs, dir)?,
    }
    sweep(store)
}

/// The table by which an open now would leave records out of the logs
/// (`check` applies it too).
pub(super) fn ignored_by_recovery(dir: &Path, fs: &dyn FileSystem) -> Result<Incarnations> {
    let closed = ClosedLogs::read(fs, dir).ok().flatten();
    let options = Options::default();
    let incarnations =
        Incarnations::read(fs, dir)?.unwrap_or_else(|| Incarnations::new(options.incarnation_bits));
    let mark = CheckpointMark::read(fs, dir)?;
    Ok(Recovery::of(closed.is_some(), mark, &incarnations).ignoring(&incarnations))
}

/// How an open recovers the last run's writes.
enum Recovery {
    /// Read every log not closed cleanly (the synchronous mode's crash, or
    /// no crash): keep the writes up to the first one missing past the
    /// durable sequence (`durable_prefix.rs`).
    Logs,
    /// An asynchronous-mode crash: the next incarnation, whose table
    /// ignores the last one's writes past its checkpoint; no log is read
    /// (each is on first need).
    Lazy { next: Incarnations },
    /// An asynchronous-mode crash with no incarnation left: read every
    /// log and rewrite those holding writes past the checkpoint without
    /// them; the incarnation goes on.
    Cut { checkpointed: u64 },
}

impl Recovery {
    /// The recovery after a run that closed cleanly (`clean`) or left
    /// `mark` (a run in the asynchronous mode), with `incarnations`.
    fn of(clean: bool, mark: Option<CheckpointMark>, incarnations: &Incarnations) -> Recovery {
        match mark {
            Some(mark) if !clean && mark.incarnation == incarnations.current() => {
                match incarnations.can_advance() {
                    true => Recovery::Lazy {
                        next: incarnations.advanced(mark.sequence),
                    },
                    false => Recovery::Cut {
                        checkpointed: mark.sequence,
                    },
                }
            }
            _ => Recovery::Logs,
        }
    }

    /// The table the logs are read by: the records it ignores are left
    /// out (past the checkpoint too, when no incarnation is left).
    fn ignoring(&self, incarnations: &Incarnations) -> Incarnations {
        match self {
            Recovery::Lazy { next } => next.clone(),
            Recovery::Cut { checkpointed } => incarnations.advanced(*checkpointed),
            Recovery::Logs => incarnations.clone(),
        }
    }
}

/// The length a clean close recorded for chunk log `number` and the
/// store's last sequence number then, if the file still has that length
/// (else the log is read at open, as after a crash).
fn closed_length(
    fs: &dyn FileSystem,
    dir: &Path,
    closed: &Option<ClosedLogs>,
    number: u64,
) -> Option<(u64, u64)> {
    let closed = closed.as_ref()?;
    let len = *closed.lengths.get(&number)?;
    let size = fs
        .file_size(&super::files::chunk_log_path(dir, number))
        .ok()?;
    (size == len).then_some((len, closed.last_sequence))
}

/// Filters sized for the store's chunk logs.
pub(super) fn filters(options: &Options) -> LogFilters {
    LogFilters::new(options.funk_log_limit, options.log_filter_parts)
}

/// A new store: `OPTIONS`, one empty chunk and a chunk list naming it.
fn create(fs: &dyn FileSystem, dir: &Path, options: &Options) -> Result<()> {
    let tmp = temp_path(dir, 0);
    fs.write_durably(&tmp, options.encode().as_bytes())?;
    fs.rename(&tmp, &options_path(dir))?;
    ChunkLog::create(fs, dir, 1, filters(options))?;
    BatchLog::create(fs, dir, 2)?;
    let list = ChunkList {
        last_sequence: 0,
        durable_sequence: Some(0),
        next_file_number: 3,
        batch_log_number: 2,
        next_keyspace_id: 1,
        keyspaces: vec![KeyspaceRecord {
            id: DEFAULT_KEYSPACE,
            name: DEFAULT_KEYSPACE_NAME.to_string(),
            options: Vec::new(),
            chunks: vec![ChunkRecord {
                start: Vec::new(),
                table_number: 0,
                log_number: 1,
            }],
        }],
        counters: Vec::new(),
    };
    write_list(fs, dir, &list)
}

/// Writes `list` as the store's `CHUNKS`, durably and atomically.
pub(super) fn write_list(fs: &dyn FileSystem, dir: &Path, list: &ChunkList) -> Result<()> {
    let tmp = chunk_list_temp_path(dir);
    fs.write_durably(&tmp, &list.encode())?;
    fs.rename(&tmp, &chunk_list_path(dir))?;
    fs.sync_dir(dir)
}

/// Copies each listed log's (keyspace index, chunk index) complete
/// records numbered below `cut` to a new log: appends do not follow a
/// torn tail, and the writes past a lost one are gone
/// (`durable_prefix.rs`).
fn rewrite_logs(
    store: &ChunkStore,
    torn: &[(usize, usize)],
    cut: u64,
    next: &mut u64,
) -> Result<()> {
    if torn.is_empty() {
        return Ok(());
    }
    let spaces = store.spaces();
    for &(s, i) in torn {
        let space = &spaces[s];
        let set = space.chunk_set();
        let old = &set.chunks[i];
        let log = ChunkLog::create(
            store.fs.as_ref(),
            &store.dir,
            *next,
            filters(&space.options),
        )?;
        *next += 1;
        for record in old.log.records()? {
            let first = crate::db::batch::DecodedBatch::parse(&record)
                .map_err(Error::invariant)?
                .first_sequence;
            if first < cut {
                log.append(&record, false)?;
            }
        }
        log.sync()?;
        let table = old.table.clone().map(|t| (old.table_number, t));
        let mut chunks = set.chunks.clone();
        chunks[i] = Arc::new(Chunk::new(
            old.start.clone(),
            table,
            log,
            store.fs.clone(),
            store.dir.clone(),
        ));
        space.install(ChunkSet { chunks });
    }
    store.fs.sync_dir(&store.dir)?;
    // The chunk list naming the new logs is written by the caller; the
    // old logs are swept once it is.
    Ok(())
}

/// The part of a logged batch a chunk log lacks.
struct MissingPart {
    /// The batch's first sequence number.
    batch_first: u64,
    /// Keyspace index and chunk index.
    chunk: (usize, usize),
    /// The part's first sequence number.
    first: u64,
    part: WriteBatch,
}

/// The parts of logged batches each chunk's log ends before
/// (`log_ends[s][i]`: the last sequence number chunk `i` of keyspace `s`
/// holds). Updates of a keyspace dropped since are left out.
fn missing_parts(
    store: &ChunkStore,
    batches: &[batch_log::LoggedBatch],
    log_ends: &[Vec<u64>],
    batch_log_number: u64,
) -> Result<Vec<MissingPart>> {
    let spaces = store.spaces();
    let sets: Vec<_> = spaces.iter().map(|s| s.chunk_set()).collect();
    let mut missing = Vec::new();
    for (first, record) in batches {
        let ops = crate::db::batch::DecodedBatch::parse(record)
            .and_then(|b| b.ops())
            .map_err(Error::invariant)?;
        let mut parts: std::collections::BTreeMap<(usize, usize), (u64, WriteBatch)> =
            Default::default();
        for (i, op) in ops.iter().enumerate() {
            let sequence = first + i as u64;
            let Some(s) = spaces.iter().position(|s| s.id == op.keyspace) else {
                continue;
            };
            // A range deletion was cut to its chunk: its start locates it.
            let chunk = (s, sets[s].locate(op.key));
            if sequence <= log_ends[chunk.0][chunk.1] {
                continue;
            }
            let (start, part) = parts.entry(chunk).or_insert((sequence, WriteBatch::new()));
            // A batch's part for one chunk is consecutive in it: the
            // writer groups updates by chunk before numbering them.
            if *start + part.len() as u64 != sequence {
                return Err(Error::corruption(
                    super::files::batch_log_path(&store.dir, batch_log_number),
                    0,
                    format!("batch at sequence {first} does not group its updates by chunk"),
                ));
            }
            part.push_op(op)?;
        }
        missing.extend(parts.into_iter().map(|(chunk, (start, part))| MissingPart {
            batch_first: *first,
            chunk,
            first: start,
            part,
        }));
    }
    Ok(missing)
}

/// Appends the missing parts to their chunk logs and syncs those.
fn complete_batches(store: &ChunkStore, missing: Vec<MissingPart>) -> Result<()> {
    let spaces = store.spaces();
    let mut touched = Vec::new();
    for MissingPart {
        chunk: (s, i),
        first,
        mut part,
        ..
    } in missing
    {
        let chunk = spaces[s].chunk_set().chunks[i].clone();
        chunk.log.append(part.encode(first), false)?;
        touched.push(chunk);
    }
    for chunk in touched {
        chunk.log.sync()?;
    }
    Ok(())
}

/// Deletes funk tables, chunk logs and batch logs the chunk list does not
/// name (left by a crash mid-rebalance, or replaced at this open).
fn sweep(store: &ChunkStore) -> Result<()> {
    let mut live: Vec<u64> = store
        .every_chunk()
        .iter()
        .flat_map(|c| [c.table_number, c.log.number])
        .collect();
    if let Some(w) = store.writer.lock().as_ref() {
        live.push(w.batch_log.number);
    }
    for name in store.fs.list(&store.dir)? {
        if let Some(number) = parse_numbered(&name) {
            if !live.contains(&number) {
                store.fs.remove(&store.dir.join(&name))?;
            }
        }
    }
    Ok(())
}
