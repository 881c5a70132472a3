//! File backings: every file that live data sits in (a segment holding
//! tables, a log holding a memtable's writes), with reference counts, so
//! that a file is released exactly when nothing live references it,
//! whatever kind of file it is (Pebble's `FileBacking`).
//!
//! Two kinds of holders take references:
//! - an installed version pins every table it lists: the table's extent
//!   (its byte range) and the file it lives in ([`Backings::pin_extents`],
//!   released when the version drops);
//! - a memtable pins the log its writes are in ([`Backings::pin_file`]).
//!
//! When a count reaches zero the extent or file is queued; the owner of the
//! store drains the queue ([`Backings::take_released`]) and punches the
//! extent out of its file, or deletes the file. Nothing here does I/O.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;

/// What a file holds, which decides its name and how it is released.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BackingKind {
    /// `NNNNNN.seg`: tables written by one flush or compaction.
    Segment,
    /// `NNNNNN.log`: a write-ahead log.
    Log,
}

/// One file, named by kind and file number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Backing {
    pub kind: BackingKind,
    pub number: u64,
}

impl Backing {
    pub fn segment(number: u64) -> Backing {
        Backing {
            kind: BackingKind::Segment,
            number,
        }
    }

    pub fn log(number: u64) -> Backing {
        Backing {
            kind: BackingKind::Log,
            number,
        }
    }
}

/// A byte range of a backing with an identity of its own (a table).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Extent {
    /// Unique id (the table number).
    pub id: u64,
    pub backing: Backing,
    pub offset: u64,
    pub length: u64,
}

/// What became unreferenced since the last [`Backings::take_released`].
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Released {
    /// Extents nothing references: their bytes can be punched, unless their
    /// file is in `files` too.
    pub extents: Vec<Extent>,
    /// Files nothing references any more: they can be deleted.
    pub files: Vec<Backing>,
}

#[derive(Debug, Default)]
struct State {
    /// References per file: one per (holder, extent) pair and one per file pin.
    files: HashMap<Backing, usize>,
    /// References per extent id, with the extent.
    extents: HashMap<u64, (usize, Extent)>,
    released: Released,
}

/// The reference counts of one store's files.
#[derive(Debug, Default)]
pub struct Backings {
    state: Mutex<State>,
}

impl Backings {
    /// References every extent of a holder (a version) and its file.
    pub fn pin_extents<'a>(&self, extents: impl IntoIterator<Item = &'a Extent>) {
        let mut state = self.state.lock();
        for e in extents {
            *state.files.entry(e.backing).or_insert(0) += 1;
            state.extents.entry(e.id).or_insert((0, *e)).0 += 1;
        }
    }

    /// Drops the references `pin_extents` took for the same extents.
    pub fn unpin_extents<'a>(&self, extents: impl IntoIterator<Item = &'a Extent>) {
        let mut state = self.state.lock();
        for e in extents {
            if let Some((count, extent)) = state.extents.get_mut(&e.id) {
                *count -= 1;
                if *count == 0 {
                    let extent = *extent;
                    state.extents.remove(&e.id);
                    state.released.extents.push(extent);
                }
            }
            state.unref_file(e.backing);
        }
    }

    /// References one whole file until the returned pin drops.
    pub fn pin_file(self: &Arc<Self>, backing: Backing) -> FilePin {
        *self.state.lock().files.entry(backing).or_insert(0) += 1;
        FilePin {
            backings: self.clone(),
            backing,
        }
    }

    /// References whole files (a version's log tables' logs), once per
    /// item, until [`Backings::unpin_files`] drops the same references.
    pub fn pin_files(&self, files: impl IntoIterator<Item = Backing>) {
        let mut state = self.state.lock();
        for backing in files {
            *state.files.entry(backing).or_insert(0) += 1;
        }
    }

    /// Drops references [`Backings::pin_files`] took.
    pub fn unpin_files(&self, files: impl IntoIterator<Item = Backing>) {
        let mut state = self.state.lock();
        for backing in files {
            state.unref_file(backing);
        }
    }

    /// Whether anything references `backing` now.
    pub fn is_referenced(&self, backing: Backing) -> bool {
        self.state.lock().files.contains_key(&backing)
    }

    /// Takes what was released since the last call.
    pub fn take_released(&self) -> Released {
        std::mem::take(&mut self.state.lock().released)
    }
}

impl State {
    fn unref_file(&mut self, backing: Backing) {
        if let Some(count) = self.files.get_mut(&backing) {
            *count -= 1;
            if *count == 0 {
                self.files.remove(&backing);
                self.released.files.push(backing);
            }
        }
    }
}

/// A reference to one file, released on drop.
#[derive(Debug)]
pub struct FilePin {
    backings: Arc<Backings>,
    backing: Backing,
}

impl FilePin {
    pub fn backing(&self) -> Backing {
        self.backing
    }
}

impl Drop for FilePin {
    fn drop(&mut self) {
        self.backings.state.lock().unref_file(self.backing);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn extent(id: u64, segment: u64) -> Extent {
        Extent {
            id,
            backing: Backing::segment(segment),
            offset: id * 100,
            length: 100,
        }
    }

    #[test]
    fn a_file_is_released_when_its_last_holder_goes() {
        let b = Arc::new(Backings::default());
        let (t1, t2) = (extent(1, 7), extent(2, 7));
        let v1 = [t1, t2];
        let v2 = [t2];
        b.pin_extents(&v1);
        b.pin_extents(&v2);
        b.unpin_extents(&v1);
        // t1 died, its segment lives on through v2: punch t1.
        assert_eq!(
            b.take_released(),
            Released {
                extents: vec![t1],
                files: vec![]
            }
        );
        assert!(b.is_referenced(Backing::segment(7)));
        b.unpin_extents(&v2);
        // Both gone: the segment is deleted.
        assert_eq!(
            b.take_released(),
            Released {
                extents: vec![t2],
                files: vec![Backing::segment(7)]
            }
        );
        assert_eq!(b.take_released(), Released::default());
    }

    #[test]
    fn a_pinned_log_outlives_nothing_and_is_released_once() {
        let b = Arc::new(Backings::default());
        let pin = b.pin_file(Backing::log(3));
        let again = b.pin_file(Backing::log(3));
        drop(pin);
        assert!(b.take_released().files.is_empty());
        drop(again);
        assert_eq!(b.take_released().files, vec![Backing::log(3)]);
        assert!(!b.is_referenced(Backing::log(3)));
    }

    #[test]
    fn extents_and_their_file_are_released_together() {
        let b = Arc::new(Backings::default());
        let v = [extent(1, 9), extent(2, 9)];
        b.pin_extents(&v);
        b.unpin_extents(&v);
        let released = b.take_released();
        assert_eq!(released.extents, v.to_vec());
        assert_eq!(released.files, vec![Backing::segment(9)]);
    }
}
