//! Snapshots: pinned sequence numbers. The registry tells compaction the
//! oldest sequence any reader may still ask for.

use std::collections::BTreeMap;
use std::sync::Arc;

use std::sync::atomic::{AtomicU64, Ordering};

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

    /// Holds the registry: no snapshot is taken (and no iterator opened)
    /// until the hold drops. A write group that updates values in place
    /// holds it from before its first update until its sequence is
    /// published, so a snapshot sees all of a group's updates or none.
    pub fn hold(&self) -> PinsHeld<'_> {
        PinsHeld(self.pinned.lock())
    }

    /// The oldest sequence a reader may use: the oldest pinned one, or the
    /// latest write when nothing is pinned. `latest` is read under the
    /// registry's lock, so a snapshot being taken concurrently is either
    /// already pinned or will pin a sequence at least this large.
    pub fn oldest(&self, latest: &AtomicU64) -> u64 {
        let pinned = self.pinned.lock();
        let latest = latest.load(Ordering::Acquire);
        pinned.keys().next().copied().unwrap_or(latest).min(latest)
    }
}

/// The registry held ([`SnapshotRegistry::hold`]).
pub(crate) struct PinsHeld<'a>(parking_lot::MutexGuard<'a, BTreeMap<u64, usize>>);

impl PinsHeld<'_> {
    /// The newest pinned sequence, if any.
    pub fn newest(&self) -> Option<u64> {
        self.0.keys().next_back().copied()
    }
}

/// A consistent read view of the store at one point of the write order. It
/// stays valid while writes, flushes and compactions continue; the data it
/// sees is kept until it is dropped.
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// use thicketdb::{Db, Options, ReadOptions};
/// let db = Db::open(dir.path(), Options::default())?;
/// db.put("k", "old")?;
/// let snapshot = db.snapshot();
/// db.put("k", "new")?;
/// let at_snapshot = ReadOptions { snapshot: Some(snapshot), ..ReadOptions::default() };
/// assert_eq!(db.get_opt("k", &at_snapshot)?.as_deref(), Some(&b"old"[..]));
/// assert_eq!(db.get("k")?.as_deref(), Some(&b"new"[..]));
/// # Ok::<(), thicketdb::Error>(())
/// ```
#[derive(Debug)]
pub struct Snapshot {
    seq: u64,
    registry: Arc<SnapshotRegistry>,
}

impl Snapshot {
    /// Pins the latest write. The sequence is read under the registry's
    /// lock: a flush or compaction computing the oldest pinned sequence at
    /// the same time then cannot drop a version this snapshot sees.
    pub(crate) fn latest(last_sequence: &AtomicU64, registry: Arc<SnapshotRegistry>) -> Snapshot {
        let seq = {
            let mut pinned = registry.pinned.lock();
            let seq = last_sequence.load(Ordering::Acquire);
            *pinned.entry(seq).or_insert(0) += 1;
            seq
        };
        Snapshot { seq, registry }
    }

    fn new(seq: u64, registry: Arc<SnapshotRegistry>) -> Snapshot {
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
        let latest = AtomicU64::new(50);
        assert_eq!(reg.oldest(&latest), 50);
        let pinned = Snapshot::latest(&latest, reg.clone());
        assert_eq!(pinned.sequence(), 50);
        latest.store(60, Ordering::Release);
        assert_eq!(reg.oldest(&latest), 50);
        drop(pinned);
        let latest = AtomicU64::new(50);
        let a = Snapshot::new(10, reg.clone());
        let b = Snapshot::new(20, reg.clone());
        let a2 = a.clone();
        assert_eq!(reg.oldest(&latest), 10);
        drop(a);
        assert_eq!(reg.oldest(&latest), 10, "clone still pins");
        drop(a2);
        assert_eq!(reg.oldest(&latest), 20);
        drop(b);
        assert_eq!(reg.oldest(&latest), 50);
    }
}
