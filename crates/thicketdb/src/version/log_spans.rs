//! TRIAD-LOG compaction reads: a batch of a log table's values, sorted by
//! their place in one log, read from spans of consecutive log blocks (one
//! read each, up to `MAX_SPAN`) instead of one 32 KiB block read per value
//! in key order. A table's values lie scattered over its log, so in key
//! order every value costs a block read; in log order the values of a
//! batch share the spans. Each fragment a value lies in is still checked
//! (`fragment_in_block`), so a span adds no trust.

use std::ops::Range;
use std::sync::Arc;

use crate::error::Result;
use crate::log::{FragmentType, RandomAccessLogReader, ValueAddress, BLOCK_SIZE, HEADER_SIZE};

const BLOCK: u64 = BLOCK_SIZE as u64;

/// Most bytes one span read takes.
const MAX_SPAN: u64 = 1 << 20;

/// A gap between two needed values up to which one span reads through it
/// (one larger read is cheaper than two seeks).
const MAX_GAP: u64 = 64 << 10;

/// A fragment's payload inside a shared block or span.
pub(crate) struct Payload(pub Arc<[u8]>, pub Range<usize>);

impl AsRef<[u8]> for Payload {
    fn as_ref(&self) -> &[u8] {
        &self.0[self.1.clone()]
    }
}

/// The first file byte a value can lie at: the record's start plus the
/// value's offset in it (headers only move it later).
fn lowest_start(a: &ValueAddress) -> u64 {
    a.record.offset.saturating_add(a.offset)
}

/// A file byte the value surely ends before: its logical end plus, for
/// each block boundary the record can cross until then, a trailer and a
/// header.
fn highest_end(a: &ValueAddress) -> u64 {
    let logical = a.offset.saturating_add(a.len);
    let per_boundary = 2 * HEADER_SIZE as u64;
    let boundaries = logical / (BLOCK - per_boundary) + 2;
    lowest_start(a)
        .saturating_add(a.len)
        .saturating_add(boundaries.saturating_mul(per_boundary))
}

/// Reads values of one log in increasing address order.
pub(crate) struct SpanReader<'a> {
    reader: &'a RandomAccessLogReader,
    /// The span's first byte in the file (a block start) and its bytes.
    start: u64,
    span: Arc<[u8]>,
    /// Whether the span reaches the end of the file (its last block may be
    /// short).
    to_file_end: bool,
    /// Span reads so far, and their bytes.
    reads: u64,
    bytes: u64,
}

