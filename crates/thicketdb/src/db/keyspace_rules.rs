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

/// The options a keyspace runs with (a tree or a chunked keyspace):
/// `requested` for what a keyspace may choose (profile, policy, table and
/// block sizes, compression, Bloom bits, memtable size, LSbM, TRIAD-DISK,
/// chunk sizes, ...), the store's `store` options for every option the
/// `options!` list declares store-scoped (the key order, the log, caches,
/// threads, file handling).
pub(crate) fn keyspace_options(store: &Options, requested: &Options) -> Options {
    requested.clone().with_store_wide(store)
}
