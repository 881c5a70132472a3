//! A chunk: a key range and its funk, one table (sorted, immutable) plus an
//! append-only chunk log in the log record format whose records are write
//! batches (`docs/format.md`, *Chunk log*). The log is newer than the
//! table: a get asks the log first (through its partitioned filters), then
//! the table.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};

pub(super) use super::chunk_log::{ChunkLog, LogEntry};
use super::files::{chunk_log_path, funk_table_path};
use super::funk_tables::{FunkTable, FunkTables};
use super::heat::Heat;
use super::munk::Munk;
use super::pending::Pending;
use super::table_filter::Unignored;
use crate::db::probe::{probe_table, Probe};
use crate::error::Result;
use crate::format::internal_key::{InternalKey, ValueKind};
use crate::format::range_tombstone::{Fragments, RangeTombstone};
use crate::iterator::InternalIterator;
use crate::stats::Counters;
use crate::table::Table;

/// An internal key and its value.
pub(super) type Entry = (Vec<u8>, Vec<u8>);

/// What a lookup found for a key.
pub(super) enum Found {
    Value(Vec<u8>),
    Deleted,
    Absent,
}

/// A chunk: the keys from `start` up to the next chunk's start, and its
/// funk. Replaced whole by a rebalance; the replaced chunk's files go when
/// the last reader drops it.
///
/// Lock order (`docs/architecture.md`, *Chunked layout*): the
/// `funk_change_lock`, then `rebalance_lock`s (of several chunks: in chunk
/// order), then `append_lock`s (likewise), then the store's metadata lock.
pub(super) struct Chunk {
    pub start: Vec<u8>,
    /// Puts hold it shared while they append; a rebalance holds it
    /// exclusively for its switch only (the chunk is then immutable).
    /// Gets and scans take no lock.
    pub rebalance_lock: RwLock<()>,
    /// Serialises the chunk's appends: sequence numbers are taken under
    /// it, so the log (and the munk) receive them in order.
    pub append_lock: Mutex<()>,
    /// The chunk's slot in the pending-operations array (`pending.rs`).
    pub pending: Pending,
    /// Held (taken with `try_lock`) by the one thread building a new funk
    /// for the chunk; the others go on without waiting for the build.
    pub funk_change_lock: Mutex<()>,
    /// Set while the chunk waits in the build queue or is built by a
    /// build thread, so that it is queued once (`build_queue.rs`).
    pub build_queued: AtomicBool,
    /// The bytes its log held when a switch made it: the tail of puts
    /// its build did not merge (0 for a chunk opened from disk).
    pub tail_bytes: u64,
    /// Opened through `tables` when read.
    pub table: Option<FunkTable>,
    pub log: ChunkLog,
    /// The munk cache's LFU score (`munk.rs`): its accesses, decayed.
    pub heat: Heat,
    /// Its writes among them, decayed alike: the log limit adapts to
    /// their share (`chunk_space::adaptive_limit`).
    pub write_heat: Heat,
    munk: RwLock<Option<Arc<Munk>>>,
    /// Set when a rebalance replaced this chunk: its files are deleted on
    /// drop.
    retired: AtomicBool,
    tables: Arc<FunkTables>,
}

impl Chunk {
    pub fn new(
        start: Vec<u8>,
        table: Option<FunkTable>,
        log: ChunkLog,
        tables: Arc<FunkTables>,
    ) -> Chunk {
        Chunk {
            start,
            rebalance_lock: RwLock::new(()),
            append_lock: Mutex::new(()),
            pending: Pending::default(),
            funk_change_lock: Mutex::new(()),
            build_queued: AtomicBool::new(false),
            tail_bytes: 0,
            table,
            log,
            heat: Heat::default(),
            write_heat: Heat::default(),
            munk: RwLock::new(None),
            retired: AtomicBool::new(false),
            tables,
        }
    }

    /// The funk table, opened now unless the store has it open.
    pub fn open_table(&self) -> Result<Option<Arc<Table>>> {
        self.table.map(|t| self.tables.open(t)).transpose()
    }

    /// The funk table's number (0: none).
    pub fn table_number(&self) -> u64 {
        self.table.map_or(0, |t| t.number)
    }

    /// The funk table's length in bytes (0: none).
    pub fn table_length(&self) -> u64 {
        self.table.map_or(0, |t| t.length)
    }

    /// Marks the chunk replaced: its files go once nobody reads it.
    pub fn retire(&self) {
        self.retired.store(true, Ordering::Release);
    }

    /// Whether a rebalance replaced the chunk.
    pub fn is_retired(&self) -> bool {
        self.retired.load(Ordering::Acquire)
    }

    /// Returns once every write to the chunk numbered up to `sequence`
    /// (handed out already) is complete (`pending.rs`).
    /// REQUIRES: the caller holds no `append_lock`.
    pub fn settle(&self, sequence: u64) {
        self.pending.settle(sequence, &self.append_lock);
    }

