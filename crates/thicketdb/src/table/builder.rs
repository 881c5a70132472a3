//! Writes one table at the end of a (segment) file.
//!
//! Layout: data blocks, the filter block (if enabled), the properties
//! block, the index block, then the footer. Each index entry maps a
//! separator key (`>=` every key of its data block, `<` every key of the
//! next) to the block's handle.

use std::cmp::Ordering;

use super::block_builder::BlockBuilder;
use super::block_handle::BlockHandle;
use super::block_io::{write_block, write_stored, BLOCK_TRAILER_LEN};
use super::compression::{self, CompressionType};
use super::filter::FilterBuilder;
use super::footer::{
    Footer, FORMAT_VERSION, LOG_TABLE_FORMAT_VERSION, NAMED_FILTER_FORMAT_VERSION,
    RANGE_DEL_FORMAT_VERSION,
};
use super::options::TableOptions;
use super::properties::TableProperties;
use super::separator::shortest_separator;
use crate::error::{Error, Result};
use crate::format::internal_key::{self, InternalKey, ParsedKey, ValueKind, MAX_SEQUENCE};
use crate::format::range_tombstone::Fragments;
use crate::format::KeyOrder;
use crate::io::WritableFile;

/// Largest key plus value accepted, keeping block offsets well inside u32.
const MAX_ENTRY_LEN: usize = 1 << 30;

/// The page `block_align` keeps data blocks within: 4 KiB, the page of
/// every target this engine runs on, so one block costs one page read.
pub const BLOCK_ALIGNMENT: u64 = 4096;

/// More than a data block grows by for an entry beside its key and value:
/// the three varint lengths and a restart point.
const ENTRY_OVERHEAD: usize = 3 * 5 + 4;

/// The most zeros `block_align` writes after a block to start the next
/// on a page boundary: an eighth of a page. Entries larger than that leave
/// their blocks straddling pages rather than waste up to an entry per page
/// (with 1,000-byte values, a quarter of the file).
const MAX_PADDING: u64 = BLOCK_ALIGNMENT / 8;

/// What a finished table is and where it was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableSummary {
    /// Absolute offset of the table's first byte in the file.
    pub offset: u64,
    /// Bytes of the table, footer included.
    pub length: u64,
    pub properties: TableProperties,
}

/// Builds a table from entries added in increasing internal-key order.
/// After an error the builder (and the bytes it appended) must be abandoned.
pub struct TableBuilder<'a> {
    file: &'a mut dyn WritableFile,
    options: TableOptions,
    start: u64,
    data_block: BlockBuilder,
    index_block: BlockBuilder,
    /// Handle of the last flushed data block; its index entry is written
    /// once the next key is known, so the separator can be shortened.
    pending: Option<BlockHandle>,
    last_key: Vec<u8>,
    filter: Option<FilterBuilder>,
    props: TableProperties,
    separator: Vec<u8>,
    handle_buf: Vec<u8>,
    compressed: Vec<u8>,
    /// The table's range tombstones, written as its range-deletion block.
    range_dels: Fragments,
}

