//! The range tombstones an iterator must respect: those of every memtable
//! and every run it reads, asked key by key as the iterator moves.
//!
//! A memtable's fragments are copied (an `Arc`) when the iterator is made.
//! A run's are its tables': the view keeps the table holding the last key
//! asked about, so a scan opens each table's tombstones once and answers
//! most keys with two comparisons. Whether a tombstone covers an entry is
//! decided by sequence numbers alone (newer than the entry, visible at the
//! snapshot), so the order of the sources does not matter.

use std::sync::Arc;

use super::meta::TableMeta;
use super::table_cache::TableCache;
use crate::error::Result;
use crate::format::range_tombstone::Fragments;
use crate::table::Table;

/// One run's tables and the one last looked at.
struct RunRangeDels {
    tables: Vec<Arc<TableMeta>>,
    /// A journaled merge's inputs: keys at or below this are the interim
    /// run's (which holds the merged tombstones), not theirs.
    above: Option<Vec<u8>>,
    current: Option<(usize, Arc<Table>)>,
}

impl RunRangeDels {
    /// The fragments of the table that holds `key`, if any.
    fn fragments_at(&mut self, key: &[u8], cache: &TableCache) -> Result<Option<&Fragments>> {
        if self.above.as_deref().is_some_and(|floor| key <= floor) {
            return Ok(None);
        }
        let holds =
            |meta: &TableMeta| meta.smallest_user_key() <= key && key <= meta.largest_user_key();
        let cached = matches!(&self.current, Some((i, _)) if holds(&self.tables[*i]));
        if !cached {
            let i = self.tables.partition_point(|t| t.largest_user_key() < key);
            match self.tables.get(i).filter(|t| holds(t)) {
                Some(meta) => self.current = Some((i, cache.table(meta)?)),
                None => return Ok(None),
            }
        }
        Ok(self.current.as_ref().map(|(_, t)| &**t.range_deletions()))
    }
}

/// The range tombstones of an iterator's sources, at its snapshot.
pub struct RangeDelView {
    snapshot: u64,
    /// False in a store with a custom key order (no range tombstones).
    enabled: bool,
    memtables: Vec<Arc<Fragments>>,
    runs: Vec<RunRangeDels>,
    cache: Arc<TableCache>,
}

impl RangeDelView {
    /// A view at `snapshot` reading tables through `cache`; with `enabled`
    /// false (a custom key order, which has no range tombstones) it stays
    /// empty.
    pub fn new(snapshot: u64, cache: Arc<TableCache>, enabled: bool) -> RangeDelView {
        RangeDelView {
            snapshot,
            enabled,
            memtables: Vec::new(),
            runs: Vec::new(),
            cache,
        }
    }

    /// Adds a memtable's tombstones.
    pub fn add_memtable(&mut self, fragments: Arc<Fragments>) {
        if self.enabled && !fragments.is_empty() {
            self.memtables.push(fragments);
        }
    }

    /// Adds a run's tables (those the iterator reads, in key order); keys
    /// at or below `above` are not theirs.
    pub fn add_run(&mut self, tables: Vec<Arc<TableMeta>>, above: Option<Vec<u8>>) {
        if self.enabled && !tables.is_empty() {
            self.runs.push(RunRangeDels {
                tables,
                above,
                current: None,
            });
        }
    }

    /// The newest tombstone sequence covering `key` visible at the
    /// snapshot (0: none).
    pub fn covering_seq(&mut self, key: &[u8]) -> Result<u64> {
        let snapshot = self.snapshot;
        let mut newest = 0;
        for m in &self.memtables {
            newest = newest.max(m.covering_seq(key, snapshot));
        }
        for run in &mut self.runs {
            if let Some(fragments) = run.fragments_at(key, &self.cache)? {
                newest = newest.max(fragments.covering_seq(key, snapshot));
            }
        }
        Ok(newest)
    }

    /// Whether a visible tombstone newer than `seq` covers `key`.
    pub fn covers(&mut self, key: &[u8], seq: u64) -> Result<bool> {
        if self.memtables.is_empty() && self.runs.is_empty() {
            return Ok(false);
        }
        Ok(self.covering_seq(key)? > seq)
    }
}
