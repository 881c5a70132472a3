//! A chunk: a key range and its funk, one table (sorted, immutable) plus an
//! append-only chunk log in the log record format whose records are write
//! batches (`docs/format.md`, *Chunk log*). The log is newer than the
//! table: a get asks the log first (through its partitioned filters), then
//! the table.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};

use super::files::{chunk_log_path, funk_table_path};
use super::log_filter::LogFilters;
use super::munk::Munk;
use crate::db::batch::{DecodedBatch, OpKind};
use crate::db::search::{probe_table, Probe};
use crate::error::{Error, Result};
use crate::format::internal_key::{InternalKey, ValueKind};
use crate::format::range_tombstone::{Fragments, RangeTombstone};
use crate::io::FileSystem;
use crate::iterator::InternalIterator;
use crate::log::{LogReader, LogWriter, RandomAccessLogReader, RecoveryMode};
use crate::memtable::RangeDels;
use crate::stats::Counters;
use crate::table::{Table, TableContext};

/// An internal key and its value.
pub(super) type Entry = (Vec<u8>, Vec<u8>);

/// What a lookup found for a key.
pub(super) enum Found {
    Value(Vec<u8>),
    Deleted,
    Absent,
}

/// One write of a put or delete, as a log record holds it.
pub(super) struct LogEntry {
    pub sequence: u64,
    pub kind: ValueKind,
    pub key: Vec<u8>,
    pub value: Vec<u8>,
}

impl LogEntry {
    /// The entry as an internal key and its value.
    pub fn into_entry(self) -> Entry {
        let key = InternalKey::new(&self.key, self.sequence, self.kind).into_vec();
        (key, self.value)
    }
}

/// A chunk log: appended under its chunk's `append_lock`, read by anyone up
/// to the records its filters list (each complete before it is listed).
pub(super) struct ChunkLog {
    pub number: u64,
    path: PathBuf,
    reader: RandomAccessLogReader,
    /// `None` in a read-only store.
    writer: Mutex<Option<LogWriter>>,
    filters: RwLock<LogFilters>,
    /// The range tombstones of its records (clipped to the chunk).
    range_dels: RangeDels,
    /// Bytes of complete records.
    len: AtomicU64,
    /// Appends not synced yet.
    dirty: AtomicBool,
}

impl ChunkLog {
    /// Creates an empty log (the caller syncs the directory).
    pub fn create(
        fs: &dyn FileSystem,
        dir: &std::path::Path,
        number: u64,
        filters: LogFilters,
    ) -> Result<ChunkLog> {
        let path = chunk_log_path(dir, number);
        let writer = LogWriter::new(fs.create(&path)?);
        let reader = RandomAccessLogReader::new(fs.open_random(&path)?, path.clone());
        Ok(ChunkLog {
            number,
            path,
            reader,
            writer: Mutex::new(Some(writer)),
            filters: RwLock::new(filters),
            range_dels: RangeDels::default(),
            len: AtomicU64::new(0),
            dirty: AtomicBool::new(false),
        })
    }

    /// Opens an existing log: one pass lists its records in `filters` and
    /// finds its last sequence number. Returns the log, that sequence and
    /// whether the file ends in a torn record (to be rewritten before the
    /// log is appended to).
    pub fn open(
        fs: &dyn FileSystem,
        dir: &std::path::Path,
        number: u64,
        mut filters: LogFilters,
        mode: RecoveryMode,
    ) -> Result<(ChunkLog, u64, bool)> {
        let path = chunk_log_path(dir, number);
        let mut reader = LogReader::new(fs.open_sequential(&path)?, path.clone(), mode);
        let range_dels = RangeDels::default();
        let mut last_sequence = 0;
        let mut record = Vec::new();
        while let Some(offset) = reader.read_record_into(&mut record)? {
            let index = RecordIndex::of(&path, offset, &record)?;
            filters.add_record(offset, index.keys.iter().copied());
            index.add_range_deletions(&range_dels);
            last_sequence = index.last_sequence;
        }
        let torn = reader.dropped_tail().is_some() || !reader.skipped().is_empty();
        // Without a torn tail every byte belongs to a complete record; a
        // torn log is rewritten before it is appended to.
        let end = fs.file_size(&path)?;
        let log = ChunkLog {
            number,
            reader: RandomAccessLogReader::new(fs.open_random(&path)?, path.clone()),
            path,
            writer: Mutex::new(None),
            filters: RwLock::new(filters),
            range_dels,
            len: AtomicU64::new(end),
            dirty: AtomicBool::new(false),
        };
        Ok((log, last_sequence, torn))
    }

