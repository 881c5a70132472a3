//! Opening a store: lock, options, MANIFEST replay, log replay, and the
//! sweep of files no version references.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Arc;

use parking_lot::{Condvar, RwLock};

use super::flush::FlushEnv;
use super::lock_order::{Rank, Ranked};
use super::snapshot::SnapshotRegistry;
use super::write::{insert_into_memtable, LogState, WriteState};
use super::{BackgroundState, DbInner, SuperVersion};
use crate::error::{Error, Result};
use crate::io::{Backing, Backings, FileSystem};
use crate::log::{decode_relogged, is_relogged, LogReader, LogWriter};
use crate::memtable::Memtable;
use crate::options::Options;
use crate::stats::Counters;
use crate::table::BlockCache;
use crate::version::files::{
    current_path, lock_path, log_path, options_path, parse_file_name, temp_path, FileKind,
};
use crate::version::table_cache::TableCache;
use crate::version::{Version, VersionEdit, VersionSet};

pub(crate) fn open(dir: &Path, options: Options, fs: Arc<dyn FileSystem>) -> Result<DbInner> {
    options.validate()?;
    fs.create_dir_all(dir)?;
    let lock = fs.lock(&lock_path(dir))?;
    let exists = prepare_options_file(fs.as_ref(), dir, &options)?;
    let counters = Arc::new(Counters::default());
    let backings = Arc::new(Backings::default());
    let mut versions = recover_versions(&fs, dir, exists, &counters, &backings)?;
    let (mut edit, last_sequence) = replay_logs(fs.as_ref(), dir, &options, &versions, &counters)?;

    // Writes go to a fresh log from now on; the replayed ones are flushed.
    let log_number = versions.new_file_number();
    let log_file = super::write::create_log(fs.as_ref(), &options, &log_path(dir, log_number))?;
    fs.sync_dir(dir)?;
    Counters::add(&counters.fsyncs_log, 1);
    edit.log_number = Some(log_number);
    edit.last_sequence = Some(last_sequence);
    let version = versions.log_and_apply(edit)?;
    sweep(fs.as_ref(), dir, &version, log_number);

    let table_cache = Arc::new(TableCache::new(
        dir,
        fs.clone(),
        options.max_open_files,
        options.segment_descriptor_cache,
        Arc::new(BlockCache::new(options.block_cache_size)),
    ));
    release_dead_space(&table_cache, &version);
    if options.triad_disk {
        load_l0_sketches(&table_cache, &version);
    }
    let policy = crate::compaction::Policy::new(&options);
    let pending_compaction_bytes = policy.pending_bytes(&version);
    let mem = Memtable::with_log(backings.pin_file(Backing::log(log_number)));
    Ok(DbInner {
        dir: dir.to_path_buf(),
        counters,
        table_cache,
        policy,
        snapshots: Arc::new(SnapshotRegistry::default()),
        last_sequence: AtomicU64::new(last_sequence),
        super_version: RwLock::new(Arc::new(SuperVersion {
            mem: Arc::new(mem),
            imms: Vec::new(),
            pending_compaction_bytes,
            version,
        })),
        write: Ranked::new(Rank::Write, WriteState::default()),
        write_cv: Condvar::new(),
        log: Ranked::new(
            Rank::Log,
            LogState {
                writer: LogWriter::new(log_file),
            },
        ),
        versions: Ranked::new(Rank::Versions, versions),
        background: Ranked::new(Rank::Background, BackgroundState::default()),
        background_cv: Condvar::new(),
        backings,
        closed: AtomicBool::new(false),
        failed: AtomicBool::new(false),
        options,
        fs,
        lock: Ranked::new(Rank::FileLock, Some(lock)),
    })
}

/// Loads the key sketches TRIAD-DISK reads (L0 and L1 tables) with the
/// tables' metadata; later L0/L1 tables are written by this process and
/// carry theirs. A table whose sketch cannot be read only loses deferral:
/// an unknown overlap never defers a compaction, and reads report the
/// table's damage themselves.
fn load_l0_sketches(table_cache: &TableCache, version: &Version) {
    for level in &version.levels[..2] {
        for t in level.runs.iter().flat_map(|r| &r.tables) {
            let _unknown_overlap = table_cache.load_sketch(t);
        }
    }
}

