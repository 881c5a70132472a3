//! Reads one record by its address: the offset of its first fragment, as
//! returned by `LogWriter::add_record`. Unlike `LogReader`, which walks a
//! whole log and classifies damage as torn tail or mid-log corruption, this
//! reader trusts nothing but the fragments it reads: any fragment that does
//! not decode, or does not continue the record, is an `Error::Corruption`
//! naming the file and that fragment's offset.

use std::path::PathBuf;
use std::sync::Arc;

use super::address::ValueAddress;
use super::format::{
    decode_fragment, decode_header, BadFragment, Fragment, FragmentType, BLOCK_SIZE, HEADER_SIZE,
};
use super::read_ahead::ReadAhead;
use super::reader::DEFAULT_MAX_RECORD_SIZE;
use crate::error::{Error, Result};
use crate::io::RandomAccessFile;

const BLOCK: u64 = BLOCK_SIZE as u64;
const HEADER: u64 = HEADER_SIZE as u64;

/// Reads records of one log file at given offsets with positional reads:
/// two per fragment (header, then payload straight into the caller's
/// buffer) and no other syscall unless a read fails. Shareable between
/// threads; works on a log still being written, for records the writer has
/// flushed.
pub struct RandomAccessLogReader {
    file: Arc<dyn RandomAccessFile>,
    path: PathBuf,
    max_record_size: usize,
}

impl RandomAccessLogReader {
    /// Reads `file`; `path` only names it in errors.
    pub fn new(file: Arc<dyn RandomAccessFile>, path: PathBuf) -> RandomAccessLogReader {
        RandomAccessLogReader {
            file,
            path,
            max_record_size: DEFAULT_MAX_RECORD_SIZE,
        }
    }

    /// Caps the size of a record; a longer one is corruption (and is never
    /// allocated).
    pub fn with_max_record_size(mut self, max: usize) -> RandomAccessLogReader {
        self.max_record_size = max;
        self
    }

    /// A reader of the same log for a pass over many of its records in
    /// order: it reads the file in large windows (`read_ahead.rs`) rather
    /// than two small reads per fragment.
    pub fn read_ahead(&self) -> RandomAccessLogReader {
        RandomAccessLogReader {
            file: Arc::new(ReadAhead::new(self.file.clone())),
            path: self.path.clone(),
            max_record_size: self.max_record_size,
        }
    }

    /// The record whose first fragment starts at `offset`.
    pub fn read_record_at(&self, offset: u64) -> Result<Vec<u8>> {
        let mut record = Vec::new();
        self.read_record_at_into(offset, &mut record)?;
        Ok(record)
    }

    /// Like [`read_record_at`](Self::read_record_at), into the caller's
    /// buffer (cleared first; its content is unspecified after an error).
    pub fn read_record_at_into(&self, offset: u64, record: &mut Vec<u8>) -> Result<()> {
        record.clear();
        if BLOCK - offset % BLOCK < HEADER {
            return Err(self.corrupt(
                offset,
                offset,
                "no record starts here: the offset is in a block's trailer",
            ));
        }
        let mut pos = offset;
        let mut fragment = self.read_fragment(offset, pos, record)?;
        match fragment.kind {
            FragmentType::Full => return Ok(()),
            FragmentType::First => {}
            kind @ (FragmentType::Middle | FragmentType::Last) => {
                return Err(self.corrupt(
                    offset,
                    pos,
                    format!(
                        "no record starts here: a {kind:?} fragment continues an earlier record"
                    ),
                ));
            }
        }
        loop {
            pos = self.next_fragment(offset, pos, fragment.len)?;
            fragment = self.read_fragment(offset, pos, record)?;
            match fragment.kind {
                FragmentType::Middle => {}
                FragmentType::Last => return Ok(()),
                kind @ (FragmentType::Full | FragmentType::First) => {
                    return Err(self.corrupt(
                        offset,
                        pos,
                        format!("record has no last fragment: a {kind:?} fragment starts another"),
                    ));
                }
            }
        }
    }

