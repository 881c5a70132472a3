//! A decoded (uncompressed) data or index block.
//!
//! Layout: prefix-compressed entries, then the restart array (u32 LE entry
//! offsets, the first always 0), then the u32 LE restart count. The block
//! remembers its file and absolute offset so that iterators can report
//! corruption precisely long after the block was read.
//!
//! In memory a block is one shared allocation: a head, then the block's
//! bytes. The head holds a copy of the restart array and, when a data
//! block has few and short restart keys, a copy of those keys. A cached
//! lookup then runs its binary search on the lines it touches anyway to
//! take its reference, instead of missing at the far end of the block and
//! again at each restart key it compares.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::format::coding::{decode_fixed32, get_varint32};
use crate::iterator::EntryLocation;

/// Extra bytes charged per cached block for the handle and allocator.
const OVERHEAD: usize = 64;
const CACHE_LINE: usize = 64;
/// Restart keys are copied into the head only for blocks with at most
/// this many restarts (a 4 KiB data block has a handful) ...
const HEAD_MAX_RESTARTS: usize = 16;
/// ... and at most this many key bytes, so the head stays a line or two.
const HEAD_MAX_KEY_BYTES: usize = 256;

/// A cheap, cloneable handle to a validated block. Kept to 48 bytes (a
/// thin path pointer, 32-bit offsets into the allocation) so that a block
/// cache slot fits one cache line.
#[derive(Clone)]
pub struct Block {
    /// The head: `num_restarts` u32 LE restart points, then, if
    /// `keys_in_head`, `num_restarts` u32 LE end offsets (within `bytes`)
    /// of the restart keys and the keys back to back. The block's bytes
    /// start at `data_start`.
    bytes: Arc<[u8]>,
    data_start: u32,
    keys_in_head: bool,
    /// Offset of the restart array in the block's bytes; entries occupy
    /// `data()[..restarts]`.
    restarts: u32,
    num_restarts: u32,
    file: Arc<PathBuf>,
    offset: u64,
}

impl std::fmt::Debug for Block {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Block")
            .field("file", &self.file)
            .field("offset", &self.offset)
            .field("len", &self.data().len())
            .field("restarts", &self.num_restarts)
            .finish()
    }
}

/// The decoded header of one entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct EntryHeader {
    pub shared: usize,
    pub key_start: usize,
    pub key_end: usize,
    pub value_end: usize,
}

impl Block {
    /// Validates the restart array of `data`, read from `file` at absolute
    /// offset `offset`. Entries are checked lazily, as they are visited.
    pub fn new(data: Vec<u8>, file: Arc<PathBuf>, offset: u64) -> Result<Block> {
        let corrupt = |reason: &str| Error::corruption(file.as_path(), offset, reason);
        let len = data.len();
        let count = len
            .checked_sub(4)
            .and_then(|pos| decode_fixed32(&data, pos))
            .ok_or_else(|| corrupt("block too short for its restart count"))?
            as usize;
        let restarts = count
            .checked_mul(4)
            .and_then(|n| len.checked_sub(n + 4))
            .filter(|_| count > 0)
            .ok_or_else(|| corrupt("bad block restart count"))?;
        // Binary search relies on restart offsets being increasing and
        // inside the entry area; checking once here keeps lookups simple.
        let mut prev = None;
        for i in 0..count {
            let point = decode_fixed32(&data, restarts + 4 * i).unwrap_or(u32::MAX) as usize;
            if point >= restarts.max(1)
                || prev.is_some_and(|p| point <= p)
                || (i == 0 && point != 0)
            {
                return Err(corrupt("bad block restart array"));
            }
            prev = Some(point);
        }
        let entries = &data[..restarts];
        let restart_array = &data[restarts..restarts + 4 * count];
        let head_keys = head_restart_keys(entries, restart_array, count);
        let keys_in_head = head_keys.is_some();
        let head_keys = head_keys.unwrap_or_default();
        let key_bytes: usize = head_keys.iter().map(|k| k.len()).sum();
        // One pass builds the whole allocation: restart points, then (if
        // copied) the restart keys' end offsets and the keys, then the block.
        let data_start = match keys_in_head {
            true => 8 * count + key_bytes,
            false => 4 * count,
        };
        let mut bytes = Vec::with_capacity(data_start + len);
        bytes.extend_from_slice(restart_array);
        let mut end = 8 * count;
        for key in &head_keys {
            end += key.len();
            bytes.extend_from_slice(&(end as u32).to_le_bytes());
        }
        head_keys.iter().for_each(|k| bytes.extend_from_slice(k));
        bytes.extend_from_slice(&data);
        let narrow = |n: usize| u32::try_from(n).map_err(|_| corrupt("block larger than 4 GiB"));
        Ok(Block {
            data_start: narrow(data_start)?,
            restarts: narrow(restarts)?,
            num_restarts: narrow(count)?,
            bytes: narrow(bytes.len()).map(|_| Arc::from(bytes))?,
            keys_in_head,
            file,
            offset,
        })
    }

