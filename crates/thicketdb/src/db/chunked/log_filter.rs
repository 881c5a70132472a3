//! YoDB's partitioned log Bloom filters: a chunk log's keys split over
//! filters that each cover one stretch of `part_bytes` of the log, so a get
//! learns both whether to search the log and which part of it. Each part
//! also keeps the offsets of its records (8 bytes a record), where a
//! search of the part reads. Built as records are appended, or by one pass
//! over the log: at an open after a crash, or on the log's first use after
//! a clean close (`chunk_log.rs`); never persisted.

use xxhash_rust::xxh3::xxh3_64;

use crate::table::bloom_probes as probes;

/// Probes per key: about the optimum for the 10–400 bits per key the
/// parts get at the default sizes.
const PROBES: u8 = 7;
/// The smallest filter of a part, in 64-bit words.
const MIN_WORDS: usize = 16;

/// One part: a Bloom filter over the keys of the records starting in it,
/// and those records' offsets, oldest first.
struct LogPart {
    words: Vec<u64>,
    records: Vec<u64>,
}

impl LogPart {
    fn bits(&self) -> u64 {
        self.words.len() as u64 * 64
    }

    fn add(&mut self, key: &[u8]) {
        let bits = self.bits();
        for bit in probes(xxh3_64(key), PROBES, bits) {
            self.words[(bit / 64) as usize] |= 1 << (bit % 64);
        }
    }

    fn may_contain(&self, key: &[u8]) -> bool {
        probes(xxh3_64(key), PROBES, self.bits())
            .all(|bit| self.words[(bit / 64) as usize] & (1 << (bit % 64)) != 0)
    }
}

/// The filters of one chunk log.
pub struct LogFilters {
    part_bytes: u64,
    words_per_part: usize,
    parts: Vec<LogPart>,
}

impl LogFilters {
    /// Filters for a log expected to reach `log_limit` bytes, in `parts`
    /// parts (a log past the limit gets more parts of the same size).
    pub fn new(log_limit: u64, parts: usize) -> LogFilters {
        let part_bytes = log_limit.div_ceil(parts.max(1) as u64).max(1);
        // Half a bit of filter per byte of log: 15 bits a key for records
        // of 30 bytes, more for larger ones.
        let words_per_part = ((part_bytes / 2).div_ceil(64) as usize).max(MIN_WORDS);
        LogFilters {
            part_bytes,
            words_per_part,
            parts: Vec::new(),
        }
    }

    /// Empty filters of the same shape.
    pub fn empty_like(&self) -> LogFilters {
        LogFilters {
            part_bytes: self.part_bytes,
            words_per_part: self.words_per_part,
            parts: Vec::new(),
        }
    }

    /// Records that the record at `offset` holds `keys`.
    pub fn add_record<'k>(&mut self, offset: u64, keys: impl IntoIterator<Item = &'k [u8]>) {
        let index = (offset / self.part_bytes) as usize;
        while self.parts.len() <= index {
            self.parts.push(LogPart {
                words: vec![0; self.words_per_part],
                records: Vec::new(),
            });
        }
        let part = &mut self.parts[index];
        part.records.push(offset);
        for key in keys {
            part.add(key);
        }
    }

    /// The record offsets of every part whose filter admits `key`, newest
    /// part first (each list oldest record first).
    pub fn candidates<'a>(&'a self, key: &'a [u8]) -> impl Iterator<Item = &'a [u64]> + 'a {
        self.parts
            .iter()
            .rev()
            .filter(move |p| !p.records.is_empty() && p.may_contain(key))
            .map(|p| p.records.as_slice())
    }

    /// Every record's offset, oldest first.
    pub fn all_records(&self) -> impl Iterator<Item = u64> + '_ {
        self.parts.iter().flat_map(|p| p.records.iter().copied())
    }

    /// Bytes of memory the filters and record offsets take.
    pub fn memory_bytes(&self) -> usize {
        self.parts
            .iter()
            .map(|p| p.words.len() * 8 + p.records.len() * 8)
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Whatever the keys and record sizes, every key appended is
        /// found: its record's part is a candidate and lists the record.
        #[test]
        fn filters_never_hide_a_key(
            records in prop::collection::vec(
                (prop::collection::vec(prop::collection::vec(any::<u8>(), 0..12), 1..6), 1u64..600),
                1..120,
            ),
            limit in 64u64..8192,
            parts in 1usize..20,
        ) {
            let mut filters = LogFilters::new(limit, parts);
            let mut offset = 0;
            let mut placed = Vec::new();
            for (keys, len) in &records {
                filters.add_record(offset, keys.iter().map(Vec::as_slice));
                placed.push((offset, keys));
                offset += len;
            }
            for (at, keys) in placed {
                for key in keys {
                    let found = filters.candidates(key).any(|records| records.contains(&at));
                    prop_assert!(found, "key {:?} of the record at {} hidden", key, at);
                }
            }
        }
    }

    #[test]
    fn absent_keys_are_mostly_ruled_out() {
        let mut filters = LogFilters::new(1 << 20, 16);
        for i in 0..1000u64 {
            let key = format!("present-{i}");
            filters.add_record(i * 1000, [key.as_bytes()]);
        }
        let admitted: usize = (0..1000)
            .map(|i| filters.candidates(format!("absent-{i}").as_bytes()).count())
            .sum();
        // 16 parts × 1000 keys: a useless filter would admit 16000 times.
        assert!(admitted < 400, "{admitted} parts admitted absent keys");
    }

    #[test]
    fn candidates_come_newest_part_first() {
        let mut filters = LogFilters::new(100, 4);
        filters.add_record(0, [&b"k"[..]]);
        filters.add_record(60, [&b"k"[..]]);
        let parts: Vec<&[u64]> = filters.candidates(b"k").collect();
        assert_eq!(parts, vec![&[60u64][..], &[0u64][..]]);
    }
}
