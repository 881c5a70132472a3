//! Space amplification: the bytes the store occupies on the device over the
//! key and value bytes of what a reader can see.

use super::iter::DbIterator;
use crate::error::Result;
use crate::io::FileSystem;
use crate::stats::stat_struct;
use std::path::Path;

stat_struct! {
    /// How much space the store takes for the data it holds.
    /// `SpaceUsage::fields` lists every figure by name.
    #[derive(Debug, Clone, Copy, Default, PartialEq)]
    pub struct SpaceUsage {
        /// Bytes allocated to the files of the store's directory (segments,
        /// logs, MANIFEST and the small metadata files); punched holes do not
        /// count.
        pub disk_bytes: u64,
        /// Key and value bytes of the newest version of every live key.
        pub logical_bytes: u64,
        /// Keys a reader sees.
        pub live_keys: u64,
        /// `disk_bytes / logical_bytes`; 0 for an empty store.
        pub space_amplification: f64,
    }
}

/// What `cursors` (fresh iterators over the whole store, one per
/// namespace) see over the allocated bytes of `dir` (any layout).
pub(crate) fn measure(
    cursors: Vec<DbIterator>,
    fs: &dyn FileSystem,
    dir: &Path,
) -> Result<SpaceUsage> {
    let (mut live_keys, mut logical_bytes) = (0u64, 0u64);
    for mut it in cursors {
        it.seek_to_first();
        while it.valid() {
            live_keys += 1;
            logical_bytes += (it.key().len() + it.value().len()) as u64;
            it.next();
        }
        it.status()?;
    }
    let disk_bytes = disk_bytes(fs, dir)?;
    Ok(SpaceUsage {
        disk_bytes,
        logical_bytes,
        live_keys,
        space_amplification: if logical_bytes == 0 {
            0.0
        } else {
            disk_bytes as f64 / logical_bytes as f64
        },
    })
}

fn disk_bytes(fs: &dyn FileSystem, dir: &Path) -> Result<u64> {
    let mut total = 0;
    for name in fs.list(dir)? {
        let path = dir.join(&name);
        match fs.allocated_size(&path) {
            Ok(bytes) => total += bytes,
            // Deleted since the listing (a compaction's dead segment).
            Err(_) if !fs.exists(&path) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(total)
}
