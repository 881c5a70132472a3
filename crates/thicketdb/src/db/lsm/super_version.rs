//! The unit a read takes (memtables and version, swapped together) and
//! how a new version of a keyspace is published.

use std::sync::Arc;

use super::tree::Tree;
use crate::memtable::Memtable;
use crate::version::Version;

/// What a read needs, swapped as one unit: the mutable memtable, the
/// immutable ones waiting for flush (newest first) and the version.
pub(crate) struct SuperVersion {
    pub mem: Arc<Memtable>,
    pub imms: Vec<Arc<Memtable>>,
    pub version: Arc<Version>,
    /// The policy's estimate of bytes compaction owes `version` (computed
    /// once per version, read by every write for stalls).
    pub pending_compaction_bytes: u64,
}

/// Publishes a new version of `tree`, dropping `flushed` from its
/// immutable list.
/// REQUIRES: `inner.versions` held, so versions are installed in the
/// order the MANIFEST records them. Takes `super_version` (write).
pub(crate) fn install(tree: &Tree, version: Arc<Version>, flushed: Option<&Arc<Memtable>>) {
    let mut sv = tree.super_version.write();
    let imms = sv
        .imms
        .iter()
        .filter(|m| flushed.is_none_or(|f| !Arc::ptr_eq(m, f)))
        .cloned()
        .collect();
    *sv = Arc::new(SuperVersion {
        mem: sv.mem.clone(),
        imms,
        pending_compaction_bytes: tree.policy.pending_bytes(&version),
        version,
    });
}
