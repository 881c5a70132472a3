//! `compaction_policy`: which shape the tree keeps. An option value, so it
//! lives with the options; the policies themselves are in `compaction`.

use std::fmt;
use std::str::FromStr;

use crate::error::{Error, Result};

/// Which shape the tree keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PolicyKind {
    /// One run per level below L0 (LevelDB, BoLT).
    Leveled,
    /// Up to `runs_per_level` runs per level (SifrDB's split forest).
    Tiered,
}

impl fmt::Display for PolicyKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PolicyKind::Leveled => "leveled",
            PolicyKind::Tiered => "tiered",
        })
    }
}

impl FromStr for PolicyKind {
    type Err = Error;
    fn from_str(s: &str) -> Result<PolicyKind> {
        match s {
            "leveled" => Ok(PolicyKind::Leveled),
            "tiered" => Ok(PolicyKind::Tiered),
            _ => Err(Error::InvalidArgument(format!(
                "unknown compaction policy {s:?} (known: leveled, tiered)"
            ))),
        }
    }
}