/// Checks the stored `OPTIONS` of an existing store against `options`, or
/// writes them for a new one. Returns whether the store existed.
fn prepare_options_file(fs: &dyn FileSystem, dir: &Path, options: &Options) -> Result<bool> {
    let exists = fs.exists(&current_path(dir));
    if exists {
        if options.error_if_exists {
            return Err(Error::InvalidArgument(format!(
                "a store already exists in {}",
                dir.display()
            )));
        }
        check_stored_profile(fs, dir, options)?;
    } else {
        if !options.create_if_missing {
            return Err(Error::InvalidArgument(format!(
                "no store in {} and create_if_missing is false",
                dir.display()
            )));
        }
        let tmp = temp_path(dir, 0);
        fs.write_durably(&tmp, options.encode().as_bytes())?;
        fs.rename(&tmp, &options_path(dir))?;
        fs.sync_dir(dir)?;
    }
    Ok(exists)
}

/// Replays the MANIFEST (if the store exists) and starts a fresh one; file
/// numbers continue above every file in the directory.
fn recover_versions(
    fs: &Arc<dyn FileSystem>,
    dir: &Path,
    exists: bool,
    counters: &Arc<Counters>,
    backings: &Arc<Backings>,
) -> Result<VersionSet> {
    let recovered = if exists {
        VersionSet::recover(fs.as_ref(), dir)?
    } else {
        VersionSet::empty()
    };
    counters.restore(&recovered.stats);
    let highest = fs
        .list(dir)?
        .iter()
        .filter_map(|n| match parse_file_name(n)? {
            FileKind::Log(x) | FileKind::Segment(x) | FileKind::Manifest(x) | FileKind::Temp(x) => {
                Some(x)
            }
            _ => None,
        })
        .max()
        .unwrap_or(0);
    VersionSet::open(
        fs.clone(),
        dir,
        counters.clone(),
        recovered,
        Arc::new(AtomicU64::new(highest + 1)),
        backings.clone(),
    )
}

/// Replays every log the MANIFEST still needs, in order, flushing the
/// memtables it fills into L0 runs recorded in the returned edit, with the
/// last sequence number found.
fn replay_logs(
    fs: &dyn FileSystem,
    dir: &Path,
    options: &Options,
    versions: &VersionSet,
    counters: &Counters,
) -> Result<(VersionEdit, u64)> {
    let mut logs: Vec<u64> = fs
        .list(dir)?
        .iter()
        .filter_map(|n| match parse_file_name(n)? {
            FileKind::Log(x) if x >= versions.log_number() => Some(x),
            _ => None,
        })
        .collect();
    logs.sort_unstable();
    let numbers = || versions.new_file_number();
    let mut replay = Replay {
        env: FlushEnv {
            fs,
            dir,
            options,
            counters,
            new_file_number: &numbers,
        },
        mem: Arc::new(Memtable::new(0)),
        edit: VersionEdit::default(),
        replayed: logs.clone(),
    };
    let mut last_sequence = versions.last_sequence();
    for &log in &logs {
        last_sequence = last_sequence.max(replay.log(log)?);
    }
    replay.flush_memtable()?;
    Ok((replay.edit, last_sequence))
}

fn check_stored_profile(fs: &dyn FileSystem, dir: &Path, options: &Options) -> Result<()> {
    let path = options_path(dir);
    if !fs.exists(&path) {
        return Err(Error::corruption(&path, 0, "OPTIONS file is missing"));
    }
    let stored = Options::decode(&path.display().to_string(), &fs.read_to_vec(&path)?)?;
    if stored.profile != options.profile {
        return Err(Error::InvalidArgument(format!(
            "store in {} was created with profile {:?}; it cannot be opened as {:?}",
            dir.display(),
            stored.profile.name(),
            options.profile.name()
        )));
    }
    Ok(())
}

