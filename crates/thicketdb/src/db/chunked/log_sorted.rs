//! A chunk log's sorted view, for scans of munk-less chunks (the paper's
//! §3.3: such a scan merges the log's and the table's versions). It lists
//! every point entry of the log by internal key with where its value lies
//! (record offset, position in the batch), not the value itself: about the
//! key's size plus 16 bytes an entry. Built by the first scan of the log
//! and extended by later ones with the records appended since (sorted on
//! their own, then merged), so a scan no longer re-reads and re-sorts the
//! whole log; its iterator reads the values of the entries it visits.

use std::path::PathBuf;
use std::sync::Arc;

use super::chunk_log::parse;
use crate::db::batch::OpKind;
use crate::error::{Error, Result};
use crate::format::internal_key::InternalKey;
use crate::format::KeyOrder;
use crate::iterator::InternalIterator;
use crate::log::RandomAccessLogReader;

/// One point entry: its internal key and where its value is.
pub(super) struct SortedEntry {
    key: Box<[u8]>,
    /// The record's offset in the log.
    offset: u64,
    /// The entry's position among the record's updates.
    position: u32,
}

/// The sorted entries of a log's first `records` records.
#[derive(Default)]
pub(super) struct SortedLog {
    entries: Arc<Vec<SortedEntry>>,
    records: usize,
}

fn order(a: &SortedEntry, b: &SortedEntry) -> std::cmp::Ordering {
    KeyOrder::Bytewise.internal(&a.key, &b.key)
}

impl SortedLog {
    /// Adds the records of `offsets` (every record of the log, oldest
    /// first) past those already listed; returns the whole view.
    pub fn extend(
        &mut self,
        path: &std::path::Path,
        reader: &RandomAccessLogReader,
        offsets: &[u64],
    ) -> Result<Arc<Vec<SortedEntry>>> {
        let Some(new) = offsets.get(self.records..).filter(|n| !n.is_empty()) else {
            return Ok(self.entries.clone());
        };
        let mut added = Vec::new();
        let mut record = Vec::new();
        // The new records in order: read ahead.
        let reader = reader.read_ahead();
        for &offset in new {
            reader.read_record_at_into(offset, &mut record)?;
            let batch = parse(path, offset, &record)?;
            let mut seq = batch.first_sequence;
            let mut position = 0;
            batch
                .for_each(|op| {
                    if let OpKind::Point(kind) = op.kind {
                        added.push(SortedEntry {
                            key: InternalKey::new(op.key, seq, kind).into_vec().into(),
                            offset,
                            position,
                        });
                    }
                    seq += 1;
                    position += 1;
                })
                .map_err(|why| Error::corruption(path, offset, why))?;
        }
        added.sort_by(order);
        let old = std::mem::take(&mut self.entries);
        let merged = match Arc::try_unwrap(old) {
            Ok(old) => merge(old, added),
            Err(shared) => merge(
                shared
                    .iter()
                    .map(|e| SortedEntry {
                        key: e.key.clone(),
                        offset: e.offset,
                        position: e.position,
                    })
                    .collect(),
                added,
            ),
        };
        self.entries = Arc::new(merged);
        self.records = offsets.len();
        Ok(self.entries.clone())
    }

    /// Bytes of memory the view takes.
    pub fn memory_bytes(&self) -> usize {
        self.entries
            .iter()
            .map(|e| e.key.len() + std::mem::size_of::<SortedEntry>())
            .sum()
    }
}

/// `a` and `b`, each sorted, as one sorted list.
fn merge(a: Vec<SortedEntry>, b: Vec<SortedEntry>) -> Vec<SortedEntry> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut a, mut b) = (a.into_iter().peekable(), b.into_iter().peekable());
    loop {
        let take_a = match (a.peek(), b.peek()) {
            (Some(x), Some(y)) => order(x, y).is_le(),
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => return out,
        };
        out.extend(if take_a { a.next() } else { b.next() });
    }
}

/// Iterates a sorted view, reading each visited entry's value from the log.
pub(super) struct SortedLogIterator {
    entries: Arc<Vec<SortedEntry>>,
    reader: Arc<RandomAccessLogReader>,
    path: PathBuf,
    pos: usize,
    /// The record last read and its offset (entries of one batch share it).
    record: Vec<u8>,
    record_offset: Option<u64>,
    value: Vec<u8>,
    status: Result<()>,
}

impl SortedLogIterator {
    pub fn new(
        entries: Arc<Vec<SortedEntry>>,
        reader: Arc<RandomAccessLogReader>,
        path: PathBuf,
    ) -> SortedLogIterator {
        let pos = entries.len();
        SortedLogIterator {
            entries,
            reader,
            path,
            pos,
            record: Vec::new(),
            record_offset: None,
            value: Vec::new(),
            status: Ok(()),
        }
    }

    /// Loads the value at `pos`; an error ends the iteration.
    fn load(&mut self) {
        let Some(entry) = self.entries.get(self.pos) else {
            return;
        };
        if let Err(e) = self.read_value(entry.offset, entry.position) {
            self.status = Err(e);
            self.pos = self.entries.len();
        }
    }

    fn read_value(&mut self, offset: u64, position: u32) -> Result<()> {
        if self.record_offset != Some(offset) {
            self.record_offset = None;
            self.reader.read_record_at_into(offset, &mut self.record)?;
            self.record_offset = Some(offset);
        }
        let batch = parse(&self.path, offset, &self.record)?;
        let mut at = 0;
        let mut found = false;
        let value = &mut self.value;
        batch
            .for_each(|op| {
                if at == position {
                    value.clear();
                    value.extend_from_slice(op.value);
                    found = true;
                }
                at += 1;
            })
            .map_err(|why| Error::corruption(&self.path, offset, why))?;
        if !found {
            return Err(Error::corruption(
                &self.path,
                offset,
                format!("chunk log record has no update {position}"),
            ));
        }
        Ok(())
    }
}

impl InternalIterator for SortedLogIterator {
    fn valid(&self) -> bool {
        self.pos < self.entries.len()
    }
    fn seek_to_first(&mut self) {
        self.pos = 0;
        self.load();
    }
    fn seek_to_last(&mut self) {
        self.pos = self
            .entries
            .len()
            .checked_sub(1)
            .unwrap_or(self.entries.len());
        self.load();
    }
    fn seek(&mut self, target: &[u8]) {
        self.pos = self
            .entries
            .partition_point(|e| KeyOrder::Bytewise.internal(&e.key, target).is_lt());
        self.load();
    }
    fn next(&mut self) {
        self.pos += 1;
        self.load();
    }
    fn prev(&mut self) {
        self.pos = self.pos.checked_sub(1).unwrap_or(self.entries.len());
        self.load();
    }
    fn key(&self) -> &[u8] {
        &self.entries[self.pos].key
    }
    fn value(&self) -> &[u8] {
        &self.value
    }
    fn status(&self) -> Result<()> {
        self.status.clone()
    }
}
