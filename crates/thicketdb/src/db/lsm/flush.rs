//! Flushing memtables into L0: the one path shared by the flush thread and
//! by recovery, which replays logs into memtables and flushes them too.

use std::collections::HashSet;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::flush_sync::{flush_needs_synced_log, sync_logs_released};
use super::lock_order::RankedGuard;
use super::log_table::LogAddresses;
use super::relog::relog;
use super::super_version::install;
use super::tree::Tree;
use super::{BackgroundState, DbInner};
use crate::compaction::drop_rule::DropRule;
use crate::compaction::output::{OutputSink, OutputSpec};
use crate::compaction::Claim;
use crate::error::Result;
use crate::format::internal_key::user_key;
use crate::format::range_tombstone::Fragments;
use crate::io::FileSystem;
use crate::iterator::InternalIterator;
use crate::memtable::hot::{hottest, keys_of};
use crate::memtable::{Memtable, MemtableIterator};
use crate::options::Options;
use crate::stats::Counters;
use crate::version::{Version, VersionEdit};

/// What writing a memtable needs, whoever flushes it.
pub(crate) struct FlushEnv<'a> {
    pub fs: &'a dyn FileSystem,
    pub dir: &'a Path,
    pub options: &'a Options,
    /// The keyspace the tables are for (recorded in their properties).
    pub keyspace: u32,
    pub counters: &'a Counters,
    pub new_file_number: &'a dyn Fn() -> u64,
}

impl FlushEnv<'_> {
    /// Writes `mem` as one new L0 run, recorded in `edit`, and counts the
    /// flush. Versions older than `smallest_snapshot` that a newer version
    /// shadows are dropped.
    pub fn flush(
        &self,
        mem: Arc<Memtable>,
        smallest_snapshot: u64,
        edit: &mut VersionEdit,
    ) -> Result<()> {
        self.flush_cold(mem, smallest_snapshot, &HashSet::new(), edit)
    }

    /// [`FlushEnv::flush`] without the user keys in `hot` (TRIAD-MEM keeps
    /// them in memory). With `triad_log` (and every entry's place in the
    /// log known) the run is of log tables: keys and the addresses of their
    /// values in the memtable's log, which the tables then keep alive; the
    /// flush thread synced the log first (`flush_sync.rs`; recovery syncs
    /// what it replays).
    pub fn flush_cold(
        &self,
        mem: Arc<Memtable>,
        smallest_snapshot: u64,
        hot: &HashSet<Vec<u8>>,
        edit: &mut VersionEdit,
    ) -> Result<()> {
        let range_dels = Fragments::clone(&mem.range_deletions());
        let log_table = self.options.triad_log && mem.values_located();
        let mut table_options = self.options.table_options();
        table_options.keyspace = self.keyspace;
        if log_table {
            table_options.log_refs = Some(vec![mem.log_number()]);
        }
        let mut addresses = LogAddresses::new(mem.clone());
        // The current entry's key and value bytes, read while deciding to
        // keep it (the walk owns `addresses` meanwhile).
        let entry_bytes = addresses.entry_bytes();
        let mut values = MemtableIterator::new(mem);
        let source: &mut dyn InternalIterator = match log_table {
            true => &mut addresses,
            false => &mut values,
        };
        source.seek_to_first();
        let mut rule = DropRule::new(smallest_snapshot, |_: &[u8]| false)
            .with_range_deletions(range_dels.clone());
        let mut live_bytes = 0;
        let mut keep = |k: &[u8]| {
            let kept = (hot.is_empty() || !hot.contains(user_key(k))) && rule.keep(k);
            if kept {
                live_bytes += entry_bytes.load(Ordering::Relaxed);
            }
            kept
        };
        let mut sink = OutputSink::new(OutputSpec {
            fs: self.fs,
            dir: self.dir,
            table_options,
            target_table_size: if self.options.flush_one_table {
                u64::MAX
            } else {
                self.options.target_table_size
            },
            segment_tables: self.options.segment_tables(),
            new_file_number: self.new_file_number,
            direct_writes: self.options.use_direct_io_for_flush_and_compaction,
            stop: None,
        });
        // Older tables may hold what the tombstones delete: all stay.
        sink.set_range_deletions(range_dels, None);
        sink.add_stream(source, &mut keep)?;
        let output = sink.finish()?;
        let c = self.counters;
        if log_table {
            Counters::add(&c.log_table_bytes, output.bytes);
            Counters::add(&c.log_table_data_bytes, addresses.data_end());
            Counters::add(&c.log_table_live_bytes, live_bytes);
        }
        Counters::add(&c.flushes, 1);
        Counters::add(&c.flush_bytes_written, output.bytes);
        Counters::add(&c.fsyncs_flush, output.syncs);
        c.level_written(0, output.bytes);
        let run = (self.new_file_number)();
        for t in output.tables {
            edit.add_table(0, run, t);
        }
        Ok(())
    }
}