impl<'a> SpanReader<'a> {
    pub fn new(reader: &'a RandomAccessLogReader) -> SpanReader<'a> {
        SpanReader {
            reader,
            start: 0,
            span: Arc::from(Vec::new()),
            to_file_end: false,
            reads: 0,
            bytes: 0,
        }
    }

    /// Reads made so far.
    pub fn reads(&self) -> u64 {
        self.reads
    }

    /// Bytes those reads read.
    pub fn bytes_read(&self) -> u64 {
        self.bytes
    }

    /// Whether block `index` is wholly in the span.
    fn holds(&self, index: u64) -> bool {
        let at = index.saturating_mul(BLOCK);
        let end = self.start + self.span.len() as u64;
        at >= self.start && (at.saturating_add(BLOCK) <= end || (self.to_file_end && at < end))
    }

    /// Reads a span from block `index` through the blocks `ahead` (the
    /// values still to read, in address order) need, up to `MAX_SPAN`.
    fn fill(&mut self, index: u64, ahead: &[ValueAddress]) -> Result<()> {
        let from = index.saturating_mul(BLOCK);
        let mut until = from.saturating_add(BLOCK);
        for a in ahead {
            if lowest_start(a) > until.saturating_add(MAX_GAP) {
                break;
            }
            let end = highest_end(a);
            if end.saturating_sub(from) > MAX_SPAN {
                break;
            }
            until = until.max(end);
        }
        let blocks = until.saturating_sub(from).div_ceil(BLOCK).max(1);
        let span = self.reader.read_blocks(index, blocks)?;
        self.to_file_end = (span.len() as u64) < blocks * BLOCK;
        self.start = from;
        self.span = Arc::from(span);
        self.reads += 1;
        self.bytes += self.span.len() as u64;
        Ok(())
    }

    /// Reads the value of `ahead[0]` into `out` (cleared first); `ahead`
    /// is it and the values read after it, in address order.
    pub fn read_value(&mut self, ahead: &[ValueAddress], out: &mut Vec<u8>) -> Result<()> {
        let Some(address) = ahead.first() else {
            out.clear();
            return Ok(());
        };
        let reader = self.reader;
        reader.read_value_into(
            address,
            out,
            |start, pos| -> Result<(FragmentType, Payload)> {
                let index = pos / BLOCK;
                if !self.holds(index) {
                    self.fill(index, ahead)?;
                }
                let at = (index * BLOCK - self.start) as usize;
                let end = (at + BLOCK as usize).min(self.span.len());
                let (kind, payload) = reader.fragment_in_block(start, pos, &self.span[at..end])?;
                Ok((
                    kind,
                    Payload(self.span.clone(), at + payload.start..at + payload.end),
                ))
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::{FileSystem, PosixFs};
    use crate::log::{LogAddress, LogWriter};
    use crate::version::files::log_path;

    /// A log of `n` small records (write groups of one 255-byte value
    /// after a 20-byte head), and each value's address.
    fn log_of(dir: &std::path::Path, n: u32) -> (RandomAccessLogReader, Vec<(ValueAddress, u8)>) {
        let fs: Arc<dyn FileSystem> = Arc::new(PosixFs);
        let path = log_path(dir, 3);
        let mut writer = LogWriter::new(fs.create(&path).unwrap());
        let mut values = Vec::new();
        for i in 0..n {
            let record = vec![(i % 251) as u8; 275];
            let offset = writer.add_record(&record).unwrap();
            let address = ValueAddress {
                record: LogAddress::new(3, offset),
                offset: 20,
                len: 255,
            };
            values.push((address, (i % 251) as u8));
        }
        writer.flush().unwrap();
        (RandomAccessLogReader::new(fs.open_random(&path).unwrap(), path), values)
    }

    #[test]
    fn values_in_log_order_share_a_few_span_reads() {
        let dir = tempfile::tempdir().unwrap();
        // 4000 x 282 bytes: about 1.1 MB, 35 log blocks.
        let (reader, values) = log_of(dir.path(), 4000);
        // Every third value, as a table holding a third of the log's keys.
        let wanted: Vec<_> = values.iter().step_by(3).collect();
        let addresses: Vec<ValueAddress> = wanted.iter().map(|(a, _)| *a).collect();
        let mut spans = SpanReader::new(&reader);
        let mut out = Vec::new();
        for (i, (_, byte)) in wanted.iter().enumerate() {
            spans.read_value(&addresses[i..], &mut out).unwrap();
            assert_eq!(out, vec![*byte; 255], "value {i}");
        }
        // One read per MiB of log (a block-per-value reader makes 1334).
        assert_eq!(spans.reads(), 2);
    }

    #[test]
    fn a_value_past_a_wide_gap_starts_a_new_span() {
        let dir = tempfile::tempdir().unwrap();
        let (reader, values) = log_of(dir.path(), 4000);
        // The first and the last value: 1.1 MB apart, far past MAX_GAP.
        let addresses = [values[0].0, values[3999].0];
        let mut spans = SpanReader::new(&reader);
        let mut out = Vec::new();
        spans.read_value(&addresses, &mut out).unwrap();
        assert_eq!(out, vec![values[0].1; 255]);
        assert_eq!(spans.span.len(), BLOCK as usize, "no read through the gap");
        spans.read_value(&addresses[1..], &mut out).unwrap();
        assert_eq!(out, vec![values[3999].1; 255]);
        assert_eq!(spans.reads(), 2);
    }

    #[test]
    fn a_damaged_fragment_in_a_span_is_corruption() {
        let dir = tempfile::tempdir().unwrap();
        let (_, values) = log_of(dir.path(), 200);
        let path = log_path(dir.path(), 3);
        let mut bytes = std::fs::read(&path).unwrap();
        // Inside the 101st record's value.
        let at = values[100].0.record.offset as usize + 7 + 100;
        bytes[at] ^= 0xff;
        std::fs::write(&path, bytes).unwrap();
        let fs: Arc<dyn FileSystem> = Arc::new(PosixFs);
        let reader = RandomAccessLogReader::new(fs.open_random(&path).unwrap(), path);
        let addresses: Vec<ValueAddress> = values.iter().map(|(a, _)| *a).collect();
        let mut spans = SpanReader::new(&reader);
        let mut out = Vec::new();
        for i in 0..100 {
            spans.read_value(&addresses[i..], &mut out).unwrap();
        }
        let err = spans.read_value(&addresses[100..], &mut out).unwrap_err();
        assert!(err.is_corruption(), "{err}");
    }
}
