//! In-memory files and table fixtures for the table tests.

use std::path::PathBuf;
use std::sync::Arc;

use parking_lot::Mutex;

use super::{BlockCache, Table, TableBuilder, TableContext, TableOptions, TableSummary};
use crate::error::{Error, Result};
use crate::format::{InternalKey, ValueKind, MAX_SEQUENCE};
use crate::io::segment::encode_header;
use crate::io::{RandomAccessFile, WritableFile};
use crate::iterator::InternalIterator;

/// A `Vec<u8>` that is both a writable and a random-access file.
#[derive(Default)]
pub struct MemFile {
    data: Mutex<Vec<u8>>,
}

impl MemFile {
    pub fn new(data: Vec<u8>) -> MemFile {
        MemFile {
            data: Mutex::new(data),
        }
    }

    /// Current length (inherent, so tests need not pick between the two
    /// traits' `len`).
    pub fn size(&self) -> u64 {
        self.data.lock().len() as u64
    }

    pub fn bytes(&self) -> Vec<u8> {
        self.data.lock().clone()
    }

    /// A copy with one bit of byte `i` flipped.
    pub fn with_flipped(&self, i: usize) -> MemFile {
        let mut data = self.bytes();
        data[i] ^= 0x04;
        MemFile::new(data)
    }
}

impl WritableFile for MemFile {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.data.get_mut().extend_from_slice(data);
        Ok(())
    }
    fn flush(&mut self) -> Result<()> {
        Ok(())
    }
    fn sync(&mut self) -> Result<()> {
        Ok(())
    }
    fn len(&self) -> u64 {
        self.data.lock().len() as u64
    }
}

impl RandomAccessFile for MemFile {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        let data = self.data.lock();
        let start = usize::try_from(offset).unwrap_or(usize::MAX);
        match data.get(start..start.saturating_add(buf.len())) {
            Some(src) => {
                buf.copy_from_slice(src);
                Ok(())
            }
            None => Err(Error::corruption("mem", offset, "read past end")),
        }
    }
    fn len(&self) -> Result<u64> {
        Ok(self.data.lock().len() as u64)
    }
    fn punch_hole(&self, _offset: u64, _len: u64) -> Result<bool> {
        Ok(false)
    }
}

/// Writes `entries` (sorted) as one table after a segment header.
pub fn build_table(entries: &[(Vec<u8>, Vec<u8>)], opts: &TableOptions) -> (MemFile, TableSummary) {
    let mut file = MemFile::new(encode_header());
    let mut builder = TableBuilder::new(opts, &mut file);
    for (k, v) in entries {
        builder.add(k, v).unwrap();
    }
    let summary = builder.finish().unwrap();
    (file, summary)
}

pub fn open_table(
    file: MemFile,
    summary: &TableSummary,
    cache: Option<Arc<BlockCache>>,
) -> Result<Arc<Table>> {
    Table::open(
        Arc::new(file),
        PathBuf::from("000009.seg"),
        9,
        summary.offset,
        summary.length,
        TableContext {
            cache,
            ..TableContext::default()
        },
    )
    .map(Arc::new)
}

/// `n` sorted entries: entry `i` has user key `ukey(2 * i)` and sequence
/// `100_000 - i`, every fifth is a deletion; odd `ukey`s are absent.
pub fn sample_entries(n: u32) -> Vec<(Vec<u8>, Vec<u8>)> {
    (0..n)
        .map(|i| {
            let kind = if i % 5 == 0 {
                ValueKind::Deletion
            } else {
                ValueKind::Value
            };
            let key = InternalKey::new(&ukey(i * 2), 100_000 - u64::from(i), kind);
            (key.into_vec(), format!("value-{i}").repeat(3).into_bytes())
        })
        .collect()
}

pub fn ukey(i: u32) -> Vec<u8> {
    format!("key{i:08}").into_bytes()
}

/// The key that seeks to the newest version of `user` visible at `MAX_SEQUENCE`.
pub fn lookup_key(user: &[u8]) -> Vec<u8> {
    InternalKey::new(user, MAX_SEQUENCE, ValueKind::SEEK).into_vec()
}

/// All entries of `it`, walking forwards.
pub fn collect_forward(it: &mut dyn InternalIterator) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    it.seek_to_first();
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.next();
    }
    out
}

/// All entries of `it`, walking backwards, returned in forward order.
pub fn collect_backward(it: &mut dyn InternalIterator) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    it.seek_to_last();
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.prev();
    }
    out.reverse();
    out
}