    /// The value at `address` (a record of this log): reads only the
    /// fragments the value lies in, each one's checksum verified, through
    /// `fragment` (which returns the checked payload of the fragment whose
    /// header is at a position, e.g. from a cache, by calling
    /// [`read_fragment_at`](Self::read_fragment_at)). The fragments before
    /// the value are full (the record goes on past them), so where the
    /// value starts follows from the record's offset alone.
    pub fn read_value_into<P: AsRef<[u8]>>(
        &self,
        address: &ValueAddress,
        out: &mut Vec<u8>,
        mut fragment: impl FnMut(u64, u64) -> Result<(FragmentType, P)>,
    ) -> Result<()> {
        out.clear();
        let start = address.record.offset;
        let end = address.offset.saturating_add(address.len);
        if end > self.max_record_size as u64 {
            return Err(self.corrupt(
                start,
                start,
                format!(
                    "a value ending at byte {end} of its record exceeds the maximum record size"
                ),
            ));
        }
        if address.len == 0 {
            return Ok(());
        }
        out.reserve(address.len as usize);
        let (mut pos, mut logical) = (start, 0u64);
        loop {
            let room = BLOCK - pos % BLOCK;
            if room < HEADER {
                return Err(self.corrupt(
                    start,
                    pos,
                    "no fragment starts here: the offset is in a block's trailer",
                ));
            }
            let room = room - HEADER;
            if logical + room <= address.offset {
                logical += room;
                pos = self.advance(start, pos, HEADER + room)?;
                continue;
            }
            let (kind, payload) = fragment(start, pos)?;
            let payload = payload.as_ref();
            let first = pos == start;
            if kind.starts_record() != first {
                return Err(self.corrupt(
                    start,
                    pos,
                    format!("a {kind:?} fragment where the record's value lies"),
                ));
            }
            let frag_end = logical + payload.len() as u64;
            let from = address.offset.max(logical) - logical;
            let to = end.min(frag_end) - logical;
            if from > to || (frag_end < end && (kind.ends_record() || payload.len() as u64 != room))
            {
                return Err(self.corrupt(start, pos, "the record ends before the value does"));
            }
            out.extend_from_slice(&payload[from as usize..to as usize]);
            if frag_end >= end {
                return Ok(());
            }
            logical = frag_end;
            pos = self.next_fragment(start, pos, payload.len())?;
        }
    }

    /// The raw bytes of block `index` of the log (32 KiB, less for the last
    /// block of the file): for a cache of log blocks, whose fragments
    /// [`fragment_in_block`](Self::fragment_in_block) then checks.
    pub fn read_block(&self, index: u64) -> Result<Vec<u8>> {
        self.read_blocks(index, 1)
    }

    /// The raw bytes of `count` blocks from block `first` on, in one read
    /// (fewer where the file ends): a span of blocks for reads in log
    /// order, whose fragments [`fragment_in_block`](Self::fragment_in_block)
    /// then checks block by block.
    pub fn read_blocks(&self, first: u64, count: u64) -> Result<Vec<u8>> {
        let at = first.saturating_mul(BLOCK);
        let len = self
            .file
            .len()?
            .saturating_sub(at)
            .min(count.saturating_mul(BLOCK));
        let mut blocks = vec![0u8; len as usize];
        self.file.read_exact_at(at, &mut blocks)?;
        Ok(blocks)
    }

    /// The fragment whose header is at `pos` (part of the record starting
    /// at `start`, named in errors), decoded from `block`, the raw bytes of
    /// the block `pos` is in: its type and the byte range of its checked
    /// payload in `block`.
    pub fn fragment_in_block(
        &self,
        start: u64,
        pos: u64,
        block: &[u8],
    ) -> Result<(FragmentType, std::ops::Range<usize>)> {
        let at = (pos % BLOCK) as usize;
        let data = block.get(at..).unwrap_or_default();
        let (kind, payload) = self.fragment_at(start, pos, data)?;
        Ok((kind, at + payload.start..at + payload.end))
    }

    /// The fragment whose header is at `pos` (part of the record starting
    /// at `start`, named in errors), decoded from `raw`, the file's bytes
    /// from `pos` on (as [`read_raw_fragment`](Self::read_raw_fragment)
    /// returns them, or the rest of a block): its type and the byte range
    /// of its checked payload in `raw`.
    pub fn fragment_at(
        &self,
        start: u64,
        pos: u64,
        raw: &[u8],
    ) -> Result<(FragmentType, std::ops::Range<usize>)> {
        let room = self.room_for_fragment(start, pos)?;
        match decode_fragment(raw, room) {
            Ok(f) => Ok((f.kind, HEADER_SIZE..HEADER_SIZE + f.len)),
            Err(BadFragment::TruncatedHeader | BadFragment::TruncatedPayload(_)) => Err(self
                .corrupt(
                    start,
                    pos,
                    "record cut short: the file ends before this fragment does",
                )),
            Err(why) => Err(self.bad(start, pos, why)),
        }
    }

    /// Bytes left in `pos`'s block, where a fragment header must fit (a
    /// block's last few bytes are a trailer no fragment starts in).
    fn room_for_fragment(&self, start: u64, pos: u64) -> Result<usize> {
        let room = (BLOCK - pos % BLOCK) as usize;
        if room < HEADER_SIZE {
            return Err(self.corrupt(
                start,
                pos,
                "no fragment starts here: the offset is in a block's trailer",
            ));
        }
        Ok(room)
    }