    /// The chunk's munk, if resident.
    pub fn munk(&self) -> Option<Arc<Munk>> {
        self.munk.read().clone()
    }

    /// Replaces the munk, returning the old one.
    pub fn set_munk(&self, munk: Option<Arc<Munk>>) -> Option<Arc<Munk>> {
        std::mem::replace(&mut *self.munk.write(), munk)
    }

    /// The point entries of the table that a reader at `live` or later
    /// may read (not the versions a table keeps for a crash's sake below
    /// a key's newest at or below `live`: `rebalance::build`), then every
    /// one of the log (unsorted), and every range tombstone of both,
    /// fragmented.
    /// REQUIRES: the chunk's `append_lock` (no append is half-way).
    pub fn contents(&self, live: u64) -> Result<(Vec<Entry>, Fragments)> {
        let table = self.table_entries()?;
        let log = self.log.range_deletions()?;
        let tombstones = match self.table_range_deletions()? {
            Some(table) if !table.is_empty() => {
                let all: Vec<RangeTombstone> = table.tombstones().chain(log.tombstones()).collect();
                Fragments::fragment(&all)
            }
            _ => (*log).clone(),
        };
        // Every version in the log is newer than the table's: the table's
        // entries alone tell which of them nobody reads.
        let mut entries = super::rebalance::drop_unneeded(table, live, &tombstones);
        entries.extend(
            self.log
                .entries(u64::MAX)?
                .into_iter()
                .map(LogEntry::into_entry),
        );
        Ok((entries, tombstones))
    }

    /// The table's range tombstones (but those recovery ignores).
    pub fn table_range_deletions(&self) -> Result<Option<Arc<Fragments>>> {
        let incarnations = self.tables.incarnations();
        Ok(self
            .open_table()?
            .map(|t| super::table_filter::range_deletions(&t, incarnations)))
    }

    /// A cursor over the table's entries (but those recovery ignores).
    pub fn table_iter(&self, fill_cache: bool) -> Result<Option<Box<dyn InternalIterator>>> {
        let incarnations = self.tables.incarnations();
        Ok(self.open_table()?.map(|t| {
            let it = t.iter_with(fill_cache);
            match incarnations.ignores_any() {
                true => {
                    Box::new(Unignored::new(it, incarnations.clone())) as Box<dyn InternalIterator>
                }
                false => Box::new(it),
            }
        }))
    }

    /// Every entry of the table (but those recovery ignores), sorted.
    pub fn table_entries(&self) -> Result<Vec<Entry>> {
        let mut entries = Vec::new();
        if let Some(mut it) = self.table_iter(false)? {
            it.seek_to_first();
            while it.valid() {
                entries.push((it.key().to_vec(), it.value().to_vec()));
                it.next();
            }
            it.status()?;
        }
        Ok(entries)
    }

    /// The newest version of `key` at `sequence`: the log, then the table
    /// (every version in the log is newer than the table's), each with the
    /// range tombstones it holds.
    pub fn get(&self, key: &[u8], sequence: u64, counters: &Counters) -> Result<Found> {
        let covered = self.log.covering_seq(key, sequence)?;
        match self.log.get(key, sequence, counters)? {
            Some((seq, found)) => {
                Counters::add(&counters.chunk_gets_from_log, 1);
                return Ok(if seq > covered { found } else { Found::Deleted });
            }
            None if covered > 0 => {
                Counters::add(&counters.chunk_gets_from_log, 1);
                return Ok(Found::Deleted);
            }
            None => {}
        }
        Counters::add(&counters.chunk_gets_from_table, 1);
        let Some(table) = self.open_table()? else {
            return Ok(Found::Absent);
        };
        let incarnations = self.tables.incarnations();
        let probe = match incarnations.ignores_any() {
            true => super::table_filter::probe(&table, key, sequence, incarnations)?,
            false => {
                let lookup = InternalKey::new(key, sequence, ValueKind::SEEK);
                probe_table(&table, lookup.encoded(), true, <[u8]>::to_vec)?
            }
        };
        Ok(match probe {
            Probe::Found(v) => Found::Value(v),
            Probe::Deleted => Found::Deleted,
            Probe::Absent => Found::Absent,
        })
    }
}

impl Drop for Chunk {
    fn drop(&mut self) {
        if self.retired.load(Ordering::Acquire) {
            // A file left behind is removed by the next open's sweep.
            let (fs, dir) = (self.tables.fs(), self.tables.dir());
            if let Some(table) = self.table {
                self.tables.forget(table.number);
                let _ = fs.remove(&funk_table_path(dir, table.number));
            }
            let _ = fs.remove(&chunk_log_path(dir, self.log.number));
        }
    }
}
