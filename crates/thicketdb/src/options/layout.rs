//! `layout`: how a store organises its data on disk. An option value, so
//! it lives with the options; the layouts themselves are in `db`
//! (`db/chunked/` for the chunked one).

use std::fmt;
use std::str::FromStr;

use crate::error::{Error, Result};

/// How a store organises its data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Layout {
    /// A log-structured merge tree: a write-ahead log, memtables and levels
    /// of runs (`compaction_policy` picks leveled or tiered).
    #[default]
    Lsm,
    /// YoDB's range-partitioned chunks: each chunk owns a key range and a
    /// funk (one table plus an append-only chunk log); no global log.
    Chunked,
}

impl fmt::Display for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Layout::Lsm => "lsm",
            Layout::Chunked => "chunked",
        })
    }
}

impl FromStr for Layout {
    type Err = Error;
    fn from_str(s: &str) -> Result<Layout> {
        match s {
            "lsm" => Ok(Layout::Lsm),
            "chunked" => Ok(Layout::Chunked),
            _ => Err(Error::InvalidArgument(format!(
                "unknown layout {s:?} (known: lsm, chunked)"
            ))),
        }
    }
}
