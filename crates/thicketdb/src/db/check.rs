//! `check_store`: verifies every checksum a store holds — OPTIONS, then
//! the layout's own files (`lsm/check_files.rs`: CURRENT, the MANIFEST,
//! segments, tables and logs; `chunked/check_chunks.rs`: chunk tables and
//! logs). A torn tail of a log or of the MANIFEST is what a crash leaves
//! and is not an error; damage before the tail is. Beyond checksums, both
//! check every table's keys against its recorded range and the store's
//! last sequence (`check_keys.rs`), and the LSM layout its runs' overlap
//! (`lsm/check_runs.rs`).

use std::path::Path;
use std::sync::Arc;

pub use super::check_report::CheckReport;
use crate::error::{Error, Result};
use crate::format::KeyOrder;
use crate::io::{FileSystem, PosixFs};
use crate::options::Options;
use crate::version::files::{lock_path, options_path};

/// Checks the store in `dir` on the real file system.
pub fn check_store(dir: &Path) -> Result<CheckReport> {
    check_store_with_fs(dir, Arc::new(PosixFs))
}

/// Checks the store in `dir`; takes the store's lock so it never reads a
/// store another process is writing (a table compacted away mid-check
/// would look damaged). Everything else goes through the read-only file
/// system of `Db::open_read_only`: a check writes nothing.
pub fn check_store_with_fs(dir: &Path, fs: Arc<dyn FileSystem>) -> Result<CheckReport> {
    let order = super::identity::recorded_order(fs.as_ref(), dir)?;
    check_ordered_store(dir, fs, order)
}

/// Checks the store in `dir`, whose keys sort by `order` (a store created
/// with a custom comparator can only be checked with it).
pub fn check_ordered_store(
    dir: &Path,
    fs: Arc<dyn FileSystem>,
    order: KeyOrder,
) -> Result<CheckReport> {
    let _lock = fs.lock(&lock_path(dir))?;
    let fs = super::read_only_fs::ReadOnlyFs::wrap(fs);
    let options_file = options_path(dir);
    let (stored, comparator) = Options::decode_recorded(
        &options_file.display().to_string(),
        &fs.read_to_vec(&options_file)?,
    )?;
    if comparator != order.name() {
        return Err(Error::InvalidArgument(format!(
            "store in {} was created with comparator {comparator:?}, not {:?}",
            dir.display(),
            order.name()
        )));
    }
    if stored.layout == crate::options::Layout::Chunked {
        return super::chunked::check_chunks::check(dir, fs.as_ref());
    }
    super::lsm::check_files::check(dir, fs, order, &stored)
}
