//! One keyspace of a chunked store: its own chunk list (chunk index and
//! funks) and options, sharing the store's batch log, file numbers,
//! sequence numbers and snapshots, munk cache, row cache (keyed by
//! keyspace) and table reading context (block cache, filter policy).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use parking_lot::RwLock;

use super::ChunkSet;
use crate::error::{Error, Result};
use crate::options::{Layout, Options};

/// A keyspace's chunks and options.
pub(crate) struct ChunkSpace {
    pub id: u32,
    pub name: String,
    /// The options its chunks run with: its own for what is per keyspace
    /// (`space_options`), the store's for the rest.
    pub options: Options,
    chunks: RwLock<Arc<ChunkSet>>,
    /// Set by `drop_keyspace`: handles on it fail from then on.
    dropped: AtomicBool,
}

impl ChunkSpace {
    pub(super) fn new(id: u32, name: String, options: Options, chunks: ChunkSet) -> ChunkSpace {
        ChunkSpace {
            id,
            name,
            options,
            chunks: RwLock::new(Arc::new(chunks)),
            dropped: AtomicBool::new(false),
        }
    }

    /// The current chunk set (index and list, replaced whole).
    pub(super) fn chunk_set(&self) -> Arc<ChunkSet> {
        self.chunks.read().clone()
    }

    /// Installs a new chunk set.
    /// REQUIRES: the store's metadata lock.
    pub(super) fn install(&self, set: ChunkSet) {
        *self.chunks.write() = Arc::new(set);
    }

    /// `Error::KeyspaceNotFound` once the keyspace is dropped.
    pub fn check_live(&self) -> Result<()> {
        crate::db::keyspace_rules::check_not_dropped(&self.dropped, &self.name)
    }

    /// Marks the keyspace dropped, retires its chunks and lets go of them
    /// (their files go with their last reader; a handle on the keyspace
    /// keeps none).
    /// REQUIRES: the store's metadata lock.
    pub(super) fn drop_all(&self) {
        self.dropped.store(true, Ordering::Release);
        let set = std::mem::replace(
            &mut *self.chunks.write(),
            Arc::new(ChunkSet { chunks: Vec::new() }),
        );
        for chunk in &set.chunks {
            chunk.retire();
        }
    }

    /// The bytes `chunk`'s log may hold before a funk rebalance merges
    /// it: more for a chunk with a munk (its gets never read the log);
    /// for one without, less as reads outweigh writes among its recent
    /// accesses (`write_share`, `MunkCache::write_share`).
    pub(super) fn log_limit(&self, chunk: &super::chunk::Chunk, write_share: f64) -> u64 {
        match chunk.munk() {
            Some(_) => self.options.funk_log_limit_with_munk,
            None => adaptive_limit(
                self.options.funk_log_limit,
                self.options.funk_log_limit_min_share,
                write_share,
            ),
        }
    }

    /// The key a row cache entry of `key` in this keyspace has: the id
    /// (fixed width, big-endian: the key order within a keyspace is kept)
    /// before the key.
    pub(super) fn row_key(&self, key: &[u8]) -> Vec<u8> {
        let mut k = Vec::with_capacity(4 + key.len());
        k.extend_from_slice(&self.id.to_be_bytes());
        k.extend_from_slice(key);
        k
    }
}

/// The log limit of a munk-less chunk (YoDB §5.3's adaptation of the
/// funk log limit): `base` while writes make half its accesses or more
/// (a write-heavy load, whose builds the limit spaces out), shrinking with
/// the writes' share down to `min_share` of it (a read-heavy one: each get
/// or scan of a munk-less chunk searches its log, and the few writes pay
/// for builds more often).
pub(super) fn adaptive_limit(base: u64, min_share: f64, write_share: f64) -> u64 {
    let share = (2.0 * write_share).clamp(min_share, 1.0);
    ((base as f64 * share) as u64).max(1)
}

/// The options a keyspace of a chunked store runs with: `requested` for
/// what a keyspace may choose (chunk size and fill factor, funk log
/// limits, log filter parts, compression, Bloom bits, table and block
/// sizes), the store's for what is store-wide (key order, caches, munk
/// and row cache budgets, recovery mode). `InvalidArgument` when
/// `requested` asks for another layout: the layout is the store's.
pub(crate) fn space_options(store: &Options, requested: &Options) -> Result<Options> {
    if requested.layout != Layout::Chunked {
        return Err(Error::InvalidArgument(format!(
            "a keyspace of a chunked store is chunked too: profile {} asks for layout {}, \
             and the layout is chosen per store",
            requested.profile, requested.layout
        )));
    }
    Ok(crate::db::keyspace_rules::keyspace_options(
        store, requested,
    ))
}

#[cfg(test)]
mod tests {
    use super::adaptive_limit;

    #[test]
    fn a_log_limit_shrinks_as_reads_outweigh_writes() {
        let base = 2 << 20;
        assert_eq!(adaptive_limit(base, 0.25, 1.0), base);
        assert_eq!(adaptive_limit(base, 0.25, 0.5), base);
        assert_eq!(adaptive_limit(base, 0.25, 0.25), base / 2);
        assert_eq!(adaptive_limit(base, 0.25, 0.05), base / 4);
        assert_eq!(adaptive_limit(base, 0.25, 0.0), base / 4);
        assert_eq!(adaptive_limit(base, 1.0, 0.0), base);
    }
}