    /// The raw bytes of the fragment whose header is at `pos`, part of the
    /// record starting at `start` (named in errors): its header and as many
    /// payload bytes as the header says, unchecked, for a cache of
    /// fragments that [`fragment_at`](Self::fragment_at) then checks. Reads
    /// the fragment alone (a write group of a few puts is a few hundred
    /// bytes), not the 32 KiB block it lies in.
    pub fn read_raw_fragment(&self, start: u64, pos: u64) -> Result<Vec<u8>> {
        let room = self.room_for_fragment(start, pos)?;
        let mut header = [0u8; HEADER_SIZE];
        self.read_exact(start, pos, pos, &mut header)?;
        let decoded = decode_header(&header, room).map_err(|why| self.bad(start, pos, why))?;
        // At most a block: the length was checked against the block.
        let mut raw = Vec::with_capacity(HEADER_SIZE + decoded.len);
        raw.extend_from_slice(&header);
        raw.resize(HEADER_SIZE + decoded.len, 0);
        let payload_at = self.advance(start, pos, HEADER)?;
        self.read_exact(start, pos, payload_at, &mut raw[HEADER_SIZE..])?;
        Ok(raw)
    }

    /// The checked payload of the fragment whose header is at `pos`, part
    /// of the record starting at `start` (named in errors).
    pub fn read_fragment_at(&self, start: u64, pos: u64) -> Result<(FragmentType, Vec<u8>)> {
        if BLOCK - pos % BLOCK < HEADER {
            return Err(self.corrupt(
                start,
                pos,
                "no fragment starts here: the offset is in a block's trailer",
            ));
        }
        let mut payload = Vec::new();
        let fragment = self.read_fragment(start, pos, &mut payload)?;
        Ok((fragment.kind, payload))
    }

    /// Reads the fragment whose header is at `pos` (with room for a header
    /// in its block) and appends its checked payload to `record`.
    fn read_fragment(&self, start: u64, pos: u64, record: &mut Vec<u8>) -> Result<Fragment> {
        let mut header = [0u8; HEADER_SIZE];
        self.read_exact(start, pos, pos, &mut header)?;
        let room = (BLOCK - pos % BLOCK) as usize;
        let header = decode_header(&header, room).map_err(|why| self.bad(start, pos, why))?;
        if header.len > self.max_record_size.saturating_sub(record.len()) {
            return Err(self.corrupt(
                start,
                pos,
                format!(
                    "record exceeds the maximum record size of {} bytes",
                    self.max_record_size
                ),
            ));
        }
        let at = record.len();
        // At most a block: the length was checked against the block.
        record.resize(at + header.len, 0);
        let payload_at = self.advance(start, pos, HEADER)?;
        self.read_exact(start, pos, payload_at, &mut record[at..])?;
        header
            .verify(&record[at..])
            .map_err(|why| self.bad(start, pos, why))
    }

    /// Reads `buf.len()` bytes at `at`, part of the fragment at `pos`. A
    /// read that fails because the file ends first is corruption; any other
    /// failure is passed on as it is.
    fn read_exact(&self, start: u64, pos: u64, at: u64, buf: &mut [u8]) -> Result<()> {
        let Err(err) = self.file.read_exact_at(at, buf) else {
            return Ok(());
        };
        // Only now pay for asking the length: the common read needs none.
        let len = self.file.len()?;
        if at.saturating_add(buf.len() as u64) <= len {
            return Err(err);
        }
        let reason = if pos >= len && pos == start {
            format!(
                "no record starts here: the offset is at or past the end of the log ({len} bytes)"
            )
        } else {
            format!("record cut short: the file ends ({len} bytes) before this fragment does")
        };
        Err(self.corrupt(start, pos, reason))
    }

    /// Where the fragment after the one at `pos` with `len` payload bytes
    /// starts: right after it, unless too little of the block is left for a
    /// header; then the rest of the block is trailer, as the writer leaves it
    /// and the sequential reader skips it.
    fn next_fragment(&self, start: u64, pos: u64, len: usize) -> Result<u64> {
        let end = self.advance(start, pos, HEADER + len as u64)?;
        let left = BLOCK - end % BLOCK;
        if left < HEADER {
            self.advance(start, end, left)
        } else {
            Ok(end)
        }
    }

    /// `pos + by`, or corruption when an address (decoded from a damaged
    /// file) would lead past the largest offset a file can have.
    fn advance(&self, start: u64, pos: u64, by: u64) -> Result<u64> {
        pos.checked_add(by).ok_or_else(|| {
            self.corrupt(
                start,
                pos,
                "the record would run past the largest possible file offset",
            )
        })
    }

    fn bad(&self, start: u64, pos: u64, why: BadFragment) -> Error {
        match why {
            BadFragment::Zeroed if pos == start => self.corrupt(
                start,
                pos,
                "no record starts here: zero-filled region (unwritten or preallocated space)",
            ),
            BadFragment::Zeroed => self.corrupt(
                start,
                pos,
                "record cut short: zero-filled region (unwritten or preallocated space)",
            ),
            why => self.corrupt(start, pos, why.to_string()),
        }
    }

    /// Corruption at `pos`, naming the record's start when they differ.
    fn corrupt(&self, start: u64, pos: u64, reason: impl Into<String>) -> Error {
        let reason = reason.into();
        if pos == start {
            Error::corruption(&self.path, pos, reason)
        } else {
            Error::corruption(
                &self.path,
                pos,
                format!("{reason} (in the record starting at offset {start})"),
            )
        }
    }
}
