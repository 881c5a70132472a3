//! Range tombstones written one at a time beside point entries (a
//! memtable's, a chunk log's): fragmented as they come, answered to point
//! lookups, and handed to iterators and flushes as an immutable list.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};

use crate::format::fragment_map::FragmentMap;
use crate::format::range_tombstone::{Fragments, RangeTombstone};

/// A growing set of range tombstones; one writer at a time adds.
#[derive(Default)]
pub struct RangeDels {
    /// Fragmented; an insert re-fragments only what it overlaps.
    map: RwLock<FragmentMap>,
    /// `map` as a list for iterators and flush, built when first asked
    /// for after a change (a reader's copy never changes under it).
    list: Mutex<Option<Arc<Fragments>>>,
    /// Whether `map` holds anything: point reads skip its lock.
    any: AtomicBool,
}

impl RangeDels {
    /// Records a deletion of `[start, end)` at `seq`.
    pub fn insert(&self, seq: u64, start: &[u8], end: &[u8]) {
        self.map.write().insert(&RangeTombstone {
            start: start.to_vec(),
            end: end.to_vec(),
            seq,
        });
        // After the insert, not inside it: a reader locks the list, then
        // the map. One that built the list before the insert is dropped
        // here, before the write is visible to any snapshot.
        *self.list.lock() = None;
        self.any.store(true, Ordering::Release);
    }

    /// The tombstones so far, fragmented (readers filter them by their
    /// snapshot).
    pub fn fragments(&self) -> Arc<Fragments> {
        if self.is_empty() {
            return Arc::default();
        }
        let mut list = self.list.lock();
        list.get_or_insert_with(|| Arc::new(self.map.read().to_fragments()))
            .clone()
    }

    /// The newest tombstone sequence covering `key` visible at `snapshot`
    /// (0: none).
    pub fn covering_seq(&self, key: &[u8], snapshot: u64) -> u64 {
        if self.is_empty() {
            return 0;
        }
        self.map.read().covering_seq(key, snapshot)
    }

    pub fn is_empty(&self) -> bool {
        !self.any.load(Ordering::Acquire)
    }
}
