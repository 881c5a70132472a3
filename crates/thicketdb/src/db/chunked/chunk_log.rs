//! A chunk log: the append-only half of a funk, in the log record format
//! whose records are write batches (`docs/format.md`, *Chunk log*).
//!
//! Its in-memory index (the partitioned filters listing every record, and
//! its range tombstones) is built as records are appended, by one pass
//! over the file when a log is opened after a crash, or on first need for
//! a log a clean close left (`closed.rs`): the first get, scan, munk load
//! or append that needs it reads the log once while concurrent ones wait
//! for it (`index`). Scans read the log through its sorted view
//! (`log_sorted.rs`), built on the first scan and extended by later ones.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::{MappedRwLockReadGuard, Mutex, RwLock, RwLockReadGuard};

use super::chunk::Found;
use super::durable_prefix::SeqRange;
use super::files::chunk_log_path;
use super::incarnations::Incarnations;
use super::log_filter::LogFilters;
use super::log_sorted::{SortedLog, SortedLogIterator};
use crate::db::batch::{DecodedBatch, OpKind};
use crate::error::{Error, Result};
use crate::format::internal_key::{InternalKey, ValueKind};
use crate::format::range_tombstone::{Fragments, RangeTombstone};
use crate::io::FileSystem;
use crate::log::{LogReader, LogWriter, RandomAccessLogReader, RecoveryMode};
use crate::memtable::RangeDels;
use crate::stats::Counters;

/// One write of a put or delete, as a log record holds it.
pub(super) struct LogEntry {
    pub sequence: u64,
    pub kind: ValueKind,
    pub key: Vec<u8>,
    pub value: Vec<u8>,
}

impl LogEntry {
    /// The entry as an internal key and its value.
    pub fn into_entry(self) -> super::chunk::Entry {
        let key = InternalKey::new(&self.key, self.sequence, self.kind).into_vec();
        (key, self.value)
    }
}

/// The log's index in memory, or how to build it.
enum IndexState {
    /// A log a clean close left, or any log after an asynchronous-mode
    /// crash: nothing read yet.
    Unbuilt {
        fs: Arc<dyn FileSystem>,
        /// Empty filters of the log's shape.
        filters: LogFilters,
        /// The records the index leaves out.
        incarnations: Arc<Incarnations>,
        /// The file may end in a torn record (a crash, not a clean close):
        /// the index ends before it, and a writable log is cut there.
        may_be_torn: bool,
    },
    Built(LogIndex),
}

/// A built index.
pub(super) struct LogIndex {
    pub filters: LogFilters,
    /// The range tombstones of its records (clipped to the chunk).
    pub range_dels: RangeDels,
}

/// What one pass over a log file found.
struct ReadLog {
    index: LogIndex,
    /// Each listed record's first and last sequence numbers.
    ranges: Vec<SeqRange>,
    /// The offset of the last listed record.
    last_listed: Option<u64>,
    /// Records left out (`Incarnations::ignores`).
    ignored_records: usize,
}

/// A chunk log: appended under its chunk's `append_lock`, read by anyone up
/// to the records its filters list (each complete before it is listed).
pub(super) struct ChunkLog {
    pub number: u64,
    path: PathBuf,
    reader: Arc<RandomAccessLogReader>,
    /// `None` in a read-only store.
    writer: Mutex<Option<LogWriter>>,
    index: RwLock<IndexState>,
    /// Held while an index is built from the file: one reader builds it,
    /// the others wait for it.
    building: Mutex<()>,
    /// The view scans read, sorted by key (built on the first scan).
    sorted: Mutex<SortedLog>,
    /// Bytes of complete records.
    len: AtomicU64,
    /// Appends not synced yet.
    dirty: AtomicBool,
    /// Appends still in the writer's buffer (`append_grouped`): a reader
    /// of the file flushes them first.
    buffered: AtomicBool,
    /// Bytes handed to the file: records below it can be read.
    flushed: AtomicU64,
}

