//! The bytes of a memtable's entries, bump-allocated in anonymous memory
//! maps.
//!
//! One `malloc` per value cost a chunk header and rounding per entry, and
//! a flushed memtable left its values as holes across the heap, which the
//! next memtable's allocations only partly refilled. Here the bytes of a
//! memtable sit in maps of [`BLOCK_BYTES`] (a larger entry gets a map of
//! its own), written once and unmapped together when the memtable goes.

use std::ptr::NonNull;

use memmap2::{MmapMut, MmapOptions};

/// Bytes of one shared map (4 KiB under Miri, as `mapped_vec.rs`'s).
pub const BLOCK_BYTES: usize = if cfg!(miri) { 4 << 10 } else { 1 << 20 };
/// Entries above this many bytes get a map of their own, so a block's
/// unused tail stays small.
const OWN_MAP_ABOVE: usize = BLOCK_BYTES / 4;

/// Bytes written into a [`ByteArena`]. Immutable from then on, but for a
/// value updated in place (`ArenaBytes::overwrite`), whose caller keeps
/// every reader of those bytes out while it writes.
///
/// Packed to 12 bytes (align 4) so that a skiplist node holding one is 64
/// bytes, a cache line; `len` fits in 32 bits because an entry's key and
/// value are bounded by `MAX_KEY_SIZE` and `MAX_VALUE_SIZE`.
#[derive(Clone, Copy)]
#[repr(C, packed(4))]
pub struct ArenaBytes {
    ptr: NonNull<u8>,
    len: u32,
}

// SAFETY: the bytes are only read after `ByteArena::copy_in` returns, but
// by `overwrite`, whose contract excludes every other access to the bytes
// it writes; so sending the pointer lets threads read them, or write them
// alone.
unsafe impl Send for ArenaBytes {}
// SAFETY: as above: concurrent accesses through the pointer are reads.
unsafe impl Sync for ArenaBytes {}

impl ArenaBytes {
    /// `len` of the bytes from `start` (within them).
    ///
    /// # Safety
    /// The arena they came from must outlive the returned slice (a
    /// memtable's nodes never outlive their skiplist, which owns it), and
    /// no [`overwrite`](Self::overwrite) of these bytes may run while the
    /// slice lives.
    pub unsafe fn range<'a>(self, start: usize, len: usize) -> &'a [u8] {
        debug_assert!(start + len <= self.len());
        // SAFETY: `start + len <= self.len` (a caller slices its own
        // bytes), so the range lies in the `len` initialised bytes at
        // `ptr`, alive and unwritten while the slice lives (the caller's
        // contract).
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr().add(start), len) }
    }

    /// Writes `bytes` over the bytes from `at` (within them).
    ///
    /// # Safety
    /// The arena they came from is alive, and no reference to the bytes
    /// written exists or is made until this returns (a memtable updates a
    /// value in place holding its key's stripe lock, with no iterator
    /// open: `Memtable::add_in_place`).
    pub unsafe fn overwrite(self, at: usize, bytes: &[u8]) {
        assert!(at + bytes.len() <= self.len(), "an overwrite within the bytes");
        // SAFETY: the range is within the `len` bytes at `ptr` (asserted),
        // in a live map whose pointer came from `MmapMut::as_mut_ptr`
        // (writable); nobody reads or references them meanwhile (the
        // caller's contract), and `bytes` is not in the arena's range
        // being written (the caller copies from its own buffer).
        unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.ptr.as_ptr().add(at), bytes.len())
        }
    }

    pub fn len(self) -> usize {
        self.len as usize
    }
}

/// Maps and a cursor in the newest one. Owned by the skiplist's writer
/// state: appends are serialised by its lock.
#[derive(Default)]
pub struct ByteArena {
    maps: Vec<MmapMut>,
    /// The free tail of the current block: where it starts and its length.
    free: Option<(NonNull<u8>, usize)>,
}

// SAFETY: `free` points into one of `maps`, which this value owns; moving
// the arena to another thread moves the maps with it.
unsafe impl Send for ByteArena {}

impl ByteArena {
    /// Copies `parts`, one after another, into the arena and returns where
    /// they are. Aborts, as the global allocator does, when the system has
    /// no memory for a new map.
    pub fn copy_in(&mut self, parts: &[&[u8]]) -> ArenaBytes {
        let len: usize = parts.iter().map(|p| p.len()).sum();
        let Ok(len32) = u32::try_from(len) else {
            // Unreachable through a write batch, which bounds keys and
            // values far below 4 GiB.
            std::alloc::handle_alloc_error(
                std::alloc::Layout::from_size_align(len, 1).unwrap_or(std::alloc::Layout::new::<u8>()),
            )
        };
        let dest = self.reserve(len);
        let mut at = 0;
        for part in parts {
            // SAFETY: `reserve` returned `len` writable bytes nobody has
            // read or referenced; the parts are copied into disjoint
            // ranges of them.
            unsafe {
                std::ptr::copy_nonoverlapping(part.as_ptr(), dest.as_ptr().add(at), part.len())
            };
            at += part.len();
        }
        ArenaBytes {
            ptr: dest,
            len: len32,
        }
    }

    fn reserve(&mut self, len: usize) -> NonNull<u8> {
        if len == 0 {
            return NonNull::dangling();
        }
        if len > OWN_MAP_ABOVE {
            return self.map(len);
        }
        match self.free {
            Some((start, room)) if room >= len => {
                // SAFETY: `start + len` stays within the current map.
                self.free = Some((unsafe { start.add(len) }, room - len));
                start
            }
            _ => {
                let start = self.map(BLOCK_BYTES);
                // SAFETY: as above, within the new map of `BLOCK_BYTES`.
                self.free = Some((unsafe { start.add(len) }, BLOCK_BYTES - len));
                start
            }
        }
    }

    fn map(&mut self, len: usize) -> NonNull<u8> {
        let mut map = match MmapOptions::new().len(len).map_anon() {
            Ok(map) => map,
            Err(_) => std::alloc::handle_alloc_error(
                std::alloc::Layout::from_size_align(len, 1)
                    .unwrap_or(std::alloc::Layout::new::<u8>()),
            ),
        };
        let start = NonNull::new(map.as_mut_ptr()).unwrap_or(NonNull::dangling());
        self.maps.push(map);
        start
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_read_back_across_blocks_and_own_maps() {
        let mut arena = ByteArena::default();
        let mut written = Vec::new();
        for i in 0..20_000usize {
            let len = match i % 1000 {
                0 => OWN_MAP_ABOVE + 1 + i,
                n => n % 300,
            };
            let value: Vec<u8> = (0..len).map(|b| (b * 31 + i) as u8).collect();
            let at = arena.copy_in(&[b"k", &value]);
            written.push((at, value));
        }
        for (at, value) in &written {
            // SAFETY: the arena is alive for the whole test.
            let bytes = unsafe { at.range(0, at.len()) };
            assert_eq!(bytes.len(), value.len() + 1);
            assert_eq!(&bytes[..1], b"k");
            assert_eq!(&bytes[1..], &value[..]);
        }
        let own_maps = written
            .iter()
            .filter(|(a, _)| a.len() > OWN_MAP_ABOVE)
            .count();
        assert_eq!(arena.maps.len() - own_maps, 20_000 * 150 / BLOCK_BYTES + 1);
    }

    #[test]
    fn empty_entries_take_nothing() {
        let mut arena = ByteArena::default();
        let at = arena.copy_in(&[b"", b""]);
        // SAFETY: the arena is alive.
        assert!(unsafe { at.range(0, at.len()) }.is_empty());
        assert!(arena.maps.is_empty());
    }
}