    /// Bytes charged to the block cache.
    pub fn charge(&self) -> usize {
        self.bytes.len() + OVERHEAD
    }

    /// Absolute offset of the block in its file.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The file the block was read from.
    pub(crate) fn file(&self) -> &Path {
        self.file.as_path()
    }

    /// The block's bytes as stored (after decompression).
    pub(crate) fn data(&self) -> &[u8] {
        &self.bytes[self.data_start as usize..]
    }

    pub(crate) fn restarts(&self) -> usize {
        self.restarts as usize
    }

    pub(crate) fn num_restarts(&self) -> usize {
        self.num_restarts as usize
    }

    /// Entry offset of restart point `i` (< `num_restarts`, validated).
    pub(crate) fn restart_point(&self, i: usize) -> usize {
        decode_fixed32(&self.bytes, 4 * i).unwrap_or(0) as usize
    }

    /// Decodes the header of the entry at `pos`, checking that the key and
    /// value lie inside the entry area.
    pub(crate) fn entry_header(&self, pos: usize) -> Option<EntryHeader> {
        decode_entry_header(self.data().get(..self.restarts())?, pos)
    }

    /// Asks the CPU to fetch every cache line of `data()[start..end]`.
    /// The lines then arrive together, instead of one miss after another
    /// as a scan decodes entry after entry (the next entry's position
    /// depends on the current one, so the hardware cannot run ahead).
    pub(crate) fn prefetch(&self, start: usize, end: usize) {
        let data = self.data();
        for pos in prefetch_positions(data.len(), start, end) {
            prefetch_line(&data[pos]);
        }
    }

    /// The full key stored at restart point `i`, whose entry shares nothing
    /// with its predecessor; `None` if the entry is malformed.
    pub(crate) fn restart_key(&self, i: usize) -> Option<&[u8]> {
        if self.keys_in_head {
            let ends = 4 * self.num_restarts();
            let start = match i {
                0 => 2 * ends,
                _ => decode_fixed32(&self.bytes, ends + 4 * (i - 1))? as usize,
            };
            let end = decode_fixed32(&self.bytes, ends + 4 * i)? as usize;
            return self.bytes.get(start..end);
        }
        let h = self.entry_header(self.restart_point(i))?;
        (h.shared == 0).then(|| &self.data()[h.key_start..h.key_end])
    }

    /// Where the entry at `pos` is stored.
    pub(crate) fn location(&self, pos: usize) -> EntryLocation {
        EntryLocation {
            file: self.file.clone(),
            block_offset: self.offset,
            entry_offset: pos,
        }
    }

    /// The corruption error for a malformed entry at `pos`.
    pub(crate) fn corruption(&self, pos: usize) -> Error {
        Error::corruption(
            self.file.as_path(),
            self.offset,
            format!("malformed block entry at block offset {pos}"),
        )
    }
}

/// Decodes the header of the entry at `pos` of `entries` (a block's entry
/// area), checking that its key and value lie inside the area.
fn decode_entry_header(entries: &[u8], pos: usize) -> Option<EntryHeader> {
    let rest = entries.get(pos..)?;
    let (shared, non_shared, value_len, header_len) = match rest {
        // Fast path: all three lengths fit in one byte each.
        [a, b, c, ..] if (a | b | c) < 0x80 => (*a as usize, *b as usize, *c as usize, 3),
        _ => {
            let mut cur = rest;
            let shared = get_varint32(&mut cur)? as usize;
            let non_shared = get_varint32(&mut cur)? as usize;
            let value_len = get_varint32(&mut cur)? as usize;
            (shared, non_shared, value_len, rest.len() - cur.len())
        }
    };
    let key_start = pos + header_len;
    let key_end = key_start.checked_add(non_shared)?;
    let value_end = key_end.checked_add(value_len)?;
    (value_end <= entries.len()).then_some(EntryHeader {
        shared,
        key_start,
        key_end,
        value_end,
    })
}

/// The restart keys of a block, to copy into its head, when they are few,
/// short and well formed (a malformed one is left to be reported when
/// visited).
fn head_restart_keys<'a>(
    entries: &'a [u8],
    restart_array: &[u8],
    count: usize,
) -> Option<Vec<&'a [u8]>> {
    if count > HEAD_MAX_RESTARTS {
        return None;
    }
    let keys = (0..count)
        .map(|i| {
            let pos = decode_fixed32(restart_array, 4 * i)? as usize;
            let h = decode_entry_header(entries, pos)?;
            (h.shared == 0).then(|| &entries[h.key_start..h.key_end])
        })
        .collect::<Option<Vec<&[u8]>>>()?;
    (keys.iter().map(|k| k.len()).sum::<usize>() <= HEAD_MAX_KEY_BYTES).then_some(keys)
}

/// The bytes `Block::prefetch` touches for `[start, end)` of `len` data
/// bytes: one per cache line from `start` on, and the last byte (whose
/// line the stride may step over); none for an empty or outside range.
fn prefetch_positions(len: usize, start: usize, end: usize) -> impl Iterator<Item = usize> {
    let end = end.min(len);
    let span = if start < end { start..end } else { 0..0 };
    let last = span.end.checked_sub(1).filter(|_| !span.is_empty());
    span.step_by(CACHE_LINE).chain(last)
}