    /// Makes an opened log appendable at its end (a no-op for a log
    /// created by this process).
    pub fn reopen_for_append(&self, fs: &dyn FileSystem) -> Result<()> {
        let mut writer = self.writer.lock();
        if writer.is_none() {
            *writer = Some(LogWriter::new(fs.open_append(&self.path)?));
        }
        Ok(())
    }

    /// Bytes of complete records.
    pub fn len(&self) -> u64 {
        self.len.load(Ordering::Acquire)
    }

    /// Appends one batch record; syncs it when `sync`. Returns the bytes
    /// written.
    pub fn append(&self, record: &[u8], sync: bool) -> Result<u64> {
        let index = RecordIndex::of(&self.path, 0, record)?;
        let mut writer = self.writer.lock();
        let writer = writer
            .as_mut()
            .ok_or_else(|| Error::ReadOnly("write".into()))?;
        let before = writer.len();
        let offset = writer.add_record(record)?;
        writer.flush()?;
        if sync {
            writer.sync()?;
        } else {
            self.dirty.store(true, Ordering::Release);
        }
        let after = writer.len();
        self.filters
            .write()
            .add_record(offset, index.keys.iter().copied());
        index.add_range_deletions(&self.range_dels);
        self.len.store(after, Ordering::Release);
        Ok(after - before)
    }

    /// Syncs what was appended.
    pub fn sync(&self) -> Result<()> {
        match self.writer.lock().as_mut() {
            Some(w) => w
                .sync()
                .map(|()| self.dirty.store(false, Ordering::Release)),
            None => Ok(()),
        }
    }

    /// Syncs the log if an append since the last sync was not; returns
    /// whether it did.
    pub fn sync_if_dirty(&self) -> Result<bool> {
        if !self.dirty.load(Ordering::Acquire) {
            return Ok(false);
        }
        self.sync().map(|()| true)
    }

    /// The newest version of `key` at `sequence` the log holds, if any,
    /// with its sequence number: only the parts whose filter admits the
    /// key are read, newest first. Range tombstones are not applied.
    pub fn get(
        &self,
        key: &[u8],
        sequence: u64,
        counters: &Counters,
    ) -> Result<Option<(u64, Found)>> {
        let filters = self.filters.read();
        let mut record = Vec::new();
        for part in filters.candidates(key) {
            Counters::add(&counters.chunk_log_parts_searched, 1);
            for &offset in part.iter().rev() {
                self.reader.read_record_at_into(offset, &mut record)?;
                let batch = parse(&self.path, offset, &record)?;
                if batch.first_sequence > sequence {
                    continue;
                }
                let mut found = None;
                let mut seq = batch.first_sequence;
                batch
                    .for_each(|op| {
                        if seq <= sequence && op.key == key {
                            match op.kind {
                                OpKind::Point(ValueKind::Value) => {
                                    found = Some((seq, Found::Value(op.value.to_vec())))
                                }
                                OpKind::Point(ValueKind::Deletion) => {
                                    found = Some((seq, Found::Deleted))
                                }
                                OpKind::RangeDeletion => {}
                            }
                        }
                        seq += 1;
                    })
                    .map_err(|why| Error::corruption(&self.path, offset, why))?;
                if found.is_some() {
                    return Ok(found);
                }
            }
        }
        Ok(None)
    }

    /// The log's range tombstones, fragmented (all of them: readers filter
    /// by their snapshot).
    pub fn range_deletions(&self) -> Arc<Fragments> {
        self.range_dels.fragments()
    }

