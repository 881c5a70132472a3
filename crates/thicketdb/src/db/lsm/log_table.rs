//! TRIAD-LOG's flush source: a memtable's entries with each put's value
//! replaced by its address in the memtable's log, which is what a log table
//! stores (`docs/format.md`, Log tables). Deletions keep their empty value.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::error::Result;
use crate::format::internal_key::user_key;
use crate::iterator::InternalIterator;
use crate::log::{LogAddress, ValueAddress};
use crate::memtable::{Memtable, MemtableIterator};
use crate::table::is_put;

/// Walks a memtable whose entries all know their place in its log
/// ([`Memtable::values_located`]), yielding encoded value addresses.
pub(crate) struct LogAddresses {
    entries: MemtableIterator,
    log: u64,
    address: Vec<u8>,
    /// The largest log offset a value seen so far ends at (in the joined
    /// payload of its record, so slightly below the file offset): how much
    /// of the log the log tables' data take.
    data_end: u64,
    /// User key and value bytes of the current entry when it is a put
    /// with a known address (0 otherwise), shared with the flush's filter
    /// so that it counts what the log table keeps.
    entry_bytes: Arc<AtomicU64>,
}

impl LogAddresses {
    pub fn new(mem: Arc<Memtable>) -> LogAddresses {
        LogAddresses {
            log: mem.log_number(),
            entries: MemtableIterator::new(mem),
            address: Vec::new(),
            data_end: 0,
            entry_bytes: Arc::new(AtomicU64::new(0)),
        }
    }

    /// The current entry's user key and value bytes, updated as the walk
    /// moves (read it while deciding whether to keep the entry).
    pub fn entry_bytes(&self) -> Arc<AtomicU64> {
        Arc::clone(&self.entry_bytes)
    }

    /// Bytes of the log up to the end of the last value addressed so far.
    pub fn data_end(&self) -> u64 {
        self.data_end
    }

    /// Encodes the current put's address.
    fn locate(&mut self) {
        self.address.clear();
        self.entry_bytes.store(0, Ordering::Relaxed);
        if !self.entries.valid() || !is_put(self.entries.key()) {
            return;
        }
        if let Some(at) = self.entries.location() {
            let len = self.entries.value().len() as u64;
            self.data_end = self.data_end.max(at.record + at.offset + len);
            let key_len = user_key(self.entries.key()).len() as u64;
            self.entry_bytes.store(key_len + len, Ordering::Relaxed);
            ValueAddress {
                record: LogAddress::new(self.log, at.record),
                offset: at.offset,
                len,
            }
            .encode_to(&mut self.address);
        }
    }
}

impl InternalIterator for LogAddresses {
    fn valid(&self) -> bool {
        self.entries.valid()
    }

    fn seek_to_first(&mut self) {
        self.entries.seek_to_first();
        self.locate();
    }

    fn seek_to_last(&mut self) {
        self.entries.seek_to_last();
        self.locate();
    }

    fn seek(&mut self, target: &[u8]) {
        self.entries.seek(target);
        self.locate();
    }

    fn next(&mut self) {
        self.entries.next();
        self.locate();
    }

    fn prev(&mut self) {
        self.entries.prev();
        self.locate();
    }

    fn key(&self) -> &[u8] {
        self.entries.key()
    }

    fn value(&self) -> &[u8] {
        &self.address
    }

    fn status(&self) -> Result<()> {
        self.entries.status()
    }
}
