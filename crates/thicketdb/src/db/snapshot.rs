//! Snapshots: pinned sequence numbers. The registry tells compaction the
//! oldest sequence any reader may still ask for.

use std::collections::BTreeMap;
use std::sync::Arc;

use parking_lot::Mutex;

#[derive(Debug, Default)]
pub(crate) struct SnapshotRegistry {
    pinned: Mutex<BTreeMap<u64, usize>>,
}

impl SnapshotRegistry {
    fn pin(&self, seq: u64) {
        *self.pinned.lock().entry(seq).or_insert(0) += 1;
    }

    fn unpin(&self, seq: u64) {
        let mut pinned = self.pinned.lock();
        if let Some(n) = pinned.get_mut(&seq) {
            *n -= 1;
            if *n == 0 {
                pinned.remove(&seq);
            }
        }
    }

    /// The oldest pinned sequence, or `latest` when nothing is pinned.
    pub fn oldest(&self, latest: u64) -> u64 {
        self.pinned
            .lock()
            .keys()
            .next()
            .copied()
            .unwrap_or(latest)
            .min(latest)
    }
}

/// A consistent read view of the store at one point of the write order. It
/// stays valid while writes, flushes and compactions continue; the data it
/// sees is kept until it is dropped.
#[derive(Debug)]
pub struct Snapshot {
    seq: u64,
    registry: Arc<SnapshotRegistry>,
}

impl Snapshot {
    pub(crate) fn new(seq: u64, registry: Arc<SnapshotRegistry>) -> Snapshot {
        registry.pin(seq);
        Snapshot { seq, registry }
    }

    /// The sequence number of the last write this snapshot sees.
    pub fn sequence(&self) -> u64 {
        self.seq
    }
}

impl Clone for Snapshot {
    fn clone(&self) -> Snapshot {
        Snapshot::new(self.seq, self.registry.clone())
    }
}

impl Drop for Snapshot {
    fn drop(&mut self) {
        self.registry.unpin(self.seq);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oldest_tracks_live_snapshots() {
        let reg = Arc::new(SnapshotRegistry::default());
        assert_eq!(reg.oldest(50), 50);
        let a = Snapshot::new(10, reg.clone());
        let b = Snapshot::new(20, reg.clone());
        let a2 = a.clone();
        assert_eq!(reg.oldest(50), 10);
        drop(a);
        assert_eq!(reg.oldest(50), 10, "clone still pins");
        drop(a2);
        assert_eq!(reg.oldest(50), 20);
        drop(b);
        assert_eq!(reg.oldest(50), 50);
    }
}