    /// Every point entry at or below `sequence`, in log order (range
    /// tombstones: `range_deletions`).
    pub fn entries(&self, sequence: u64) -> Result<Vec<LogEntry>> {
        let offsets: Vec<u64> = {
            let filters = self.filters.read();
            filters.all_records().collect()
        };
        let mut out = Vec::new();
        let mut record = Vec::new();
        for offset in offsets {
            self.reader.read_record_at_into(offset, &mut record)?;
            let batch = parse(&self.path, offset, &record)?;
            let mut seq = batch.first_sequence;
            batch
                .for_each(|op| {
                    if let (OpKind::Point(kind), true) = (op.kind, seq <= sequence) {
                        out.push(LogEntry {
                            sequence: seq,
                            kind,
                            key: op.key.to_vec(),
                            value: op.value.to_vec(),
                        });
                    }
                    seq += 1;
                })
                .map_err(|why| Error::corruption(&self.path, offset, why))?;
        }
        Ok(out)
    }

    /// Every record's payload, in log order (to rewrite a torn log).
    pub fn records(&self) -> Result<Vec<Vec<u8>>> {
        self.records_from(0)
    }

    /// The payloads of the records from the `skip`-th on, in log order
    /// (a funk rebalance reads the log once to build, then the tail
    /// appended since).
    pub fn records_from(&self, skip: usize) -> Result<Vec<Vec<u8>>> {
        let offsets: Vec<u64> = self.filters.read().all_records().skip(skip).collect();
        offsets
            .into_iter()
            .map(|o| self.reader.read_record_at(o))
            .collect()
    }

    /// Memory the log's filters take.
    pub fn filter_bytes(&self) -> usize {
        self.filters.read().memory_bytes()
    }
}

fn parse<'a>(path: &std::path::Path, offset: u64, record: &'a [u8]) -> Result<DecodedBatch<'a>> {
    let batch = DecodedBatch::parse(record).map_err(|why| Error::corruption(path, offset, why))?;
    if batch.first_sequence == 0 {
        return Err(Error::corruption(
            path,
            offset,
            "chunk log record with sequence 0",
        ));
    }
    Ok(batch)
}

/// What a record adds to its log's indexes: the keys it updates (for the
/// filters), its range tombstones, its last sequence number.
struct RecordIndex<'a> {
    keys: Vec<&'a [u8]>,
    tombstones: Vec<RangeTombstone>,
    last_sequence: u64,
}

impl<'a> RecordIndex<'a> {
    /// Indexes the record at `offset` of the log `path`.
    fn of(path: &std::path::Path, offset: u64, record: &'a [u8]) -> Result<RecordIndex<'a>> {
        let batch = parse(path, offset, record)?;
        let mut index = RecordIndex {
            keys: Vec::with_capacity(batch.count as usize),
            tombstones: Vec::new(),
            last_sequence: batch.first_sequence + u64::from(batch.count).saturating_sub(1),
        };
        let mut seq = batch.first_sequence;
        batch
            .for_each(|op| {
                match op.kind {
                    OpKind::Point(_) => index.keys.push(op.key),
                    OpKind::RangeDeletion => index.tombstones.push(RangeTombstone {
                        start: op.key.to_vec(),
                        end: op.value.to_vec(),
                        seq,
                    }),
                }
                seq += 1;
            })
            .map_err(|why| Error::corruption(path, offset, why))?;
        Ok(index)
    }

    fn add_range_deletions(&self, to: &RangeDels) {
        for t in &self.tombstones {
            to.insert(t.seq, &t.start, &t.end);
        }
    }
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
    /// Held (taken with `try_lock`) by the one thread building a new funk
    /// for the chunk; the others go on without waiting for the build.
    pub funk_change_lock: Mutex<()>,
    pub table: Option<Arc<Table>>,
    pub table_number: u64,
    pub log: ChunkLog,
    /// The munk cache's LFU score (`munk.rs`).
    pub heat: AtomicU64,
    munk: RwLock<Option<Arc<Munk>>>,
    /// Set when a rebalance replaced this chunk: its files are deleted on
    /// drop.
    retired: AtomicBool,
    fs: Arc<dyn FileSystem>,
    dir: PathBuf,
}

impl Chunk {
    pub fn new(
        start: Vec<u8>,
        table: Option<(u64, Arc<Table>)>,
        log: ChunkLog,
        fs: Arc<dyn FileSystem>,
        dir: PathBuf,
    ) -> Chunk {
        let (table_number, table) = match table {
            Some((n, t)) => (n, Some(t)),
            None => (0, None),
        };
        Chunk {
            start,
            rebalance_lock: RwLock::new(()),
            append_lock: Mutex::new(()),
            funk_change_lock: Mutex::new(()),
            table,
            table_number,
            log,
            heat: AtomicU64::new(0),
            munk: RwLock::new(None),
            retired: AtomicBool::new(false),
            fs,
            dir,
        }
    }