#[cfg(target_arch = "x86_64")]
fn prefetch_line(byte: &u8) {
    use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
    // SAFETY: a prefetch is only a hint to the cache: it never faults and
    // has no architectural effect, and the address is a live reference.
    // SSE, which the instruction needs, is part of the x86_64 baseline.
    unsafe { _mm_prefetch::<_MM_HINT_T0>(std::ptr::from_ref(byte).cast()) }
}

#[cfg(not(target_arch = "x86_64"))]
fn prefetch_line(_byte: &u8) {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::coding::put_fixed32;
    use proptest::prelude::*;

    fn file() -> Arc<PathBuf> {
        Arc::new(PathBuf::from("t.seg"))
    }

    #[test]
    fn empty_block_has_one_restart() {
        let mut data = Vec::new();
        put_fixed32(&mut data, 0);
        put_fixed32(&mut data, 1);
        let b = Block::new(data, file(), 0).unwrap();
        assert_eq!(b.restarts(), 0);
        assert_eq!(b.num_restarts(), 1);
        assert!(b.entry_header(0).is_none());
    }

    #[test]
    fn rejects_bad_restart_arrays() {
        let cases: [&[u32]; 4] = [&[], &[0, 0], &[4, 1], &[0, 1000]];
        for restarts in cases {
            let mut data = vec![1u8, 0, 0, 0, 0, 0, 0, 0];
            for r in restarts {
                put_fixed32(&mut data, *r);
            }
            put_fixed32(&mut data, restarts.len() as u32);
            let err = Block::new(data, file(), 77).err().unwrap();
            assert!(err.is_corruption(), "{restarts:?}");
            assert!(err.to_string().contains("offset 77"));
        }
        assert!(Block::new(vec![1, 2], file(), 0).is_err());
        assert!(Block::new(vec![0xff; 8], file(), 0).is_err());
    }

    use crate::iterator::InternalIterator;

    fn built(n: usize, interval: usize, key_len: usize) -> Block {
        let mut b = crate::table::BlockBuilder::new(interval);
        for i in 0..n {
            let key = crate::format::InternalKey::new(
                format!("{i:0key_len$}").as_bytes(),
                1,
                crate::format::ValueKind::Value,
            );
            b.add(key.encoded(), b"value");
        }
        Block::new(b.finish().to_vec(), file(), 0).unwrap()
    }

    #[test]
    fn few_short_restart_keys_are_copied_into_the_head() {
        let cases = [
            (40, 16, 8, true),    // 3 restarts of 16-byte keys
            (400, 16, 8, false),  // 25 restarts: too many
            (40, 16, 100, false), // 3 restarts of 108-byte keys: too long
        ];
        for (n, interval, key_len, in_head) in cases {
            let block = built(n, interval, key_len);
            assert_eq!(block.keys_in_head, in_head, "{n} keys of {key_len}");
            let mut expected =
                crate::table::BlockIter::new(&block, crate::format::KeyOrder::Bytewise);
            for i in 0..block.num_restarts() {
                let from_head = block.restart_key(i).unwrap().to_vec();
                let h = block.entry_header(block.restart_point(i)).unwrap();
                assert_eq!(from_head, &block.data()[h.key_start..h.key_end]);
                expected.seek(&from_head);
                assert_eq!(expected.key(), from_head.as_slice());
            }
        }
    }

    #[test]
    fn prefetch_touches_every_line_of_the_range_and_nothing_outside() {
        let block = built(40, 16, 8);
        let len = block.data().len();
        assert!(len > 3 * CACHE_LINE, "{len}");
        for (start, end) in [
            (0, usize::MAX),
            (10, 5),
            (len, len + 10),
            (len - 1, len),
            (0, 0),
            (3, 3 * CACHE_LINE + 7),
            (CACHE_LINE - 1, CACHE_LINE + 1),
        ] {
            let touched: Vec<usize> = prefetch_positions(len, start, end).collect();
            let range = start..end.min(len);
            assert!(
                touched.iter().all(|p| range.contains(p)),
                "[{start}, {end}): {touched:?} outside the range"
            );
            // Wherever the data starts within a cache line, every line
            // holding a byte of the range holds a touched byte.
            for misalign in 0..CACHE_LINE {
                let line = |pos: usize| (misalign + pos) / CACHE_LINE;
                for b in range.clone() {
                    assert!(
                        touched.iter().any(|&p| line(p) == line(b)),
                        "[{start}, {end}) at {misalign}: byte {b}'s line untouched: {touched:?}"
                    );
                }
            }
            block.prefetch(start, end);
        }
    }

    proptest! {
        #[test]
        fn decoding_random_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..128)) {
            if let Ok(b) = Block::new(bytes, file(), 0) {
                for i in 0..b.num_restarts() {
                    let _ = b.restart_key(i);
                }
                for pos in 0..b.data().len() + 2 {
                    let _ = b.entry_header(pos);
                }
            }
        }
    }
}