impl ChunkLog {
    fn with(
        number: u64,
        path: PathBuf,
        reader: RandomAccessLogReader,
        writer: Option<LogWriter>,
        index: IndexState,
        len: u64,
    ) -> ChunkLog {
        ChunkLog {
            number,
            path,
            reader: Arc::new(reader),
            writer: Mutex::new(writer),
            index: RwLock::new(index),
            building: Mutex::new(()),
            sorted: Mutex::new(SortedLog::default()),
            len: AtomicU64::new(len),
            dirty: AtomicBool::new(false),
            buffered: AtomicBool::new(false),
            flushed: AtomicU64::new(len),
        }
    }

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
        let index = IndexState::Built(LogIndex {
            filters,
            range_dels: RangeDels::default(),
        });
        Ok(ChunkLog::with(number, path, reader, Some(writer), index, 0))
    }

    /// Opens an existing log: one pass lists its records in `filters`
    /// (but those `incarnations` ignores). Returns the log, each listed
    /// record's first and last sequence numbers and whether the file is
    /// to be rewritten (its complete listed records copied to a new log)
    /// before it is appended to: it ends in a torn record, or holds
    /// ignored ones.
    pub fn open(
        fs: &dyn FileSystem,
        dir: &std::path::Path,
        number: u64,
        filters: LogFilters,
        mode: RecoveryMode,
        incarnations: &Incarnations,
    ) -> Result<(ChunkLog, Vec<SeqRange>, bool)> {
        let path = chunk_log_path(dir, number);
        // Damage is checked below: an asynchronous-mode crash may leave
        // some before records that are all ignored (past the checkpoint).
        let mut reader = LogReader::new(
            fs.open_sequential(&path)?,
            path.clone(),
            RecoveryMode::SkipAnyCorruption,
        );
        let ReadLog {
            index,
            ranges,
            last_listed,
            ignored_records,
        } = read_index(&path, &mut reader, filters, u64::MAX, incarnations)?;
        let first_damage = reader
            .skipped()
            .iter()
            .chain(reader.dropped_tail())
            .map(|s| s.offset)
            .min();
        if let (RecoveryMode::TolerateTailCorruption, Some(at), Some(listed)) =
            (mode, first_damage, last_listed)
        {
            if at < listed {
                return Err(Error::corruption(
                    &path,
                    at,
                    "chunk log damaged before records that count (strict recovery)",
                ));
            }
        }
        let torn = first_damage.is_some() || ignored_records > 0;
        // Without a torn tail every byte belongs to a complete record; a
        // torn log is rewritten before it is appended to.
        let end = fs.file_size(&path)?;
        let random = RandomAccessLogReader::new(fs.open_random(&path)?, path.clone());
        let log = ChunkLog::with(number, path, random, None, IndexState::Built(index), end);
        Ok((log, ranges, torn))
    }

    /// Opens a log without reading it: its index is built on first need,
    /// from `fs`, leaving out the records `incarnations` ignores. A clean
    /// close left it `len` bytes long (all complete, synced records); an
    /// asynchronous-mode crash (`may_be_torn`) may have left a torn record
    /// at the end of its `len` bytes.
    pub fn open_unread(
        fs: Arc<dyn FileSystem>,
        dir: &std::path::Path,
        number: u64,
        filters: LogFilters,
        len: u64,
        incarnations: Arc<Incarnations>,
        may_be_torn: bool,
    ) -> Result<ChunkLog> {
        let path = chunk_log_path(dir, number);
        let random = RandomAccessLogReader::new(fs.open_random(&path)?, path.clone());
        let index = IndexState::Unbuilt {
            fs,
            filters,
            incarnations,
            may_be_torn,
        };
        Ok(ChunkLog::with(number, path, random, None, index, len))
    }

    /// The log's index, built first if the log was opened unread.
    fn index(&self) -> Result<MappedRwLockReadGuard<'_, LogIndex>> {
        loop {
            let guard = self.index.read();
            if let Ok(built) = RwLockReadGuard::try_map(guard, |state| match state {
                IndexState::Built(index) => Some(index),
                IndexState::Unbuilt { .. } => None,
            }) {
                return Ok(built);
            }
            self.build_index()?;
        }
    }

    /// Reads the whole log once into its index (one thread; the others
    /// wait on `building` and find it built).
    fn build_index(&self) -> Result<()> {
        let _one = self.building.lock();
        let (fs, filters, incarnations, may_be_torn) = match &*self.index.read() {
            IndexState::Unbuilt {
                fs,
                filters,
                incarnations,
                may_be_torn,
            } => (
                fs.clone(),
                filters.empty_like(),
                incarnations.clone(),
                *may_be_torn,
            ),
            IndexState::Built(_) => return Ok(()),
        };
        // After a crash, what follows damage was not synced, so is past
        // the last checkpoint: ignored, and cut below.
        let mode = match may_be_torn {
            true => RecoveryMode::SkipAnyCorruption,
            false => RecoveryMode::TolerateTailCorruption,
        };
        let mut reader = LogReader::new(fs.open_sequential(&self.path)?, self.path.clone(), mode);
        // Only the records the clean close recorded: appends wait for this
        // build, but a read-only store may share the file with a writer
        // that appends (and may be mid-record) past them.
        let len = self.len();
        let index = read_index(&self.path, &mut reader, filters, len, &incarnations)?.index;
        let damage = reader
            .skipped()
            .iter()
            .chain(reader.dropped_tail())
            .map(|s| s.offset)
            .min()
            .filter(|&offset| offset < len);
        if let Some(end) = damage {
            if !may_be_torn {
                // The file was whole at the clean close that recorded it.
                return Err(Error::corruption(
                    &self.path,
                    end,
                    "chunk log damaged since the clean close that recorded it",
                ));
            }
            // Appends go in place of the damage and what followed it.
            let mut writer = self.writer.lock();
            if writer.is_some() {
                fs.set_len(&self.path, end)?;
                *writer = Some(LogWriter::new(fs.open_append(&self.path)?));
            }
            self.len.store(end, Ordering::Release);
            self.flushed.store(end, Ordering::Release);
        }
        *self.index.write() = IndexState::Built(index);
        Ok(())
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
        self.append_with(record, sync, None)
    }

    /// Appends one batch record to the writer's buffer, which reaches the
    /// file (one `write` for the group) once it holds `group_bytes`, when
    /// the log is synced (a checkpoint, a close) or when a reader of the
    /// file needs it (`flush`): the asynchronous mode's puts, durable only
    /// at a checkpoint anyway. A process crash loses the group, as a power
    /// loss loses the appends since the last sync. The buffer's memory is
    /// freed whenever it is written out (`ChunkStore::log_group_bytes`
    /// keeps all logs' buffers within a budget). Returns the bytes.
    pub fn append_grouped(&self, record: &[u8], group_bytes: u64) -> Result<u64> {
        self.append_with(record, false, Some(group_bytes))
    }

    /// Hands the writer's buffer to the file and frees it.
    /// REQUIRES: the caller holds `writer`'s lock (it is its content).
    fn write_out(&self, writer: &mut LogWriter) -> Result<()> {
        writer.flush()?;
        writer.release_buffer();
        self.flushed.store(writer.len(), Ordering::Release);
        self.buffered.store(false, Ordering::Release);
        Ok(())
    }

    /// Bytes of memory the writer's buffer holds.
    pub fn buffer_bytes(&self) -> usize {
        self.writer
            .lock()
            .as_ref()
            .map_or(0, LogWriter::buffer_bytes)
    }

    /// Hands the buffered appends to the file; returns the bytes the
    /// file holds (the records below can be read). A record appended
    /// after it (of a put numbered above the caller's point: callers read
    /// after `Chunk::settle`, or hold the chunk's locks) is left unread.
    /// REQUIRES: no guard of the log's index held (an append takes the
    /// writer, then the index).
    pub fn flush(&self) -> Result<u64> {
        if self.buffered.load(Ordering::Acquire) {
            let mut writer = self.writer.lock();
            if let Some(w) = writer.as_mut() {
                if self.buffered.load(Ordering::Acquire) {
                    self.write_out(w)?;
                }
            }
        }
        Ok(self.flushed.load(Ordering::Acquire))
    }

    /// Appends `record`, written out at once (`group_bytes` `None`) or
    /// once the writer's buffer holds `group_bytes`.
    fn append_with(&self, record: &[u8], sync: bool, group_bytes: Option<u64>) -> Result<u64> {
        let index = RecordIndex::of(&self.path, 0, record)?;
        // The index lists every record before this one first.
        drop(self.index()?);
        let mut writer = self.writer.lock();
        let writer = writer
            .as_mut()
            .ok_or_else(|| Error::ReadOnly("write".into()))?;
        let before = writer.len();
        let offset = writer.add_record(record)?;
        match group_bytes {
            Some(group) if writer.len() - self.flushed.load(Ordering::Acquire) < group => {
                self.buffered.store(true, Ordering::Release)
            }
            _ => self.write_out(writer)?,
        }
        if sync {
            writer.sync()?;
        } else {
            self.dirty.store(true, Ordering::Release);
        }
        let after = writer.len();
        if let IndexState::Built(built) = &mut *self.index.write() {
            built.filters.add_record(offset, index.keys.iter().copied());
            index.add_range_deletions(&built.range_dels);
        }
        self.len.store(after, Ordering::Release);
        Ok(after - before)
    }

    /// Syncs what was appended.
    pub fn sync(&self) -> Result<()> {
        match self.writer.lock().as_mut() {
            Some(w) => w.sync().map(|()| {
                w.release_buffer();
                self.flushed.store(w.len(), Ordering::Release);
                self.buffered.store(false, Ordering::Release);
                self.dirty.store(false, Ordering::Release)
            }),
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
        // Flushed only if a part may hold the key (a get pays no write
        // for a key the filters rule out).
        let readable = match self.buffered.load(Ordering::Acquire)
            && self.index()?.filters.candidates(key).next().is_some()
        {
            true => self.flush()?,
            false => self.flushed.load(Ordering::Acquire),
        };
        let index = self.index()?;
        let mut record = Vec::new();
        for part in index.filters.candidates(key) {
            Counters::add(&counters.chunk_log_parts_searched, 1);
            for &offset in part.iter().rev().filter(|&&o| o < readable) {
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

    /// The sequence number of the newest range tombstone of the log
    /// covering `key` at `sequence` (0 for none).
    pub fn covering_seq(&self, key: &[u8], sequence: u64) -> Result<u64> {
        Ok(self.index()?.range_dels.covering_seq(key, sequence))
    }

    /// The log's range tombstones, fragmented (all of them: readers filter
    /// by their snapshot).
    pub fn range_deletions(&self) -> Result<Arc<Fragments>> {
        Ok(self.index()?.range_dels.fragments())
    }

    /// The offset of every record below `readable` (`flush`), oldest
    /// first.
    fn record_offsets(&self, readable: u64) -> Result<Vec<u64>> {
        Ok(self
            .index()?
            .filters
            .all_records()
            .filter(|&o| o < readable)
            .collect())
    }

    /// Every point entry at or below `sequence`, in log order (range
    /// tombstones: `range_deletions`).
    pub fn entries(&self, sequence: u64) -> Result<Vec<LogEntry>> {
        let readable = self.flush()?;
        let mut out = Vec::new();
        let mut record = Vec::new();
        let reader = self.reader.read_ahead();
        for offset in self.record_offsets(readable)? {
            reader.read_record_at_into(offset, &mut record)?;
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
        let readable = self.flush()?;
        let reader = self.reader.read_ahead();
        self.record_offsets(readable)?
            .into_iter()
            .skip(skip)
            .map(|o| reader.read_record_at(o))
            .collect()
    }

    /// An iterator over every point entry of the log in key order (the
    /// caller's merge drops versions above its snapshot): the sorted view,
    /// first extended by the records appended since the last scan.
    pub fn sorted_iter(&self) -> Result<SortedLogIterator> {
        let readable = self.flush()?;
        let offsets = self.record_offsets(readable)?;
        let entries = self
            .sorted
            .lock()
            .extend(&self.path, &self.reader, &offsets)?;
        Ok(SortedLogIterator::new(
            entries,
            self.reader.clone(),
            self.path.clone(),
        ))
    }

    /// Memory the log's filters and sorted view take (nothing for an index
    /// not built yet).
    pub fn index_bytes(&self) -> usize {
        let filters = match &*self.index.read() {
            IndexState::Built(index) => index.filters.memory_bytes(),
            IndexState::Unbuilt { .. } => 0,
        };
        filters + self.sorted.lock().memory_bytes()
    }
}

/// Reads the records of `reader` that start before `until` into an index
/// listing them in `filters`, but those `incarnations` ignores.
fn read_index(
    path: &std::path::Path,
    reader: &mut LogReader,
    mut filters: LogFilters,
    until: u64,
    incarnations: &Incarnations,
) -> Result<ReadLog> {
    let range_dels = RangeDels::default();
    let mut ranges = Vec::new();
    let mut last_listed = None;
    let mut ignored_records = 0;
    let mut record = Vec::new();
    while let Some(offset) = reader.read_record_into(&mut record)? {
        if offset >= until {
            break;
        }
        let index = RecordIndex::of(path, offset, &record)?;
        // A batch's numbers are all of one incarnation, and all at or all
        // past its checkpoint (a checkpoint point is a batch's last).
        if incarnations.ignores(index.first_sequence) {
            ignored_records += 1;
            continue;
        }
        filters.add_record(offset, index.keys.iter().copied());
        index.add_range_deletions(&range_dels);
        ranges.push((index.first_sequence, index.last_sequence));
        last_listed = Some(offset);
    }
    Ok(ReadLog {
        index: LogIndex {
            filters,
            range_dels,
        },
        ranges,
        last_listed,
        ignored_records,
    })
}

/// Parses the record at `offset` of the log `path` as a batch.
pub(super) fn parse<'a>(
    path: &std::path::Path,
    offset: u64,
    record: &'a [u8],
) -> Result<DecodedBatch<'a>> {
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
    first_sequence: u64,
    last_sequence: u64,
}

impl<'a> RecordIndex<'a> {
    /// Indexes the record at `offset` of the log `path`.
    fn of(path: &std::path::Path, offset: u64, record: &'a [u8]) -> Result<RecordIndex<'a>> {
        let batch = parse(path, offset, record)?;
        let mut index = RecordIndex {
            keys: Vec::with_capacity(batch.count as usize),
            tombstones: Vec::new(),
            first_sequence: batch.first_sequence,
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
