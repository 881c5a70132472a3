//! Opening a store: lock, options, MANIFEST replay, log replay, and the
//! sweep of files no version references.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Arc;

use parking_lot::{Condvar, RwLock};

use super::flush::FlushEnv;
use super::lock_order::{Rank, Ranked};
use super::log_state::{create_log, LogState};
use super::relog::insert_relogged;
use super::search::SearchPool;
use super::tree::{memtable_on_log, Tree};
use super::write::{insert_into_memtables, WriteState};
use super::{BackgroundState, DbInner};
use crate::compaction::lsbm_buffer_edits;
use crate::compaction::Policy;
use crate::db::identity::check_stored_identity;
use crate::db::keyspace_rules::{keyspace_options, DEFAULT_KEYSPACE, DEFAULT_KEYSPACE_NAME};
use crate::db::snapshot::SnapshotRegistry;
use crate::error::{Error, Result};
use crate::io::{Backing, Backings, FileLock, FileSystem};
use crate::log::{for_each_relogged, is_relogged, LogReader, LogWriter};
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
    let mut versions = recover_versions(&fs, dir, exists, &options, &counters, &backings)?;
    let targets = replay_targets(&options, &versions)?;
    let replayed = replay_logs(
        fs.as_ref(),
        dir,
        &targets,
        &versions,
        &counters,
        FullMemtable::Flush,
    )?;

    // Writes go to a fresh log from now on; the replayed ones are flushed.
    // One edit per keyspace: each moves its own log number, so a crash
    // between them replays the old logs into the keyspaces not yet moved.
    let log_number = versions.new_file_number();
    let log_file = create_log(fs.as_ref(), &options, &log_path(dir, log_number))?;
    fs.sync_dir(dir)?;
    Counters::add(&counters.fsyncs_log, 1);
    let mut trees = Vec::with_capacity(targets.len());
    for (target, tree) in targets.into_iter().zip(replayed.trees) {
        let mut edit = tree.edit;
        edit.keyspace = target.id;
        edit.log_number = Some(log_number);
        edit.last_sequence = Some(replayed.last_sequence);
        let current = versions
            .current_of(target.id)
            .ok_or_else(|| Error::invariant("a recovered keyspace has no version"))?;
        lsbm_buffer_edits::open_edit(
            &current,
            target.options.lsbm_buffer,
            replayed.last_sequence,
            &mut edit,
        );
        let version = versions
            .log_and_apply(edit)?
            .ok_or_else(|| Error::invariant("a recovered keyspace has no version"))?;
        trees.push((target, version));
    }
    sweep(fs.as_ref(), dir, &versions);

    let table_cache = new_table_cache(dir, &fs, &options)?;
    let trees = trees
        .into_iter()
        .map(|(target, version)| {
            release_dead_space(&table_cache, &version);
            if target.options.triad_disk {
                load_l0_sketches(&table_cache, &version, &target.options);
            }
            let ReplayTarget {
                id, name, options, ..
            } = target;
            let mem = memtable_on_log(&options, &backings, log_number);
            Arc::new(Tree::new(id, name, options, version, mem, Vec::new()))
        })
        .collect();
    assemble(Parts {
        dir,
        options,
        fs,
        counters,
        backings,
        table_cache,
        versions,
        trees,
        last_sequence: replayed.last_sequence,
        log: LogWriter::new(log_file),
        log_number,
        lock: Some(lock),
        read_only: false,
    })
}

/// A keyspace whose writes log replay routes into its memtables.
pub(super) struct ReplayTarget {
    pub id: u32,
    pub name: String,
    /// The options its tree runs with (`tree::keyspace_options`).
    pub options: Options,
    /// Its writes in older logs are in its tables already.
    pub log_number: u64,
}

/// Every keyspace the MANIFEST knows, the default one first, with the
/// options its tree runs with: the store's for the default keyspace, the
/// recorded ones (store-wide fields from `options`) for the others.
pub(super) fn replay_targets(
    options: &Options,
    versions: &VersionSet,
) -> Result<Vec<ReplayTarget>> {
    let mut targets = vec![ReplayTarget {
        id: DEFAULT_KEYSPACE,
        name: DEFAULT_KEYSPACE_NAME.to_string(),
        options: options.clone(),
        log_number: versions.log_number_of(DEFAULT_KEYSPACE).unwrap_or(0),
    }];
    for (id, def) in versions.keyspace_defs() {
        let what = format!("options of keyspace {:?} in the MANIFEST", def.name);
        let recorded = Options::decode(&what, def.options.as_bytes())?;
        targets.push(ReplayTarget {
            id,
            name: def.name.clone(),
            options: keyspace_options(options, &recorded),
            log_number: versions.log_number_of(id).unwrap_or(0),
        });
    }
    Ok(targets)
}

