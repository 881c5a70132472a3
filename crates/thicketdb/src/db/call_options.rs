//! Per-call settings: how one write is made durable, what one read sees.

use super::snapshot::Snapshot;

/// Per-write settings.
#[derive(Debug, Clone, Copy, Default)]
pub struct WriteOptions {
    /// `fdatasync` the log before acknowledging: the write survives power
    /// loss. Without it a write survives a process crash only.
    pub sync: bool,
}

/// Per-read settings.
#[derive(Debug, Clone)]
pub struct ReadOptions {
    /// Read as of this snapshot instead of the latest state.
    pub snapshot: Option<Snapshot>,
    /// Inclusive lower bound of iteration.
    pub lower_bound: Option<Vec<u8>>,
    /// Exclusive upper bound of iteration.
    pub upper_bound: Option<Vec<u8>>,
    /// Keep the blocks this read loads from files in the block cache
    /// (default true). Turn it off for one-off scans, so that they do not
    /// evict the blocks other reads use; cached blocks are used either way.
    pub fill_cache: bool,
}

impl Default for ReadOptions {
    fn default() -> ReadOptions {
        ReadOptions {
            snapshot: None,
            lower_bound: None,
            upper_bound: None,
            fill_cache: true,
        }
    }
}
