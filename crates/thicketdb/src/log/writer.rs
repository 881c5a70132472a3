//! Appends records to a log, fragmenting them across 32 KiB blocks.

use super::format::{encode_header, FragmentType, BLOCK_SIZE, HEADER_SIZE};
use crate::error::{Error, Result};
use std::sync::Arc;

use crate::io::{FileSyncer, WritableFile};

/// Zeros for the tail of a block too short for a header.
const TRAILER: [u8; HEADER_SIZE - 1] = [0; HEADER_SIZE - 1];

/// Writes a log. One `add_record` per write group, so it allocates nothing
/// per record: headers are built on the stack and everything else goes
/// straight to the file's own buffer.
pub struct LogWriter {
    file: Box<dyn WritableFile>,
    /// Bytes already used in the current block.
    block_offset: usize,
    /// The first error seen. A failed append or flush leaves an unknown
    /// prefix of the record in the file, and writing on after it would turn
    /// a torn tail into mid-log corruption; so the writer refuses further use
    /// and the owner must switch to a new file.
    failed: Option<Error>,
}

impl LogWriter {
    /// Starts writing at the end of `file` (normally a new, empty file).
    pub fn new(file: Box<dyn WritableFile>) -> LogWriter {
        let block_offset = (file.len() % BLOCK_SIZE as u64) as usize;
        LogWriter {
            file,
            block_offset,
            failed: None,
        }
    }

    /// Appends one record to the file's buffer; nothing reaches the OS until
    /// [`flush`](Self::flush) or [`sync`](Self::sync). Returns the record's
    /// offset: where its first fragment's header starts, which with the log's
    /// number is its [`LogAddress`](super::LogAddress). Once flushed, the
    /// record can be read there by a
    /// [`RandomAccessLogReader`](super::RandomAccessLogReader).
    pub fn add_record(&mut self, payload: &[u8]) -> Result<u64> {
        self.guard(|w| w.emit(payload))
    }

    /// Hands buffered records to the operating system (survives a process
    /// crash, not a power loss).
    pub fn flush(&mut self) -> Result<()> {
        self.guard(|w| w.file.flush())
    }

    /// Makes every added record durable.
    pub fn sync(&mut self) -> Result<()> {
        self.guard(|w| w.file.sync())
    }

    /// A handle that makes what this writer flushed durable from another
    /// thread ([`WritableFile::syncer`]); `None` when the file has none.
    pub fn syncer(&self) -> Result<Option<Arc<dyn FileSyncer>>> {
        match &self.failed {
            Some(err) => Err(err.clone()),
            None => Ok(self.file.syncer()),
        }
    }

    /// Bytes written so far, including buffered ones.
    pub fn len(&self) -> u64 {
        self.file.len()
    }

    /// True when nothing was written yet.
    pub fn is_empty(&self) -> bool {
        self.file.is_empty()
    }

    /// Bytes of memory the file's write buffer holds.
    pub fn buffer_bytes(&self) -> usize {
        self.file.buffer_bytes()
    }

    /// Frees the file's write buffer once flushed
    /// ([`WritableFile::release_buffer`]).
    pub fn release_buffer(&mut self) {
        self.file.release_buffer()
    }

    fn guard<T>(&mut self, op: impl FnOnce(&mut LogWriter) -> Result<T>) -> Result<T> {
        if let Some(err) = &self.failed {
            return Err(err.clone());
        }
        let result = op(self);
        if let Err(err) = &result {
            self.failed = Some(err.clone());
        }
        result
    }

    /// Writes the record's fragments; returns the offset of the first.
    fn emit(&mut self, mut payload: &[u8]) -> Result<u64> {
        let mut first = true;
        let mut start = 0;
        loop {
            let left = BLOCK_SIZE - self.block_offset;
            if left < HEADER_SIZE {
                if left > 0 {
                    self.file.append(&TRAILER[..left])?;
                }
                self.block_offset = 0;
            }
            if first {
                // The file's own byte count: no syscall, in both write modes.
                start = self.file.len();
            }
            // May be 0 when exactly a header fits: an empty First fragment
            // is legal and keeps the rule "never split a header".
            let room = BLOCK_SIZE - self.block_offset - HEADER_SIZE;
            let (fragment, rest) = payload.split_at(payload.len().min(room));
            let last = rest.is_empty();
            let kind = match (first, last) {
                (true, true) => FragmentType::Full,
                (true, false) => FragmentType::First,
                (false, false) => FragmentType::Middle,
                (false, true) => FragmentType::Last,
            };
            self.file.append(&encode_header(kind, fragment))?;
            self.file.append(fragment)?;
            self.block_offset += HEADER_SIZE + fragment.len();
            if last {
                return Ok(start);
            }
            payload = rest;
            first = false;
        }
    }
}
