//! `compaction_policy`: which shape the tree keeps. An option value, so it
//! lives with the options; the policies themselves are in `compaction`.

/// Which shape the tree keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PolicyKind {
    /// One run per level below L0 (LevelDB, BoLT).
    Leveled,
    /// Up to `runs_per_level` runs per level (SifrDB's split forest).
    Tiered,
}

named_values!(PolicyKind, "compaction policy", {
    Leveled => "leveled",
    Tiered => "tiered",
});
