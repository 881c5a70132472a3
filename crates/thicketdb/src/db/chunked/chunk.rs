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
use crate::error::{Error, Result};
use crate::format::internal_key::{InternalKey, ParsedKey, ValueKind};
use crate::io::FileSystem;
use crate::iterator::InternalIterator;
use crate::log::{LogReader, LogWriter, RandomAccessLogReader, RecoveryMode};
use crate::stats::Counters;
use crate::table::{Table, TableContext};

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
    pub fn into_entry(self) -> (Vec<u8>, Vec<u8>) {
        let key = InternalKey::new(&self.key, self.sequence, self.kind).into_vec();
        (key, self.value)
    }
}

/// A chunk log: appended under the store's write lock, read by anyone up
/// to the records its filters list (each complete before it is listed).
pub(super) struct ChunkLog {
    pub number: u64,
    path: PathBuf,
    reader: RandomAccessLogReader,
    /// `None` in a read-only store.
    writer: Mutex<Option<LogWriter>>,
    filters: RwLock<LogFilters>,
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
        let mut last_sequence = 0;
        let mut record = Vec::new();
        while let Some(offset) = reader.read_record_into(&mut record)? {
            let batch = parse(&path, offset, &record)?;
            let mut keys = Vec::new();
            batch
                .for_each(|op| keys.push(op.key))
                .map_err(|why| Error::corruption(&path, offset, why))?;
            filters.add_record(offset, keys);
            last_sequence = batch.first_sequence + u64::from(batch.count).saturating_sub(1);
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

    /// Appends one batch record holding `keys`; syncs it when `sync`.
    /// Returns the bytes written.
    pub fn append(&self, record: &[u8], keys: &[&[u8]], sync: bool) -> Result<u64> {
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
            .add_record(offset, keys.iter().copied());
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

    /// The newest version of `key` at `sequence` the log holds, if any:
    /// only the parts whose filter admits the key are read, newest first.
    pub fn get(&self, key: &[u8], sequence: u64, counters: &Counters) -> Result<Option<Found>> {
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
                            found = Some(match op.kind {
                                OpKind::Point(ValueKind::Value) => Found::Value(op.value.to_vec()),
                                _ => Found::Deleted,
                            });
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

    /// Every entry at or below `sequence`, in log order.
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
                    if seq <= sequence {
                        out.push(LogEntry {
                            sequence: seq,
                            kind: match op.kind {
                                OpKind::Point(kind) => kind,
                                OpKind::RangeDeletion => ValueKind::Deletion,
                            },
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
        let offsets: Vec<u64> = self.filters.read().all_records().collect();
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

/// A chunk: the keys from `start` up to the next chunk's start, and its
/// funk. Replaced whole by a rebalance; the replaced chunk's files go when
/// the last reader drops it.
pub(super) struct Chunk {
    pub start: Vec<u8>,
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

    /// Every entry of the table, then every entry of the log (unsorted).
    /// REQUIRES: the store's write lock (no entry is unpublished).
    pub fn all_entries(&self) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let mut entries = self.table_entries()?;
        entries.extend(
            self.log
                .entries(u64::MAX)?
                .into_iter()
                .map(LogEntry::into_entry),
        );
        Ok(entries)
    }

    /// Every entry of the table, sorted.
    fn table_entries(&self) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
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

    /// The newest version of `key` at `sequence`: the log, then the table.
    pub fn get(&self, key: &[u8], sequence: u64, counters: &Counters) -> Result<Found> {
        if let Some(found) = self.log.get(key, sequence, counters)? {
            Counters::add(&counters.chunk_gets_from_log, 1);
            return Ok(found);
        }
        Counters::add(&counters.chunk_gets_from_table, 1);
        let Some(table) = &self.table else {
            return Ok(Found::Absent);
        };
        let lookup = InternalKey::new(key, sequence, ValueKind::SEEK);
        let found = table.get_with(lookup.encoded(), true, |k, v| {
            ParsedKey::parse(k).map(|p| match p.kind {
                ValueKind::Value => Found::Value(v.to_vec()),
                ValueKind::Deletion => Found::Deleted,
            })
        })?;
        match found {
            None => Ok(Found::Absent),
            Some(Some(found)) => Ok(found),
            Some(None) => Err(Error::corruption(
                table.path(),
                table.offset(),
                "malformed internal key in a funk table",
            )),
        }
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
