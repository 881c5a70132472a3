//! TRIAD-LOG: reading a log table's values where they lie, in the store's
//! logs. A value is read by its address (log, record, offset in the record,
//! length) from the fragments it lies in, each checksum verified, through a
//! small cache of log fragments: a value costs the fragments it lies in on
//! a miss (a write group of a few puts is one fragment of a few hundred
//! bytes), never its whole write group (up to 1 MiB) nor the 32 KiB block
//! around it: under a memory cap a block per value read 32 KiB from the
//! device for a 255-byte value (docs/reproduction.md, "TRIAD, session 17
//! rounds"). Log files are opened without kernel read-ahead
//! (`open_random_scattered`): every read here says what it needs. A cached
//! fragment holds raw bytes, checked on every read (a CRC32C of at most
//! 32 KiB), so the cache adds no trust.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use quick_cache::sync::Cache;
use quick_cache::{OptionsBuilder, Weighter};

use crate::error::{Error, Result};
use crate::io::FileSystem;
use crate::log::{FragmentType, RandomAccessLogReader, ValueAddress};
use crate::table::{note_block_read, ValueLog};
use crate::version::files::log_path;
use crate::version::log_spans::Payload;

/// Open logs kept by a store's log-value reader.
const OPEN_LOGS: usize = 64;

/// A cached fragment's expected size, for sizing the cache's table: a
/// write group of one or two puts of a few hundred bytes.
const EXPECTED_FRAGMENT: u64 = 512;

#[derive(Clone)]
struct ByteWeight;

impl Weighter<(u64, u64), Arc<[u8]>> for ByteWeight {
    fn weight(&self, _: &(u64, u64), block: &Arc<[u8]>) -> u64 {
        block.len().max(1) as u64
    }
}

/// Raw log fragments (header and payload) by (log, file offset).
type FragmentCache = Cache<(u64, u64), Arc<[u8]>, ByteWeight>;

/// Reads log tables' values from the logs of the store in `dir`.
pub struct StoreLogs {
    dir: PathBuf,
    fs: Arc<dyn FileSystem>,
    logs: Cache<u64, Arc<RandomAccessLogReader>>,
    /// Raw log fragments by (log, file offset); `None`: no cache.
    blocks: Option<FragmentCache>,
    /// Value bytes a compaction's log pass keeps in memory before it
    /// spills (`triad_log_compaction_batch`, `log_prefetch.rs`).
    batch_bytes: u64,
    /// Values read in batches, and the span reads they took.
    batch_values: AtomicU64,
    batch_reads: AtomicU64,
    /// Log bytes those span reads read, and value bytes compactions
    /// spilled to scratch runs (`log_prefetch.rs`).
    batch_read_bytes: AtomicU64,
    spill_bytes: AtomicU64,
    /// Puts a compaction's log pass left unread: the merge drops them.
    shadowed: AtomicU64,
}

impl StoreLogs {
    /// Reads logs of `dir` through `fs`, caching up to `cache_bytes` of
    /// log blocks (0: none).
    pub fn new(dir: &Path, fs: Arc<dyn FileSystem>, cache_bytes: u64) -> StoreLogs {
        // Recently written blocks are read most: a large probation share,
        // so that a block stays long enough to be read again (the default
        // admits an item for good only on its second miss).
        let blocks = (cache_bytes > 0).then(|| {
            let options = OptionsBuilder::new()
                .estimated_items_capacity((cache_bytes / EXPECTED_FRAGMENT).max(16) as usize)
                .weight_capacity(cache_bytes)
                .hot_allocation(0.5)
                .build();
            match options {
                Ok(o) => {
                    Cache::with_options(o, ByteWeight, Default::default(), Default::default())
                }
                // Only invalid fractions fail; these are constants.
                Err(_) => Cache::with_weighter(16, cache_bytes, ByteWeight),
            }
        });
        StoreLogs {
            dir: dir.to_path_buf(),
            fs,
            logs: Cache::new(OPEN_LOGS),
            blocks,
            batch_bytes: 0,
            batch_values: AtomicU64::new(0),
            batch_reads: AtomicU64::new(0),
            batch_read_bytes: AtomicU64::new(0),
            spill_bytes: AtomicU64::new(0),
            shadowed: AtomicU64::new(0),
        }
    }

