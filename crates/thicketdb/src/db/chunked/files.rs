//! File names of a chunked store: `CHUNKS` (the chunk list), funk tables
//! `NNNNNN.ftab`, chunk logs `NNNNNN.clog` and the batch log `NNNNNN.blog`
//! (batches that span chunks). `OPTIONS` and `LOCK` are the LSM's.

use std::path::{Path, PathBuf};

/// The chunk list.
pub fn chunk_list_path(dir: &Path) -> PathBuf {
    dir.join("CHUNKS")
}

/// Where a new chunk list is written before it is renamed over `CHUNKS`.
pub fn chunk_list_temp_path(dir: &Path) -> PathBuf {
    dir.join("CHUNKS.tmp")
}

/// A funk's table.
pub fn funk_table_path(dir: &Path, number: u64) -> PathBuf {
    dir.join(format!("{number:06}.ftab"))
}

/// A chunk's log.
pub fn chunk_log_path(dir: &Path, number: u64) -> PathBuf {
    dir.join(format!("{number:06}.clog"))
}

/// The batch log.
pub fn batch_log_path(dir: &Path, number: u64) -> PathBuf {
    dir.join(format!("{number:06}.blog"))
}

/// The number of a funk table, chunk log or batch log file name.
pub fn parse_numbered(name: &str) -> Option<u64> {
    let (stem, ext) = name.split_once('.')?;
    matches!(ext, "ftab" | "clog" | "blog")
        .then(|| stem.parse().ok())
        .flatten()
}