/// Loads the key sketches TRIAD-DISK reads (the tables of L0 and of the
/// level L0 compacts into) with the tables' metadata; later tables there
/// are written by this process and carry theirs. A table whose sketch
/// cannot be read only loses deferral: an unknown overlap never defers a
/// compaction, and reads report the table's damage themselves.
fn load_l0_sketches(table_cache: &TableCache, version: &Version, options: &Options) {
    for level in Policy::triad_disk_levels(options, version).map(|l| &version.levels[l]) {
        for t in level.runs.iter().flat_map(|r| &r.tables) {
            let _unknown_overlap = table_cache.load_sketch(t);
        }
    }
}

/// The open's table cache, reading blocks through the `block_cache`
/// option's shared cache or a cache of its own of `block_cache_size`,
/// either way under a store id of this open's own. With `triad_log` the
/// cache of log fragments comes out of a cache of its own (at most half of
/// it), so the store's cache memory stays `block_cache_size`.
pub(super) fn new_table_cache(
    dir: &Path,
    fs: &Arc<dyn FileSystem>,
    options: &Options,
) -> Result<Arc<TableCache>> {
    let mut log_cache = match options.triad_log {
        true => options.triad_log_cache_size,
        false => 0,
    };
    let block_cache = match &options.block_cache {
        Some(shared) => shared.for_new_store()?,
        None => {
            // The log cache gets what the block cache gives up, no more
            // (a 16 MiB log cache beside an 8 MiB block cache cut to 4 MiB
            // held 12 MiB over `block_cache_size`).
            let own = options.block_cache_size;
            log_cache = log_cache.min(own / 2);
            BlockCache::new(own - log_cache).for_new_store()?
        }
    };
    Ok(Arc::new(
        TableCache::new(
            dir,
            fs.clone(),
            options.max_open_files,
            options.segment_descriptor_cache,
            Arc::new(block_cache),
            options.filter_policy.clone(),
            options.comparator.clone(),
        )
        .with_direct_reads(options.use_direct_reads)
        .with_metadata_charge(options.charge_table_metadata)
        .with_log_cache(log_cache, options.triad_log_compaction_batch)
        .with_compaction_readahead(options.compaction_readahead_bytes),
    ))
}

/// What an open recovered, to be assembled into a `DbInner`.
pub(super) struct Parts<'a> {
    pub dir: &'a Path,
    pub options: Options,
    pub fs: Arc<dyn FileSystem>,
    pub counters: Arc<Counters>,
    pub backings: Arc<Backings>,
    pub table_cache: Arc<TableCache>,
    pub versions: VersionSet,
    /// Every keyspace's tree, the default one first.
    pub trees: Vec<Arc<Tree>>,
    pub last_sequence: u64,
    pub log: LogWriter,
    /// The number of the log `log` writes (0: none, read-only).
    pub log_number: u64,
    pub lock: Option<Box<dyn FileLock>>,
    pub read_only: bool,
}

pub(super) fn assemble(p: Parts<'_>) -> Result<DbInner> {
    let search = start_search_pool(&p.options, &p.counters)?;
    let default = p
        .trees
        .first()
        .filter(|t| t.id == DEFAULT_KEYSPACE)
        .cloned()
        .ok_or_else(|| Error::invariant("the default keyspace comes first"))?;
    Ok(DbInner {
        dir: p.dir.to_path_buf(),
        counters: p.counters,
        table_cache: p.table_cache,
        snapshots: Arc::new(SnapshotRegistry::default()),
        last_sequence: AtomicU64::new(p.last_sequence),
        default,
        trees: RwLock::new(Arc::new(p.trees)),
        write: Ranked::new(Rank::Write, WriteState::default()),
        write_cv: Condvar::new(),
        log: Ranked::new(Rank::Log, LogState::new(p.log, p.log_number)),
        versions: Ranked::new(Rank::Versions, p.versions),
        background: Ranked::new(
            Rank::Background,
            BackgroundState {
                error: None,
                shutting_down: false,
                busy: Default::default(),
                manual_compaction: false,
                next_tree: 0,
            },
        ),
        background_cv: Condvar::new(),
        backings: p.backings,
        closed: AtomicBool::new(false),
        failed: AtomicBool::new(false),
        read_only: p.read_only,
        options: p.options,
        fs: p.fs,
        lock: Ranked::new(Rank::FileLock, p.lock),
        search,
    })
}