impl<'a> TableBuilder<'a> {
    /// Starts a table at `file`'s current end.
    pub fn new(options: &TableOptions, file: &'a mut dyn WritableFile) -> TableBuilder<'a> {
        let start = file.len();
        TableBuilder {
            file,
            options: options.clone(),
            start,
            data_block: BlockBuilder::new(options.restart_interval),
            // Full keys in every index entry let lookups binary-search the
            // index without reconstructing prefix-compressed keys.
            index_block: BlockBuilder::new(1),
            pending: None,
            last_key: Vec::new(),
            filter: FilterBuilder::for_options(options),
            props: TableProperties::default(),
            separator: Vec::new(),
            handle_buf: Vec::new(),
            compressed: Vec::new(),
            range_dels: Fragments::default(),
        }
    }

    /// Adds an entry; `internal_key` must be a well-formed internal key
    /// greater than every key added before. Flushes and compactions feed
    /// the builder sorted, validated entries, so a bad one is reported as
    /// an invariant violation.
    pub fn add(&mut self, internal_key: &[u8], value: &[u8]) -> Result<()> {
        let parsed = ParsedKey::parse(internal_key)
            .ok_or_else(|| Error::invariant("table builder given a malformed internal key"))?;
        if internal_key.len() + value.len() > MAX_ENTRY_LEN {
            return Err(Error::invariant(format!(
                "entry of {} bytes exceeds the {MAX_ENTRY_LEN}-byte limit",
                internal_key.len() + value.len()
            )));
        }
        let first = self.props.entries == 0;
        if !first && self.options.order.internal(internal_key, &self.last_key) != Ordering::Greater
        {
            return Err(Error::invariant(
                "table keys must be added in strictly increasing order",
            ));
        }
        if self.would_cross_a_page(internal_key.len() + value.len()) {
            self.flush_data_block()?;
        }
        if let Some(handle) = self.pending.take() {
            if self.options.order.is_bytewise() {
                shortest_separator(&mut self.separator, &self.last_key, internal_key);
            } else {
                // Shortening bumps a byte, which only orders correctly
                // bytewise (LevelDB's C comparators do not shorten either).
                self.separator.clear();
                self.separator.extend_from_slice(&self.last_key);
            }
            self.add_index_entry(handle);
        }
        if first || parsed.user_key != internal_key::user_key(&self.last_key) {
            if let Some(filter) = &mut self.filter {
                filter.add(parsed.user_key);
            }
            self.props.hll.add(parsed.user_key);
        }
        self.record(internal_key, value, &parsed);
        self.data_block.add(internal_key, value);
        self.last_key.clear();
        self.last_key.extend_from_slice(internal_key);
        if self.data_block.size_estimate() >= self.options.block_size {
            self.flush_data_block()?;
        }
        Ok(())
    }

    /// Bytes the table would occupy if finished now, not counting the
    /// filter and properties blocks.
    pub fn estimated_size(&self) -> u64 {
        self.file.len() - self.start
            + (self.data_block.size_estimate() + self.index_block.size_estimate()) as u64
    }

    /// Entries added so far.
    pub fn entries(&self) -> u64 {
        self.props.entries
    }

    /// Gives the table these range tombstones (fragments already cut to
    /// the table's share of the key space). The table's key range then
    /// covers them: its smallest key starts at the first fragment at the
    /// latest, its largest key reaches the last fragment's (exclusive) end.
    /// Range tombstones exist only in byte order.
    pub fn set_range_deletions(&mut self, fragments: Fragments) -> Result<()> {
        if !fragments.is_empty() && !self.options.order.is_bytewise() {
            return Err(Error::invariant(
                "range tombstones in a table with a custom key order",
            ));
        }
        self.range_dels = fragments;
        Ok(())
    }

    /// Whether the table would hold anything: entries or range tombstones.
    pub fn has_contents(&self) -> bool {
        self.props.entries > 0 || !self.range_dels.is_empty()
    }

    /// Writes the remaining blocks and the footer. Does not sync the file.
    pub fn finish(mut self) -> Result<TableSummary> {
        self.flush_data_block()?;
        if let Some(handle) = self.pending.take() {
            self.separator.clear();
            self.separator.extend_from_slice(&self.last_key);
            self.add_index_entry(handle);
        }
        let bits = self
            .filter
            .as_ref()
            .map_or_else(Vec::new, FilterBuilder::finish);
        let filter = if bits.is_empty() {
            BlockHandle::default()
        } else {
            // The filter is random bits: compressing it would only cost time.
            self.write_raw(&bits, CompressionType::None)?
        };
        // A named policy's table says so, and in a format older readers
        // refuse rather than take its filter for a Bloom filter.
        self.props.filter_policy = self
            .filter
            .as_ref()
            .and_then(FilterBuilder::policy_name)
            .map(str::to_string);
        self.props.format_version = match (&self.options.log_refs, &self.props.filter_policy) {
            (Some(logs), _) => {
                self.props.log_refs.clone_from(logs);
                LOG_TABLE_FORMAT_VERSION
            }
            _ if !self.range_dels.is_empty() => RANGE_DEL_FORMAT_VERSION,
            (None, Some(_)) => NAMED_FILTER_FORMAT_VERSION,
            (None, None) => FORMAT_VERSION,
        };
        self.props.largest_key.clone_from(&self.last_key);
        self.props.keyspace = self.options.keyspace;
        self.write_range_deletions()?;
        let properties = self.write_raw(&self.props.encode(), self.options.compression)?;
        let index_raw = self.index_block.finish();
        let index = write_block(
            self.file,
            self.start,
            index_raw,
            self.options.compression,
            &mut self.compressed,
        )?;
        let footer = Footer {
            filter,
            properties,
            index,
            version: self.props.format_version,
        };
        self.file.append(&footer.encode())?;
        Ok(TableSummary {
            offset: self.start,
            length: self.file.len() - self.start,
            properties: self.props,
        })
    }

    /// Writes the range-deletion block, widens the key and sequence ranges
    /// to the tombstones and records the block in the properties.
    fn write_range_deletions(&mut self) -> Result<()> {
        let Some((start, end)) = self.range_dels.bounds() else {
            return Ok(());
        };
        let (min_seq, max_seq) = self
            .range_dels
            .seq_range()
            .expect("fragments have sequences");
        // A bound key with the largest sequence sorts before every entry of
        // its user key, so the smallest key covers `start`.
        let start = InternalKey::new(start, MAX_SEQUENCE, ValueKind::SEEK).into_vec();
        let end = largest_covered(end);
        let order = KeyOrder::Bytewise;
        let p = &mut self.props;
        if p.entries == 0 {
            (p.smallest_key, p.largest_key, p.min_seq, p.max_seq) = (start, end, min_seq, max_seq);
        } else {
            if order.internal(&start, &p.smallest_key).is_lt() {
                p.smallest_key = start;
            }
            if order.internal(&end, &p.largest_key).is_gt() {
                p.largest_key = end;
            }
            (p.min_seq, p.max_seq) = (p.min_seq.min(min_seq), p.max_seq.max(max_seq));
        }
        p.range_deletions = self.range_dels.stacked();
        let encoded = self.range_dels.encode();
        let handle = self.write_raw(&encoded, self.options.compression)?;
        self.props.range_del_block = Some(handle);
        Ok(())
    }

    fn record(&mut self, key: &[u8], value: &[u8], parsed: &ParsedKey<'_>) {
        let p = &mut self.props;
        if p.entries == 0 {
            p.smallest_key = key.to_vec();
            p.min_seq = parsed.sequence;
            p.max_seq = parsed.sequence;
        }
        p.entries += 1;
        if parsed.kind == ValueKind::Deletion {
            p.deletions += 1;
        }
        p.raw_key_bytes += key.len() as u64;
        p.raw_value_bytes += value.len() as u64;
        p.min_seq = p.min_seq.min(parsed.sequence);
        p.max_seq = p.max_seq.max(parsed.sequence);
    }

    /// With `block_align`, whether the open block should end before an
    /// entry of `entry_len` key and value bytes: it then ends within
    /// `MAX_PADDING` of a page boundary that the entry would cross, and the
    /// zeros after it start the next block on that boundary. Blocks larger
    /// than a page end only at the boundary nearest their size.
    fn would_cross_a_page(&self, entry_len: usize) -> bool {
        if !self.options.block_align || self.data_block.is_empty() {
            return false;
        }
        let stored = (self.data_block.size_estimate() + BLOCK_TRAILER_LEN) as u64;
        if stored + BLOCK_ALIGNMENT < self.options.block_size as u64 {
            return false;
        }
        let gap = gap_to_page(self.file.len() + stored);
        gap <= MAX_PADDING && (entry_len + ENTRY_OVERHEAD) as u64 > gap
    }

    fn flush_data_block(&mut self) -> Result<()> {
        if self.data_block.is_empty() {
            return Ok(());
        }
        let raw = self.data_block.finish();
        self.props.data_bytes += raw.len() as u64;
        let kind = compression::compress(self.options.compression, raw, &mut self.compressed);
        let stored: &[u8] = if kind == CompressionType::None {
            raw
        } else {
            &self.compressed
        };
        let handle = write_stored(self.file, self.start, stored, kind)?;
        let gap = gap_to_page(self.file.len());
        if self.options.block_align && gap <= MAX_PADDING {
            self.file.append(&[0; MAX_PADDING as usize][..gap as usize])?;
        }
        self.data_block.reset();
        self.pending = Some(handle);
        Ok(())
    }

    /// Adds `self.separator -> handle` to the index.
    fn add_index_entry(&mut self, handle: BlockHandle) {
        self.handle_buf.clear();
        handle.encode_to(&mut self.handle_buf);
        self.index_block.add(&self.separator, &self.handle_buf);
    }

    fn write_raw(&mut self, raw: &[u8], compression: CompressionType) -> Result<BlockHandle> {
        write_block(
            self.file,
            self.start,
            raw,
            compression,
            &mut self.compressed,
        )
    }
}

/// Bytes from `offset` to the next page boundary (0 on one).
fn gap_to_page(offset: u64) -> u64 {
    (BLOCK_ALIGNMENT - offset % BLOCK_ALIGNMENT) % BLOCK_ALIGNMENT
}

/// The largest internal key a table whose tombstones end at `end`
/// (exclusive) must reach. An end of `x ++ 0x00` is the successor of `x`
/// (how outputs cut tombstones at a table's last key): `x`'s oldest
/// possible entry, so the next table may start right after `x`. Otherwise
/// `end` itself with the largest sequence, below every entry of `end`:
/// user-key range tests then count `end` in, which only costs a look.
fn largest_covered(end: &[u8]) -> Vec<u8> {
    match end.split_last() {
        Some((0, before)) => InternalKey::new(before, 0, ValueKind::Deletion).into_vec(),
        _ => InternalKey::new(end, MAX_SEQUENCE, ValueKind::SEEK).into_vec(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::InternalKey;
    use crate::table::testutil::MemFile;

    fn ik(user: &str, seq: u64, kind: ValueKind) -> Vec<u8> {
        InternalKey::new(user.as_bytes(), seq, kind).into_vec()
    }

    #[test]
    fn rejects_out_of_order_and_malformed_keys() {
        let mut file = MemFile::default();
        let mut b = TableBuilder::new(&TableOptions::default(), &mut file);
        b.add(&ik("b", 5, ValueKind::Value), b"v").unwrap();
        for bad in [
            ik("a", 9, ValueKind::Value),
            ik("b", 5, ValueKind::Value),
            ik("b", 6, ValueKind::Value),
        ] {
            assert!(matches!(b.add(&bad, b"v"), Err(Error::Invariant { .. })));
        }
        match b.add(b"short", b"v") {
            Err(Error::Invariant { location, .. }) => {
                assert!(location.starts_with(file!()), "{location}")
            }
            other => panic!("{other:?}"),
        }
        b.add(&ik("b", 4, ValueKind::Deletion), b"").unwrap();
        assert_eq!(b.entries(), 2);
    }

    #[test]
    fn summary_and_properties() {
        let mut file = MemFile::default();
        file.append(&[0; 16]).unwrap();
        let opts = TableOptions {
            block_size: 256,
            ..TableOptions::default()
        };
        let mut b = TableBuilder::new(&opts, &mut file);
        for i in 0..1000u64 {
            let kind = if i % 10 == 0 {
                ValueKind::Deletion
            } else {
                ValueKind::Value
            };
            b.add(&ik(&format!("k{i:05}"), 5000 - i, kind), b"value")
                .unwrap();
        }
        assert!(b.estimated_size() > 10_000);
        let s = b.finish().unwrap();
        assert_eq!(s.offset, 16);
        assert_eq!(s.offset + s.length, file.size());
        let p = &s.properties;
        assert_eq!(p.entries, 1000);
        assert_eq!(p.deletions, 100);
        assert_eq!(p.raw_value_bytes, 5000);
        assert_eq!(p.raw_key_bytes, 1000 * 14);
        assert_eq!(p.smallest_key, ik("k00000", 5000, ValueKind::Deletion));
        assert_eq!(p.largest_key, ik("k00999", 4001, ValueKind::Value));
        assert_eq!((p.min_seq, p.max_seq), (4001, 5000));
        assert!((p.hll.estimate() - 1000.0).abs() < 50.0);
        assert!(p.data_bytes > 14_000);
        assert_eq!(p.format_version, FORMAT_VERSION);
    }
}
