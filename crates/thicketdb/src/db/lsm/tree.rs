//! One keyspace's tree: what is per keyspace (its options, compaction
//! policy, memtables and version) as opposed to the store-wide state in
//! `DbInner` (log, sequence numbers, snapshots, caches, MANIFEST).

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use parking_lot::RwLock;

use super::SuperVersion;
use crate::compaction::Policy;
use crate::db::keyspace_rules::check_not_dropped;
use crate::error::Result;
use crate::io::{Backing, Backings};
use crate::memtable::Memtable;
use crate::options::Options;
use crate::version::Version;

/// One keyspace's ordered tree.
pub(crate) struct Tree {
    pub id: u32,
    pub name: String,
    /// The options the tree runs with: the keyspace's own for what is per
    /// keyspace, the store's for what is store-wide.
    pub options: Options,
    pub policy: Policy,
    pub super_version: RwLock<Arc<SuperVersion>>,
    /// Set by `drop_keyspace`: writes and reads through old handles fail.
    pub dropped: AtomicBool,
}

impl Tree {
    pub fn new(
        id: u32,
        name: String,
        options: Options,
        version: Arc<Version>,
        mem: Memtable,
        imms: Vec<Arc<Memtable>>,
    ) -> Tree {
        let policy = Policy::new(&options, &version);
        let pending_compaction_bytes = policy.pending_bytes(&version);
        Tree {
            id,
            name,
            options,
            policy,
            super_version: RwLock::new(Arc::new(SuperVersion {
                mem: Arc::new(mem),
                imms,
                version,
                pending_compaction_bytes,
            })),
            dropped: AtomicBool::new(false),
        }
    }

    pub fn super_version(&self) -> Arc<SuperVersion> {
        self.super_version.read().clone()
    }

    /// An empty memtable of this tree on log `number`, pinning it.
    pub fn memtable_on_log(&self, backings: &Arc<Backings>, number: u64) -> Memtable {
        memtable_on_log(&self.options, backings, number)
    }

    /// `Error::KeyspaceNotFound` once the keyspace is dropped.
    pub fn check_live(&self) -> Result<()> {
        check_not_dropped(&self.dropped, &self.name)
    }
}

/// An empty memtable for a tree with `options` on log `number`, pinning it.
pub(crate) fn memtable_on_log(
    options: &Options,
    backings: &Arc<Backings>,
    number: u64,
) -> Memtable {
    Memtable::with_log(
        backings.pin_file(Backing::log(number)),
        options.comparator.clone(),
    )
    .tracking_locations(options.triad_log)
    .updating_in_place(options.triad_in_place)
    .with_filter(options.memtable_filter_bytes())
}