/// The search threads of SifrDB's parallel search: `search_threads` in
/// all, the caller's included (0: one per core); none for 1.
fn start_search_pool(
    options: &Options,
    counters: &Arc<Counters>,
) -> Result<Option<Arc<SearchPool>>> {
    let threads = match options.search_threads {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    };
    if threads <= 1 {
        return Ok(None);
    }
    SearchPool::start(threads - 1, counters.clone()).map(|p| Some(Arc::new(p)))
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
        check_stored_identity(fs, dir, options)?;
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
    options: &Options,
    counters: &Arc<Counters>,
    backings: &Arc<Backings>,
) -> Result<VersionSet> {
    let order = options.comparator.clone();
    let recovered = if exists {
        VersionSet::recover(fs.as_ref(), dir, order)?
    } else {
        VersionSet::empty(order)
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

/// What replay does with a memtable it filled.
pub(super) enum FullMemtable {
    /// Writes it as an L0 run (recorded in the replay's edit).
    Flush,
    /// Keeps it in memory, immutable (a read-only open writes nothing).
    Keep,
}

/// What log replay produced for one keyspace.
pub(super) struct ReplayedTree {
    /// The L0 runs flushed (`FullMemtable::Flush`).
    pub edit: VersionEdit,
    /// The memtables kept (`FullMemtable::Keep`), newest first.
    pub memtables: Vec<Arc<Memtable>>,
}

/// What log replay produced.
pub(super) struct Replayed {
    /// Per keyspace, in the order of the targets.
    pub trees: Vec<ReplayedTree>,
    /// The last sequence number found (or the MANIFEST's).
    pub last_sequence: u64,
}

/// Replays every log some keyspace still needs, in order, into memtables
/// that are flushed into L0 runs or kept, as `full` says. Each write goes
/// to the keyspace its batch op names, unless that keyspace is gone
/// (dropped) or flushed it already (the log is older than its log number).
pub(super) fn replay_logs(
    fs: &dyn FileSystem,
    dir: &Path,
    targets: &[ReplayTarget],
    versions: &VersionSet,
    counters: &Counters,
    full: FullMemtable,
) -> Result<Replayed> {
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
        fs,
        dir,
        counters,
        new_file_number: &numbers,
        full,
        trees: targets
            .iter()
            .map(|t| TreeReplay {
                target: t,
                mem: Arc::new(
                    Memtable::new(0, t.options.comparator.clone())
                        .with_filter(t.options.memtable_filter_bytes()),
                ),
                edit: VersionEdit::default(),
                kept: Vec::new(),
            })
            .collect(),
        log: 0,
        replayed: logs.clone(),
    };
    let mut last_sequence = versions.last_sequence();
    for &log in &logs {
        last_sequence = last_sequence.max(replay.log(log)?);
    }
    let mut trees = Vec::with_capacity(replay.trees.len());
    for i in 0..replay.trees.len() {
        replay.memtable_full(i)?;
    }
    for mut tree in replay.trees {
        tree.kept.reverse();
        trees.push(ReplayedTree {
            edit: tree.edit,
            memtables: tree.kept,
        });
    }
    Ok(Replayed {
        trees,
        last_sequence,
    })
}

/// Replays logs into memtables, flushing or keeping each full one.
struct Replay<'a> {
    fs: &'a dyn FileSystem,
    dir: &'a Path,
    counters: &'a Counters,
    new_file_number: &'a dyn Fn() -> u64,
    full: FullMemtable,
    trees: Vec<TreeReplay<'a>>,
    /// The log being replayed.
    log: u64,
    /// Every log this replay reads.
    replayed: Vec<u64>,
}

/// One keyspace's side of a replay.
struct TreeReplay<'a> {
    target: &'a ReplayTarget,
    mem: Arc<Memtable>,
    edit: VersionEdit,
    /// Memtables kept in memory, oldest first.
    kept: Vec<Arc<Memtable>>,
}

