//! What every keyspace obeys in either layout: the default keyspace's id
//! and name, the refusal of a dropped keyspace, and which options a
//! keyspace chooses for itself and which it takes from the store.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::error::{Error, Result};
use crate::options::Options;

/// The id of the default keyspace: the store's tree before keyspaces.
pub(crate) const DEFAULT_KEYSPACE: u32 = 0;
/// The default keyspace's name.
pub const DEFAULT_KEYSPACE_NAME: &str = "default";
/// Longest keyspace name, in bytes.
pub const MAX_KEYSPACE_NAME: usize = 255;

/// `Error::KeyspaceNotFound` naming keyspace `name` once `dropped` is set
/// (a tree's or a chunked keyspace's flag).
pub(crate) fn check_not_dropped(dropped: &AtomicBool, name: &str) -> Result<()> {
    match dropped.load(Ordering::Acquire) {
        false => Ok(()),
        true => Err(Error::KeyspaceNotFound(format!("{name:?} (dropped)"))),
    }
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
