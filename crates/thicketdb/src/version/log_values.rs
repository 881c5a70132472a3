//! TRIAD-LOG: reading a log table's values where they lie, in the store's
//! logs. A value is read by its address (log, record, offset in the record,
//! length) from the fragments it lies in, each checksum verified, through a
//! small cache of log blocks (32 KiB, the log's unit): a 255-byte value
//! costs one block read on a miss, never its whole write group (up to
//! 1 MiB), and values written close together share the block. A cached
//! block holds raw bytes: the fragment a read needs is checked on every
//! read (a CRC32C of at most 32 KiB), so the cache adds no trust.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use quick_cache::sync::Cache;
use quick_cache::{OptionsBuilder, Weighter};

use crate::error::{Error, Result};
use crate::io::FileSystem;
use crate::log::{FragmentType, RandomAccessLogReader, ValueAddress, BLOCK_SIZE};
use crate::table::{note_block_read, ValueLog};
use crate::version::files::log_path;
use crate::version::log_spans::{Payload, SpanReader};

/// Open logs kept by a store's log-value reader.
const OPEN_LOGS: usize = 64;

#[derive(Clone)]
struct BlockWeight;

impl Weighter<(u64, u64), Arc<[u8]>> for BlockWeight {
    fn weight(&self, _: &(u64, u64), block: &Arc<[u8]>) -> u64 {
        block.len().max(1) as u64
    }
}

/// Raw log blocks by (log, block index).
type BlockCache = Cache<(u64, u64), Arc<[u8]>, BlockWeight>;

/// Reads log tables' values from the logs of the store in `dir`.
pub struct StoreLogs {
    dir: PathBuf,
    fs: Arc<dyn FileSystem>,
    logs: Cache<u64, Arc<RandomAccessLogReader>>,
    /// Raw log blocks by (log, block index); `None`: no cache.
    blocks: Option<BlockCache>,
    /// Value bytes a compaction reads at once (`triad_log_compaction_batch`).
    batch_bytes: u64,
    /// Values read in batches, and the span reads they took.
    batch_values: AtomicU64,
    batch_reads: AtomicU64,
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
                .estimated_items_capacity((cache_bytes / BLOCK_SIZE as u64).max(16) as usize)
                .weight_capacity(cache_bytes)
                .hot_allocation(0.5)
                .build();
            match options {
                Ok(o) => {
                    Cache::with_options(o, BlockWeight, Default::default(), Default::default())
                }
                // Only invalid fractions fail; these are constants.
                Err(_) => Cache::with_weighter(16, cache_bytes, BlockWeight),
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

    /// Lets a compaction read `bytes` of a log table's values at once.
    pub fn with_batch_bytes(self, bytes: u64) -> StoreLogs {
        StoreLogs {
            batch_bytes: bytes,
            ..self
        }
    }

    fn reader(&self, log: u64) -> Result<Arc<RandomAccessLogReader>> {
        self.logs.get_or_insert_with(&log, || {
            let path = log_path(&self.dir, log);
            let file = self.fs.open_random(&path)?;
            Ok(Arc::new(RandomAccessLogReader::new(file, path)))
        })
    }

    /// Bytes of log blocks the cache may hold (0: no cache).
    pub fn cache_capacity(&self) -> u64 {
        self.blocks.as_ref().map_or(0, |c| c.capacity())
    }

    /// Closes a deleted log.
    pub fn evict_log(&self, log: u64) {
        self.logs.remove(&log);
    }
}

impl ValueLog for StoreLogs {
    fn batch_bytes(&self) -> u64 {
        self.batch_bytes
    }

    /// In log order, each log's needed blocks read in spans
    /// (`log_spans.rs`), not through the block cache: a batch reads each
    /// block it needs once, and keeping them would evict the blocks gets
    /// use.
    fn read_values(
        &self,
        addresses: &[&[u8]],
        out: &mut [Vec<u8>],
        at: (&Path, u64),
    ) -> Result<()> {
        let mut decoded = Vec::with_capacity(addresses.len());
        for (i, address) in addresses.iter().enumerate() {
            let address = ValueAddress::decode(address)
                .map_err(|why| Error::corruption(at.0, at.1, format!("log table entry: {why}")))?;
            decoded.push((address, i));
        }
        decoded.sort_unstable_by_key(|(a, _)| (a.record.log_number, a.record.offset, a.offset));
        for one_log in decoded.chunk_by(|a, b| a.0.record.log_number == b.0.record.log_number) {
            let reader = self.reader(one_log[0].0.record.log_number)?;
            let in_order: Vec<ValueAddress> = one_log.iter().map(|(a, _)| *a).collect();
            let mut spans = SpanReader::new(&reader);
            for (i, (_, slot)) in one_log.iter().enumerate() {
                spans.read_value(&in_order[i..], &mut out[*slot])?;
            }
            self.batch_values
                .fetch_add(one_log.len() as u64, Ordering::Relaxed);
            self.batch_reads.fetch_add(spans.reads(), Ordering::Relaxed);
        }
        Ok(())
    }

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
                let index = pos / BLOCK_SIZE as u64;
                let block = cache.get_or_insert_with(&(log, index), || {
                    note_block_read();
                    reader.read_block(index).map(Arc::from)
                })?;
                let (kind, payload) = reader.fragment_in_block(start, pos, &block)?;
                Ok((kind, Payload(block, payload)))
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::PosixFs;
    use crate::log::{LogAddress, LogWriter};
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

    /// Small write groups (a few puts each) are each a record of their own:
    /// their values share log blocks, read once each.
    #[test]
    fn small_records_share_cached_blocks() {
        let dir = tempfile::tempdir().unwrap();
        let fs: Arc<dyn FileSystem> = Arc::new(PosixFs);
        let mut writer = LogWriter::new(fs.create(&log_path(dir.path(), 9)).unwrap());
        let mut values = Vec::new();
        for i in 0..2000u32 {
            let record = vec![(i % 251) as u8; 300];
            let offset = writer.add_record(&record).unwrap();
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
        let blocks = (2000 * 307) / BLOCK_SIZE as u64 + 1;
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
            assert_eq!(reads, if round == 0 { blocks } else { 0 }, "round {round}");
        }
    }
}
