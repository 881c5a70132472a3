//! An append-only vector for one writer and lock-free readers, whose
//! elements live in anonymous memory maps of [`SEGMENT_BYTES`] each.
//!
//! A memtable's nodes used to live in a `boxcar::Vec`, whose buckets double
//! (a 64 MiB memtable ends with a 27 MiB bucket) and come from `malloc`.
//! Freeing such a block makes glibc raise its mmap threshold, so the next
//! memtable's big buckets came from the heap, zeroed (touched) in full
//! and kept there after free: peak RSS of a 5M-key load was 190–204 MiB
//! against 147–156 MiB with the threshold pinned (`docs/benchmarks.md`,
//! *Peak RSS*). Maps of a fixed size are untouched until written and
//! returned to the system when the memtable goes, whatever the allocator.

use std::marker::PhantomData;
use std::sync::atomic::{AtomicUsize, Ordering};

use memmap2::{MmapMut, MmapOptions};

/// Bytes of one map (4 KiB under Miri, so that its tests cross maps at a
/// size it runs quickly: `miri_tests.rs`).
pub const SEGMENT_BYTES: usize = if cfg!(miri) { 4 << 10 } else { 1 << 20 };

struct Segment<T> {
    /// The map; only ever accessed through `base`, so no `&mut` to its
    /// bytes exists once elements are shared.
    _map: MmapMut,
    base: *mut T,
}

// SAFETY: a segment is a pointer to memory it owns (the map); sending it
// to another thread moves that ownership, and the elements it holds are
// `Send` (required of `T` below).
unsafe impl<T: Send> Send for Segment<T> {}
// SAFETY: shared access only reads elements already written (see
// `MappedVec::get`), as `&T`; `T: Sync` makes that sound across threads.
unsafe impl<T: Sync> Sync for Segment<T> {}

pub struct MappedVec<T> {
    segments: boxcar::Vec<Segment<T>>,
    /// Elements written; stored with `Release` after each write.
    len: AtomicUsize,
    _owns: PhantomData<T>,
}

impl<T> Default for MappedVec<T> {
    fn default() -> MappedVec<T> {
        MappedVec {
            segments: boxcar::Vec::new(),
            len: AtomicUsize::new(0),
            _owns: PhantomData,
        }
    }
}

impl<T> MappedVec<T> {
    /// Elements per segment (at least one, whatever `T`'s size).
    const PER_SEGMENT: usize = {
        let size = std::mem::size_of::<T>();
        if size == 0 || size >= SEGMENT_BYTES {
            1
        } else {
            SEGMENT_BYTES / size
        }
    };

    /// Appends `value` and returns its index. REQUIRES: pushes are
    /// serialised by the caller (the skiplist pushes under its writer
    /// lock); readers may run concurrently. Aborts, as the global allocator
    /// does, when the system has no memory for a new map.
    pub fn push(&self, value: T) -> usize {
        let index = self.len.load(Ordering::Relaxed);
        let (segment, offset) = (index / Self::PER_SEGMENT, index % Self::PER_SEGMENT);
        if offset == 0 {
            self.segments.push(Self::new_segment());
        }
        let base = self.segments[segment].base;
        // SAFETY: `offset < PER_SEGMENT`, so the slot lies inside the map,
        // which is page-aligned (so aligned for `T`, whose alignment is at
        // most a page) and was never written: pushes are serialised and
        // each index is written once. No reader forms a reference to it
        // before `len` (below) or a link published after this push says it
        // exists.
        unsafe { base.add(offset).write(value) };
        self.len.store(index + 1, Ordering::Release);
        index
    }

    fn new_segment() -> Segment<T> {
        let bytes = (Self::PER_SEGMENT * std::mem::size_of::<T>()).max(1);
        match MmapOptions::new().len(bytes).map_anon() {
            Ok(mut map) => Segment {
                base: map.as_mut_ptr().cast::<T>(),
                _map: map,
            },
            Err(_) => std::alloc::handle_alloc_error(
                std::alloc::Layout::from_size_align(bytes, 4096)
                    .unwrap_or(std::alloc::Layout::new::<T>()),
            ),
        }
    }

    /// The element at `index`, if its push has returned.
    pub fn get(&self, index: usize) -> Option<&T> {
        if index >= self.len.load(Ordering::Acquire) {
            return None;
        }
        let segment = self.segments.get(index / Self::PER_SEGMENT)?;
        // SAFETY: `index < len`, loaded with `Acquire` after the push's
        // `Release` store, so the element was fully written before and is
        // never written again; it lives until `self` drops, which the
        // returned borrow of `self` outlasts.
        Some(unsafe { &*segment.base.add(index % Self::PER_SEGMENT) })
    }

    /// Elements pushed so far.
    pub fn len(&self) -> usize {
        self.len.load(Ordering::Acquire)
    }
}

impl<T> Drop for MappedVec<T> {
    fn drop(&mut self) {
        let len = *self.len.get_mut();
        for index in 0..len {
            let base = self.segments[index / Self::PER_SEGMENT].base;
            // SAFETY: every index below `len` holds an initialised element,
            // dropped exactly once here; `&mut self` means no reader is
            // left. The maps are unmapped after this loop.
            unsafe { base.add(index % Self::PER_SEGMENT).drop_in_place() };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn elements_keep_their_index_across_segments() {
        let v = MappedVec::default();
        let per = MappedVec::<u64>::PER_SEGMENT;
        for i in 0..3 * per + 5 {
            assert_eq!(v.push(i as u64 * 7), i);
        }
        assert_eq!(v.len(), 3 * per + 5);
        for i in [0, 1, per - 1, per, 2 * per + 1, 3 * per + 4] {
            assert_eq!(v.get(i), Some(&(i as u64 * 7)));
        }
        assert_eq!(v.get(3 * per + 5), None);
    }

    #[test]
    fn dropping_drops_every_element_once() {
        let counted = Arc::new(());
        {
            let v = MappedVec::default();
            for _ in 0..10_000 {
                v.push((Arc::clone(&counted), vec![1u8; 40]));
            }
            assert_eq!(Arc::strong_count(&counted), 10_001);
        }
        assert_eq!(Arc::strong_count(&counted), 1);
    }

    #[test]
    fn readers_see_every_published_element_while_the_writer_pushes() {
        let v = MappedVec::default();
        let per = MappedVec::<Vec<u8>>::PER_SEGMENT;
        std::thread::scope(|s| {
            s.spawn(|| {
                for i in 0..3 * per {
                    v.push(i.to_le_bytes().to_vec());
                }
            });
            s.spawn(|| {
                for _ in 0..100 {
                    let n = v.len();
                    for i in (0..n).step_by(101) {
                        assert_eq!(v.get(i).map(Vec::as_slice), Some(&i.to_le_bytes()[..]));
                    }
                }
            });
        });
    }
}
