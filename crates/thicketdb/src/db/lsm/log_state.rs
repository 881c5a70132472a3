//! The store's current log: the writer the write leader appends to, and
//! how a log file is created.

use std::path::Path;

use crate::error::Result;
use crate::io::{FileSystem, WritableFile};
use crate::log::LogWriter;
use crate::options::Options;

/// The current log; only the write leader and memtable switches touch it.
pub(crate) struct LogState {
    pub writer: LogWriter,
    /// The file number of the log `writer` appends to (a checkpoint copies
    /// exactly its written prefix).
    pub number: u64,
}

/// Creates a log file the way `log_mmap` asks.
pub(crate) fn create_log(
    fs: &dyn FileSystem,
    options: &Options,
    path: &Path,
) -> Result<Box<dyn WritableFile>> {
    if options.log_mmap {
        fs.create_mapped(path)
    } else {
        fs.create(path)
    }
}
