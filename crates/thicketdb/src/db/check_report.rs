//! What a clean `check_store` covered, in either layout.

/// What a clean check covered.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CheckReport {
    /// Live tables read in full and verified.
    pub tables: usize,
    /// Log tables among `tables`, whose values were read from their logs.
    pub log_tables: usize,
    /// Segment files holding them.
    pub segments: usize,
    /// Live logs read.
    pub logs: usize,
    /// Records in those logs.
    pub log_records: u64,
    /// Records in the MANIFEST.
    pub manifest_records: u64,
}