    /// Values read in batches since this reader was made.
    pub fn batch_values(&self) -> u64 {
        self.batch_values.load(Ordering::Relaxed)
    }

    /// Span reads those batches took.
    pub fn batch_reads(&self) -> u64 {
        self.batch_reads.load(Ordering::Relaxed)
    }

    /// Log bytes read by those span reads.
    pub fn batch_read_bytes(&self) -> u64 {
        self.batch_read_bytes.load(Ordering::Relaxed)
    }

    /// Value bytes compactions spilled to scratch runs.
    pub fn spill_bytes(&self) -> u64 {
        self.spill_bytes.load(Ordering::Relaxed)
    }

    /// Counts a compaction's pass over one log: `values` read in `reads`
    /// span reads of `bytes` in all.
    pub(crate) fn note_batch(&self, values: u64, reads: u64, bytes: u64) {
        self.batch_values.fetch_add(values, Ordering::Relaxed);
        self.batch_reads.fetch_add(reads, Ordering::Relaxed);
        self.batch_read_bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    /// Puts compactions' log passes left unread (the merge drops them).
    pub fn shadowed(&self) -> u64 {
        self.shadowed.load(Ordering::Relaxed)
    }

    /// Counts `puts` a compaction's log pass left unread.
    pub(crate) fn note_shadowed(&self, puts: u64) {
        self.shadowed.fetch_add(puts, Ordering::Relaxed);
    }

    /// Counts value bytes a compaction spilled.
    pub(crate) fn note_spill(&self, bytes: u64) {
        self.spill_bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    /// The store's directory and file system.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    pub(crate) fn fs(&self) -> &Arc<dyn FileSystem> {
        &self.fs
    }

    /// Log `log`, open for reads without kernel read-ahead.
    pub(crate) fn log_reader(&self, log: u64) -> Result<Arc<RandomAccessLogReader>> {
        self.reader(log)
    }

    /// Lets a compaction's log pass keep `bytes` of values in memory.
    pub fn with_batch_bytes(self, bytes: u64) -> StoreLogs {
        StoreLogs {
            batch_bytes: bytes,
            ..self
        }
    }

    /// Value bytes a compaction's log pass keeps in memory.
    pub fn batch_bytes(&self) -> u64 {
        self.batch_bytes
    }

    fn reader(&self, log: u64) -> Result<Arc<RandomAccessLogReader>> {
        self.logs.get_or_insert_with(&log, || {
            let path = log_path(&self.dir, log);
            let file = self.fs.open_random_scattered(&path)?;
            Ok(Arc::new(RandomAccessLogReader::new(file, path)))
        })
    }

    /// Bytes of log blocks the cache may hold (0: no cache).
    pub fn cache_capacity(&self) -> u64 {
        self.blocks.as_ref().map_or(0, |c| c.capacity())
    }

    /// Bytes of fragments the cache holds.
    #[cfg(test)]
    fn cached_bytes(&self) -> u64 {
        self.blocks.as_ref().map_or(0, |c| c.weight())
    }

    /// Closes a deleted log.
    pub fn evict_log(&self, log: u64) {
        self.logs.remove(&log);
    }
}

impl ValueLog for StoreLogs {
    fn read_value(&self, address: &[u8], out: &mut Vec<u8>, at: (&Path, u64)) -> Result<()> {
        let address = ValueAddress::decode(address)
            .map_err(|why| Error::corruption(at.0, at.1, format!("log table entry: {why}")))?;
        let log = address.record.log_number;
        let reader = self.reader(log)?;
        let Some(cache) = &self.blocks else {
            return reader.read_value_into(&address, out, |start, pos| {
                note_block_read();
                reader.read_fragment_at(start, pos)
            });
        };
        reader.read_value_into(
            &address,
            out,
            |start, pos| -> Result<(FragmentType, Payload)> {
                let raw = cache.get_or_insert_with(&(log, pos), || {
                    note_block_read();
                    reader.read_raw_fragment(start, pos).map(Arc::from)
                })?;
                let (kind, payload) = reader.fragment_at(start, pos, &raw)?;
                Ok((kind, Payload(raw, payload)))
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::PosixFs;
    use crate::log::{LogAddress, LogWriter, BLOCK_SIZE};
    use crate::table::blocks_read_on_this_thread;

    #[test]
    fn values_read_again_come_from_the_fragment_cache() {
        let dir = tempfile::tempdir().unwrap();
        let fs: Arc<dyn FileSystem> = Arc::new(PosixFs);
        let mut writer = LogWriter::new(fs.create(&log_path(dir.path(), 5)).unwrap());
        let record: Vec<u8> = (0..50_000u32).map(|i| (i % 251) as u8).collect();
        let offset = writer.add_record(&record).unwrap();
        writer.flush().unwrap();
        let mut encoded = Vec::new();
        let address = ValueAddress {
            record: LogAddress::new(5, offset),
            offset: 32_000,
            len: 1_000,
        };
        address.encode_to(&mut encoded);
        let at = (dir.path(), 0);
        // Without a cache each fragment is read each time; with one, each
        // block once.
        for (cache, reads) in [(0, 4), (1 << 20, 2)] {
            let logs = StoreLogs::new(dir.path(), fs.clone(), cache);
            let before = blocks_read_on_this_thread();
            let mut value = Vec::new();
            for _ in 0..2 {
                logs.read_value(&encoded, &mut value, at).unwrap();
                assert_eq!(value, &record[32_000..33_000], "spans two fragments");
            }
            assert_eq!(
                blocks_read_on_this_thread() - before,
                reads,
                "cache {cache}"
            );
        }
    }

    /// Small write groups (a few puts each) are each a record of their own,
    /// one fragment (two where it crosses a block boundary): a value read
    /// costs its fragments alone (the cache holds 307 bytes for it, not the
    /// 32 KiB block it lies in), once.
    #[test]
    fn a_value_costs_its_own_fragment_read_once() {
        let dir = tempfile::tempdir().unwrap();
        let fs: Arc<dyn FileSystem> = Arc::new(PosixFs);
        let mut writer = LogWriter::new(fs.create(&log_path(dir.path(), 9)).unwrap());
        let mut values = Vec::new();
        // Fragments each value lies in (two where its record crosses a
        // block boundary inside it) and their bytes, header included.
        let (mut fragments, mut fragment_bytes) = (0, 0);
        for i in 0..2000u32 {
            let record = vec![(i % 251) as u8; 300];
            let offset = writer.add_record(&record).unwrap();
            let first = (BLOCK_SIZE as u64 - offset % BLOCK_SIZE as u64) - 7;
            let (count, bytes) = match first {
                f if f >= 300 => (1, 307),
                f if f >= 275 => (1, 7 + f),
                f if f <= 20 => (1, 7 + 300 - f),
                f => (2, 7 + f + 7 + 300 - f),
            };
            fragments += count;
            fragment_bytes += bytes;
            let mut encoded = Vec::new();
            ValueAddress {
                record: LogAddress::new(9, offset),
                offset: 20,
                len: 255,
            }
            .encode_to(&mut encoded);
            values.push((encoded, record));
        }
        writer.flush().unwrap();
        let logs = StoreLogs::new(dir.path(), fs, 16 << 20);
        let mut value = Vec::new();
        for round in 0..2 {
            let before = blocks_read_on_this_thread();
            for (encoded, record) in values.iter().rev() {
                logs.read_value(encoded, &mut value, (dir.path(), 0))
                    .unwrap();
                assert_eq!(value, &record[20..275]);
            }
            let reads = blocks_read_on_this_thread() - before;
            assert_eq!(reads, if round == 0 { fragments } else { 0 }, "round {round}");
            assert_eq!(logs.cached_bytes(), fragment_bytes, "round {round}");
        }
    }
}
