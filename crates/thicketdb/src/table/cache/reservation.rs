//! A hold on part of the block cache's capacity for memory kept outside it.

use std::sync::Arc;

use super::Shared;

/// Bytes of a [`BlockCache`](super::BlockCache)'s capacity held for memory
/// the cache does not store (an open table's index and filter); given back
/// when dropped.
pub struct CacheReservation {
    shared: Arc<Shared>,
    bytes: u64,
}

impl CacheReservation {
    pub(super) fn new(shared: Arc<Shared>, bytes: u64) -> CacheReservation {
        shared.split(bytes, |table, share| table.reserve(share));
        CacheReservation { shared, bytes }
    }

    /// The bytes held.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
}

impl Drop for CacheReservation {
    fn drop(&mut self) {
        self.shared
            .split(self.bytes, |table, share| table.release(share));
    }
}

impl std::fmt::Debug for CacheReservation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CacheReservation")
            .field("bytes", &self.bytes)
            .finish()
    }
}