    /// Marks the chunk replaced: its files go once nobody reads it.
    pub fn retire(&self) {
        self.retired.store(true, Ordering::Release);
    }

    /// Whether a rebalance replaced the chunk.
    pub fn is_retired(&self) -> bool {
        self.retired.load(Ordering::Acquire)
    }

    /// The chunk's munk, if resident.
    pub fn munk(&self) -> Option<Arc<Munk>> {
        self.munk.read().clone()
    }

    /// Replaces the munk, returning the old one.
    pub fn set_munk(&self, munk: Option<Arc<Munk>>) -> Option<Arc<Munk>> {
        std::mem::replace(&mut *self.munk.write(), munk)
    }

    /// Every point entry of the table, then of the log (unsorted), and
    /// every range tombstone of both, fragmented.
    /// REQUIRES: the chunk's `append_lock` (no append is half-way).
    pub fn contents(&self) -> Result<(Vec<Entry>, Fragments)> {
        let mut entries = self.table_entries()?;
        entries.extend(
            self.log
                .entries(u64::MAX)?
                .into_iter()
                .map(LogEntry::into_entry),
        );
        let log = self.log.range_deletions();
        let tombstones = match &self.table {
            Some(t) if !t.range_deletions().is_empty() => {
                let all: Vec<RangeTombstone> = t
                    .range_deletions()
                    .tombstones()
                    .chain(log.tombstones())
                    .collect();
                Fragments::fragment(&all)
            }
            _ => (*log).clone(),
        };
        Ok((entries, tombstones))
    }

    /// Every entry of the table, sorted.
    pub fn table_entries(&self) -> Result<Vec<Entry>> {
        let mut entries = Vec::new();
        if let Some(table) = &self.table {
            let mut it = table.iter_with(false);
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
        let covered = self.log.range_dels.covering_seq(key, sequence);
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
        let Some(table) = &self.table else {
            return Ok(Found::Absent);
        };
        let lookup = InternalKey::new(key, sequence, ValueKind::SEEK);
        Ok(
            match probe_table(table, lookup.encoded(), true, <[u8]>::to_vec)? {
                Probe::Found(v) => Found::Value(v),
                Probe::Deleted => Found::Deleted,
                Probe::Absent => Found::Absent,
            },
        )
    }
}

impl Drop for Chunk {
    fn drop(&mut self) {
        if self.retired.load(Ordering::Acquire) {
            // A file left behind is removed by the next open's sweep.
            if self.table_number != 0 {
                let _ = self
                    .fs
                    .remove(&funk_table_path(&self.dir, self.table_number));
            }
            let _ = self.fs.remove(&chunk_log_path(&self.dir, self.log.number));
        }
    }
}

/// Opens the funk table `number` in `context`.
pub(super) fn open_table(
    fs: &dyn FileSystem,
    dir: &std::path::Path,
    number: u64,
    context: TableContext,
) -> Result<Arc<Table>> {
    let path = funk_table_path(dir, number);
    let file = fs.open_random(&path)?;
    let len = file.len()?;
    Ok(Arc::new(Table::open(file, path, number, 0, len, context)?))
}