/// The flush thread's job: writes the oldest immutable memtable to L0,
/// commits it with the log number recovery must start from, and drops it
/// (and with it the reference to its log).
///
/// A flush that needs its memtable's log durable (TRIAD, several
/// keyspaces) first syncs the logs switches left unsynced, with the log
/// released (`flush_sync.rs`).
///
/// With `triad_mem` the hottest keys stay in memory: their newest versions
/// are re-logged into the active log (synced) and inserted into the active
/// memtable first, then only the cold keys are written, then the edit lets
/// the flushed memtable's log go. A crash before the edit replays the old
/// log (and skips the re-logged record, which it supersedes); a crash after
/// it replays the re-logged record. Either way every acknowledged write is
/// recovered, and the carried versions are durable before any later write
/// the flushed table holds could be, so what survives is a prefix.
/// REQUIRES: called by the flush thread only (it flushes the oldest
/// immutable memtable; nothing else removes one). Takes `versions`.
///
/// Across keyspaces it takes the immutable memtable on the oldest log, so
/// logs are let go in order and every keyspace gets its turn.
pub(crate) fn flush_oldest(inner: &Arc<DbInner>) -> Result<()> {
    let oldest = inner
        .trees()
        .iter()
        .filter_map(|tree| {
            let imm = tree.super_version().imms.last().cloned()?;
            Some((tree.clone(), imm))
        })
        .min_by_key(|(_, imm)| imm.log_number());
    let Some((tree, imm)) = oldest else {
        return Ok(());
    };
    let latest = inner.last_sequence.load(Ordering::Acquire);
    let numbers = || inner.versions.lock().new_file_number();
    let env = FlushEnv {
        fs: inner.fs.as_ref(),
        dir: &inner.dir,
        options: &tree.options,
        keyspace: tree.id,
        counters: &inner.counters,
        new_file_number: &numbers,
    };
    let mut edit = VersionEdit {
        keyspace: tree.id,
        ..VersionEdit::default()
    };
    // The switch left `imm`'s log unsynced; a log table keeps its values
    // there and a re-logged record must not outlive it.
    if flush_needs_synced_log(inner) {
        sync_logs_released(inner, false)?;
    }
    let smallest_snapshot = inner.snapshots.oldest(&inner.last_sequence);
    let hot = if tree.options.triad_mem {
        let k = hot_key_count(&tree.options, &imm);
        hottest(&imm, k, smallest_snapshot)
    } else {
        Vec::new()
    };
    // Carried first: which keys stay is settled under `log` (see `relog`).
    let hot = if hot.is_empty() {
        hot
    } else {
        relog(inner, &tree, &imm, hot)?
    };
    Counters::add(&inner.counters.hot_entries_kept, hot.len() as u64);
    env.flush_cold(imm.clone(), smallest_snapshot, &keys_of(&hot), &mut edit)?;
    edit.last_sequence = Some(latest);
    let mut versions = inner.versions.lock();
    // The oldest memtable still unflushed decides which logs are needed.
    let now = tree.super_version();
    let still_needed = now
        .imms
        .iter()
        .rev()
        .find(|m| !Arc::ptr_eq(m, &imm))
        .unwrap_or(&now.mem);
    edit.log_number = Some(still_needed.log_number());
    let Some(current) = versions.current_of(tree.id) else {
        // Dropped meanwhile: the tables written are garbage for open's sweep.
        return Ok(());
    };
    let placed = place_flushed_run(inner, &tree, &current, &mut edit, || {
        versions.new_file_number()
    });
    if let Some(version) = versions.log_and_apply(edit)? {
        install(&tree, version, Some(&imm));
    }
    drop(placed);
    Ok(())
}

/// Moves the flushed run below L0 where the policy says (LevelDB's
/// `PickLevelForMemTableOutput`), into that level's run or a new one.
/// Returns the `background` guard to hold until the edit is installed, so
/// that no task is picked against the version without the placed run.
/// REQUIRES: `inner.versions` held. Takes `background`.
fn place_flushed_run<'a>(
    inner: &'a DbInner,
    tree: &Tree,
    current: &Version,
    edit: &mut VersionEdit,
    new_run: impl FnOnce() -> u64,
) -> Option<RankedGuard<'a, BackgroundState>> {
    let (first, last) = (edit.new_tables.first()?, edit.new_tables.last()?);
    if first.meta.is_log_table() {
        return None; // log tables stay in L0 (TRIAD-LOG)
    }
    let (smallest, largest) = (first.meta.smallest_user_key(), last.meta.largest_user_key());
    let (level, run) = tree.policy.flush_target(current, smallest, largest)?;
    // Running tasks may be moving data into this range of the levels
    // above (older data would then sit over the flushed run) or reading
    // the run it joins; a manual compaction holds no claims at all.
    let runs: Vec<u64> = (1..=level)
        .map(|l| current.levels[l].runs.first().map_or(0, |r| r.id))
        .collect();
    let mut bg = inner.background.lock();
    if bg.manual_compaction
        || !bg
            .busy_in(tree)
            .admits(&Claim::flush_placement(&runs, smallest, largest))
    {
        return None;
    }
    let run = if run == 0 { new_run() } else { run };
    for t in &mut edit.new_tables {
        t.level = level;
        t.run = run;
    }
    Some(bg)
}
/// TRIAD-MEM's K (Algorithm 2's `hotKeyCount = sizeof(Memtable) *
/// PERC_HOT / sizeof(Entry)`): `triad_hot_fraction` of the entries a full
/// memtable holds, at `mem`'s average entry size. A memtable updated in
/// place holds each key once and may be flushed before it is full (its
/// log full, or another keyspace's memtable), so its own entry count would
/// shrink K with the skew it should exploit.
pub(crate) fn hot_key_count(options: &Options, mem: &Memtable) -> usize {
    let fill = mem.approximate_size().max(1) as f64 / options.write_buffer_size as f64;
    let entries = mem.len() as f64 / fill.min(1.0);
    (options.triad_hot_fraction * entries) as usize
}
