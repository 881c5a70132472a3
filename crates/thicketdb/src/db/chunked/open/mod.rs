//! Opening a chunked store: the chunk list from `CHUNKS`, each funk's
//! table opened and each chunk log read once (its records listed in its
//! filters, its last sequence number found; no entry is kept in memory)
//! unless a clean close recorded it in `LOGS_CLOSED` (then it is read on
//! first need, `chunk_log.rs`),
//! unfinished cross-chunk batches completed from the batch log, torn log
//! tails rewritten, and files no chunk names deleted. Each phase of the
//! recovery has its file: `last_run.rs` (what the last run left and how it
//! is recovered), `open_chunks.rs` (every keyspace's chunks and their
//! logs), `cut_plan.rs` (the writes kept) and `finish_recovery.rs` (the
//! logs made whole, the new run recorded).

mod cut_plan;
mod finish_recovery;
mod last_run;
mod open_chunks;

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};

use super::batch_log::BatchLog;
use super::chunk::ChunkLog;
use super::files::{chunk_list_path, chunk_list_temp_path};
use super::funk_tables::FunkTables;
use super::log_filter::LogFilters;
use super::manifest::{ChunkList, ChunkRecord, KeyspaceRecord};
use super::munk::MunkCache;
use super::row_cache::RowCache;
use super::ChunkStore;
use crate::db::identity::check_stored_identity;
use crate::db::keyspace_rules::DEFAULT_KEYSPACE;
use crate::db::keyspace_rules::DEFAULT_KEYSPACE_NAME;
use crate::db::snapshot::SnapshotRegistry;
use crate::error::{Error, Result};
use crate::io::{FileLock, FileSystem};
use crate::options::{Durability, Options};
use crate::stats::Counters;
use crate::table::{BlockCache, TableContext};
use crate::version::files::{lock_path, options_path, temp_path};
use cut_plan::plan_cut;
use finish_recovery::{finish_recovery, missing_parts};
pub(super) use last_run::ignored_by_recovery;
use last_run::LastRun;
use open_chunks::open_keyspaces;

/// Opens the chunked store in `dir`, in phases: the directory and its
/// identity (`prepare`), the chunk list and how the last run is recovered
/// (`LastRun`), every keyspace's chunks with their logs read or left for
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
    let (last, stored_incarnations) = LastRun::read(fs.as_ref(), dir, &list, &options)?;
    // Tables are read by the table this run keeps: its rows are the
    // crashes whose writes past the checkpoint a table may hold
    // (`table_filter.rs`).
    let tables = Arc::new(FunkTables::new(
        fs.clone(),
        dir,
        table_context(&options)?,
        options.max_open_files,
        Arc::new(last.kept.clone()),
    ));
    let mut logs = open_keyspaces(dir, &options, &fs, &list, &tables, &last)?;
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
        append_order: super::append_order::AppendOrder::new(last_sequence),
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
        tables,
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
        #[cfg(test)]
        after_numbers_taken: Mutex::new(None),
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
    if stored_incarnations.as_ref() != Some(&kept)
        || !super::incarnations::Incarnations::stored_is_current(fs.as_ref(), dir)?
    {
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
    write_list_staged(fs, dir, list).map_err(ListWriteError::into_error)
}

/// Where a failed chunk-list write stopped.
#[derive(Debug)]
pub(super) enum ListWriteError {
    /// Before the rename: the list on disk is still the old one.
    BeforeRename(Error),
    /// At the rename or after it: the next open may read either list.
    AtRename(Error),
}

impl ListWriteError {
    pub fn into_error(self) -> Error {
        match self {
            ListWriteError::BeforeRename(e) | ListWriteError::AtRename(e) => e,
        }
    }
}

/// [`write_list`], telling whether the old list is still the one on disk
/// when it fails.
pub(super) fn write_list_staged(
    fs: &dyn FileSystem,
    dir: &Path,
    list: &ChunkList,
) -> std::result::Result<(), ListWriteError> {
    let tmp = chunk_list_temp_path(dir);
    fs.write_durably(&tmp, &list.encode())
        .map_err(ListWriteError::BeforeRename)?;
    fs.rename(&tmp, &chunk_list_path(dir))
        .and_then(|()| fs.sync_dir(dir))
        .map_err(ListWriteError::AtRename)
}