/// Replays logs into memtables, flushing each full one into L0.
struct Replay<'a> {
    env: FlushEnv<'a>,
    mem: Arc<Memtable>,
    edit: VersionEdit,
    /// Every log this recovery replays.
    replayed: Vec<u64>,
}

impl Replay<'_> {
    /// Replays one log; returns the last sequence number it holds.
    fn log(&mut self, number: u64) -> Result<u64> {
        let path = log_path(self.env.dir, number);
        let mut reader = LogReader::new(
            self.env.fs.open_sequential(&path)?,
            path.clone(),
            self.env.options.wal_recovery_mode,
        );
        let mut last = 0;
        let mut record = Vec::new();
        while let Some(offset) = reader.read_record_into(&mut record)? {
            let applied = if is_relogged(&record) {
                self.relogged(&record)
            } else {
                insert_into_memtable(&self.mem, &record)
            };
            last = last.max(applied.map_err(|why| Error::corruption(&path, offset, why))?);
            if self.mem.approximate_size() >= self.env.options.write_buffer_size {
                self.flush_memtable()?;
            }
        }
        Ok(last)
    }

    /// Applies a re-logged record (TRIAD-MEM's carried entries) unless its
    /// source log is replayed too: that log holds every version of them, and
    /// the same entry twice in a memtable would be a duplicate key. Returns
    /// the largest sequence number applied (0 for none).
    fn relogged(&self, record: &[u8]) -> std::result::Result<u64, String> {
        let (source, entries) = decode_relogged(record).map_err(str::to_string)?;
        if self.replayed.contains(&source) {
            return Ok(0);
        }
        let mut last = 0;
        for e in &entries {
            self.mem.add(e.seq, e.kind, &e.key, &e.value);
            last = last.max(e.seq);
        }
        Ok(last)
    }

    fn flush_memtable(&mut self) -> Result<()> {
        if self.mem.is_empty() {
            return Ok(());
        }
        let mem = std::mem::replace(&mut self.mem, Arc::new(Memtable::new(0)));
        // Recovery runs before any snapshot exists: only the newest version
        // of each key matters, but keep them all, as a flush does.
        self.env.flush(mem, 0, &mut self.edit)
    }
}

/// Deletes files that no version needs: old logs and MANIFESTs, temporary
/// files and unreferenced segments left by an interrupted flush or compaction.
fn sweep(fs: &dyn FileSystem, dir: &Path, version: &Version, log_number: u64) {
    let live = version.segment_table_counts();
    let Ok(names) = fs.list(dir) else { return };
    for name in names {
        let doomed = match parse_file_name(&name) {
            Some(FileKind::Log(n)) => n < log_number,
            Some(FileKind::Segment(n)) => !live.contains_key(&n),
            Some(FileKind::Temp(_)) => true,
            _ => false,
        };
        if doomed {
            // Garbage that stays is harmless; the next open tries again.
            let _ = fs.remove(&dir.join(&name));
        }
    }
}

/// Punches out the gaps between live tables of each segment: the space of
/// tables that died before a crash let their holes be punched.
fn release_dead_space(cache: &TableCache, version: &Version) {
    let mut by_segment: std::collections::BTreeMap<u64, Vec<(u64, u64)>> = Default::default();
    for t in version.tables() {
        by_segment
            .entry(t.segment)
            .or_default()
            .push((t.offset, t.length));
    }
    for (segment, mut ranges) in by_segment {
        let Ok(file) = cache.segment_file(segment) else {
            continue;
        };
        let Ok(len) = file.len() else { continue };
        ranges.sort_unstable();
        let mut cursor = crate::io::segment::SEGMENT_HEADER_LEN;
        for (offset, length) in ranges.into_iter().chain(std::iter::once((len, 0))) {
            if offset > cursor {
                // Best effort: a failure leaves the space allocated, no more.
                let _ = file.punch_hole(cursor, offset - cursor);
            }
            cursor = cursor.max(offset + length);
        }
    }
}
