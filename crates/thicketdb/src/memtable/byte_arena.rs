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

/// Bytes written into a [`ByteArena`], immutable from then on.
#[derive(Clone, Copy)]
pub struct ArenaBytes {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: the bytes are never written after `ByteArena::copy_in` returns,
// so sharing or sending the pointer only ever lets threads read them.
unsafe impl Send for ArenaBytes {}
// SAFETY: as above: every access through the pointer is a read.
unsafe impl Sync for ArenaBytes {}

impl ArenaBytes {
    /// The bytes.
    ///
    /// # Safety
    /// The arena they came from must outlive the returned slice (a
    /// memtable's nodes never outlive their skiplist, which owns it).
    pub unsafe fn as_slice<'a>(self) -> &'a [u8] {
        // SAFETY: `ptr` points at `len` initialised bytes inside a live
        // map (the caller's contract), never written again.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    pub fn len(self) -> usize {
        self.len
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
        ArenaBytes { ptr: dest, len }
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
            let bytes = unsafe { at.as_slice() };
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
        assert!(unsafe { at.as_slice() }.is_empty());
        assert!(arena.maps.is_empty());
    }
}
