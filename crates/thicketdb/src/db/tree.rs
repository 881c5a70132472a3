//! One keyspace's tree: what is per keyspace (its options, compaction
//! policy, memtables and version) as opposed to the store-wide state in
//! `DbInner` (log, sequence numbers, snapshots, caches, MANIFEST).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use parking_lot::RwLock;

use super::SuperVersion;
use crate::compaction::Policy;
use crate::error::{Error, Result};
use crate::io::{Backing, Backings};
use crate::memtable::Memtable;
use crate::options::Options;
use crate::version::Version;

/// The id of the default keyspace: the store's tree before keyspaces.
pub(crate) const DEFAULT_KEYSPACE: u32 = 0;
/// The default keyspace's name.
pub const DEFAULT_KEYSPACE_NAME: &str = "default";

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

/// `Error::KeyspaceNotFound` naming keyspace `name` once `dropped` is set
/// (a tree's or a chunked keyspace's flag).
pub(crate) fn check_not_dropped(dropped: &AtomicBool, name: &str) -> Result<()> {
    match dropped.load(Ordering::Acquire) {
        false => Ok(()),
        true => Err(Error::KeyspaceNotFound(format!("{name:?} (dropped)"))),
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
    .with_filter(options.memtable_filter_bytes())
}

/// The options a keyspace's tree runs with: `requested` for what a
/// keyspace may choose (profile, policy, table and block sizes,
/// compression, Bloom bits, memtable size, LSbM, TRIAD-DISK, ...), the
/// store's `store` options for what is store-wide (the key order, the log,
/// caches, threads, file handling).
pub(crate) fn keyspace_options(store: &Options, requested: &Options) -> Options {
    let mut o = requested.clone();
    o.comparator = store.comparator.clone();
    o.wal_recovery_mode = store.wal_recovery_mode;
    o.log_mmap = store.log_mmap;
    o.triad_log = store.triad_log;
    o.triad_log_cache_size = store.triad_log_cache_size;
    o.block_cache_size = store.block_cache_size;
    o.block_cache = store.block_cache.clone();
    o.max_open_files = store.max_open_files;
    o.segment_descriptor_cache = store.segment_descriptor_cache;
    o.use_direct_reads = store.use_direct_reads;
    o.filter_policy = store.filter_policy.clone();
    o.compaction_threads = store.compaction_threads;
    o.search_threads = store.search_threads;
    o.create_if_missing = store.create_if_missing;
    o.error_if_exists = store.error_if_exists;
    o
}
