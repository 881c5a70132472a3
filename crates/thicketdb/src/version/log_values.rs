//! TRIAD-LOG: reading a log table's values where they lie, in the store's
//! logs. A value is read by its address (log, record, offset in the record,
//! length) from the fragments it lies in, each checksum verified, through a
//! small cache of verified fragments: a 255-byte value costs one fragment
//! read (at most 32 KiB) on a miss, never its whole write group (up to
//! 1 MiB), and reads of values written together share the fragment.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use quick_cache::sync::Cache;
use quick_cache::{OptionsBuilder, Weighter};

use crate::error::{Error, Result};
use crate::io::FileSystem;
use crate::log::{FragmentType, RandomAccessLogReader, ValueAddress};
use crate::table::{note_block_read, ValueLog};
use crate::version::files::log_path;

/// Open logs kept by a store's log-value reader.
const OPEN_LOGS: usize = 64;

/// A full fragment's payload, the typical cached item.
const FRAGMENT_BYTES: u64 = 32 << 10;

/// A verified fragment: its type and payload.
type Fragment = (FragmentType, Arc<[u8]>);

#[derive(Clone)]
struct FragmentWeight;

impl Weighter<(u64, u64), Fragment> for FragmentWeight {
    fn weight(&self, _: &(u64, u64), fragment: &Fragment) -> u64 {
        fragment.1.len().max(1) as u64
    }
}

/// Reads log tables' values from the logs of the store in `dir`.
pub struct StoreLogs {
    dir: PathBuf,
    fs: Arc<dyn FileSystem>,
    logs: Cache<u64, Arc<RandomAccessLogReader>>,
    /// Verified fragments by (log, header offset); `None`: no cache.
    fragments: Option<Cache<(u64, u64), Fragment, FragmentWeight>>,
}

impl StoreLogs {
    /// Reads logs of `dir` through `fs`, caching up to `cache_bytes` of
    /// verified fragments (0: none).
    pub fn new(dir: &Path, fs: Arc<dyn FileSystem>, cache_bytes: u64) -> StoreLogs {
        // Fragments are large (up to 32 KiB) and the recently written ones
        // are read most: few shards and a large probation share, so that a
        // fragment stays long enough to be read again (the defaults, made
        // for small items, admit one only on its second miss).
        let fragments = (cache_bytes > 0).then(|| {
            let options = OptionsBuilder::new()
                .estimated_items_capacity((cache_bytes / FRAGMENT_BYTES).max(16) as usize)
                .weight_capacity(cache_bytes)
                .shards(4)
                .hot_allocation(0.5)
                .build();
            match options {
                Ok(o) => {
                    Cache::with_options(o, FragmentWeight, Default::default(), Default::default())
                }
                // Only invalid fractions fail; these are constants.
                Err(_) => Cache::with_weighter(16, cache_bytes, FragmentWeight),
            }
        });
        StoreLogs {
            dir: dir.to_path_buf(),
            fs,
            logs: Cache::new(OPEN_LOGS),
            fragments,
        }
    }

    fn reader(&self, log: u64) -> Result<Arc<RandomAccessLogReader>> {
        self.logs.get_or_insert_with(&log, || {
            let path = log_path(&self.dir, log);
            let file = self.fs.open_random(&path)?;
            Ok(Arc::new(RandomAccessLogReader::new(file, path)))
        })
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
        let read = |start: u64, pos: u64| -> Result<Fragment> {
            note_block_read();
            let (kind, payload) = reader.read_fragment_at(start, pos)?;
            Ok((kind, payload.into()))
        };
        let Some(cache) = &self.fragments else {
            return reader.read_value_into(&address, out, read);
        };
        reader.read_value_into(&address, out, |start, pos| {
            cache.get_or_insert_with(&(log, pos), || read(start, pos))
        })
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
        for (cache, reads) in [(0, 4), (1 << 20, 2)] {
            let logs = StoreLogs::new(dir.path(), fs.clone(), cache);
            let before = blocks_read_on_this_thread();
            let mut value = Vec::new();
            for _ in 0..2 {
                logs.read_value(&encoded, &mut value, at).unwrap();
                assert_eq!(value, &record[32_000..33_000], "spans two fragments");
            }
            assert_eq!(blocks_read_on_this_thread() - before, reads, "cache {cache}");
        }
    }
}