impl Replay<'_> {
    /// Replays one log; returns the last sequence number it holds. With
    /// `triad_log` a memtable holds one log's writes, so that it flushes as
    /// log tables of that log (the log becomes their data, not rewritten);
    /// the log is synced first, as the tables will rely on it.
    fn log(&mut self, number: u64) -> Result<u64> {
        let path = log_path(self.dir, number);
        let triad_log = self.trees[0].target.options.triad_log;
        if triad_log {
            for i in 0..self.trees.len() {
                self.memtable_full(i)?;
            }
            if matches!(self.full, FullMemtable::Flush) {
                self.fs.sync_file(&path)?;
            }
            self.log = number;
            for i in 0..self.trees.len() {
                self.trees[i].mem = Arc::new(self.fresh_memtable(i));
            }
        }
        let options = &self.trees[0].target.options;
        let mut reader = LogReader::new(
            self.fs.open_sequential(&path)?,
            path.clone(),
            options.wal_recovery_mode,
        );
        let mut last = 0;
        let mut record = Vec::new();
        while let Some(offset) = reader.read_record_into(&mut record)? {
            let applied = if is_relogged(&record) {
                self.relogged(number, &record, offset)
            } else {
                // A keyspace takes the writes of the logs it has not flushed.
                let mems: Vec<(u32, &Memtable)> = self
                    .trees
                    .iter()
                    .filter(|t| number >= t.target.log_number)
                    .map(|t| (t.target.id, &*t.mem))
                    .collect();
                insert_into_memtables(&mems, &record, offset, &mut [])
            };
            last = last.max(applied.map_err(|why| Error::corruption(&path, offset, why))?);
            for i in 0..self.trees.len() {
                let t = &self.trees[i];
                if t.mem.approximate_size() >= t.target.options.write_buffer_size {
                    self.memtable_full(i)?;
                }
            }
        }
        Ok(last)
    }

    /// Applies a re-logged record (TRIAD-MEM's carried entries), the
    /// record at `offset` of log `number`, to its keyspace unless the
    /// keyspace flushed this log already, or its source log is replayed
    /// into the keyspace too: that log holds every version of them, and the
    /// same entry twice in a memtable would be a duplicate key. Returns the
    /// largest sequence number applied (0 for none).
    fn relogged(
        &self,
        number: u64,
        record: &[u8],
        offset: u64,
    ) -> std::result::Result<u64, String> {
        let source = for_each_relogged(record, |_, _, _, _| ())?;
        let Some(tree) = self
            .trees
            .iter()
            .find(|t| t.target.id == source.keyspace && number >= t.target.log_number)
        else {
            return Ok(0); // dropped, or flushed
        };
        let source_replayed =
            self.replayed.contains(&source.log) && source.log >= tree.target.log_number;
        if source_replayed {
            return Ok(0);
        }
        Ok(insert_relogged(&tree.mem, record, offset)?)
    }

    /// An empty memtable of keyspace `i` for the writes of the log being
    /// replayed (with `triad_log`; otherwise for those of every log).
    fn fresh_memtable(&self, i: usize) -> Memtable {
        let options = &self.trees[i].target.options;
        Memtable::new(self.log, options.comparator.clone())
            .tracking_locations(options.triad_log)
            .with_filter(options.memtable_filter_bytes())
    }

    fn memtable_full(&mut self, i: usize) -> Result<()> {
        if self.trees[i].mem.is_empty() {
            return Ok(());
        }
        let fresh = Arc::new(self.fresh_memtable(i));
        let tree = &mut self.trees[i];
        let mem = std::mem::replace(&mut tree.mem, fresh);
        match self.full {
            // Recovery runs before any snapshot exists: only the newest
            // version of each key matters, but keep them all, as a flush does.
            FullMemtable::Flush => {
                let env = FlushEnv {
                    fs: self.fs,
                    dir: self.dir,
                    options: &tree.target.options,
                    keyspace: tree.target.id,
                    counters: self.counters,
                    new_file_number: self.new_file_number,
                };
                env.flush(mem, 0, &mut tree.edit)
            }
            FullMemtable::Keep => {
                tree.kept.push(mem);
                Ok(())
            }
        }
    }
}

/// Deletes files that no keyspace's version needs: old logs and MANIFESTs,
/// temporary files and unreferenced segments left by an interrupted flush
/// or compaction, or by a dropped keyspace.
fn sweep(fs: &dyn FileSystem, dir: &Path, versions: &VersionSet) {
    let log_number = versions.log_number();
    let mut live = std::collections::HashMap::new();
    let mut referenced = std::collections::HashSet::new();
    for (_, version) in versions.currents() {
        live.extend(version.segment_table_counts());
        referenced.extend(version.referenced_logs());
    }
    let Ok(names) = fs.list(dir) else { return };
    for name in names {
        let doomed = match parse_file_name(&name) {
            Some(FileKind::Log(n)) => n < log_number && !referenced.contains(&Backing::log(n)),
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
