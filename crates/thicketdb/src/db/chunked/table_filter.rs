//! Funk tables read through the recovery table (YoDB §3.5): in the
//! asynchronous mode a funk build merges every complete write of its
//! chunk, also those past the last checkpoint, as the paper's funks do
//! (`rebalance.rs`), so a table may hold writes an asynchronous crash took
//! back. Every read of a table (get, scan, munk load, funk build) leaves
//! out the entries and range tombstones of an old incarnation past its
//! checkpoint (`Incarnations::ignores`), as every read of a chunk log
//! does. A store whose recovery table has no row (never recovered from an
//! asynchronous crash) ignores nothing: its reads take the plain paths.

use std::sync::Arc;

use super::incarnations::Incarnations;
use crate::db::probe::Probe;
use crate::error::Result;
use crate::format::internal_key::{user_key, InternalKey, ParsedKey, ValueKind};
use crate::format::range_tombstone::{Fragments, RangeTombstone};
use crate::iterator::{EntryLocation, InternalIterator};
use crate::table::Table;

/// Whether `key` (an internal key) is a write `incarnations` ignores.
fn ignored(incarnations: &Incarnations, key: &[u8]) -> bool {
    ParsedKey::parse(key).is_some_and(|p| incarnations.ignores(p.sequence))
}

/// A table's cursor without the entries `incarnations` ignores.
pub(super) struct Unignored<I> {
    inner: I,
    incarnations: Arc<Incarnations>,
}

impl<I: InternalIterator> Unignored<I> {
    pub fn new(inner: I, incarnations: Arc<Incarnations>) -> Unignored<I> {
        Unignored {
            inner,
            incarnations,
        }
    }

    fn skip_forward(&mut self) {
        while self.inner.valid() && ignored(&self.incarnations, self.inner.key()) {
            self.inner.next();
        }
    }

    fn skip_backward(&mut self) {
        while self.inner.valid() && ignored(&self.incarnations, self.inner.key()) {
            self.inner.prev();
        }
    }
}

impl<I: InternalIterator> InternalIterator for Unignored<I> {
    fn valid(&self) -> bool {
        self.inner.valid()
    }
    fn seek_to_first(&mut self) {
        self.inner.seek_to_first();
        self.skip_forward();
    }
    fn seek_to_last(&mut self) {
        self.inner.seek_to_last();
        self.skip_backward();
    }
    fn seek(&mut self, target: &[u8]) {
        self.inner.seek(target);
        self.skip_forward();
    }
    fn next(&mut self) {
        self.inner.next();
        self.skip_forward();
    }
    fn prev(&mut self) {
        self.inner.prev();
        self.skip_backward();
    }
    fn key(&self) -> &[u8] {
        self.inner.key()
    }
    fn value(&self) -> &[u8] {
        self.inner.value()
    }
    fn status(&self) -> Result<()> {
        self.inner.status()
    }
    fn location(&self) -> Option<EntryLocation> {
        self.inner.location()
    }
}

/// The table's range tombstones but those `incarnations` ignores.
pub(super) fn range_deletions(table: &Table, incarnations: &Incarnations) -> Arc<Fragments> {
    let all = table.range_deletions();
    if all.is_empty() || !incarnations.ignores_any() {
        return all.clone();
    }
    let kept: Vec<RangeTombstone> = all
        .tombstones()
        .filter(|t| !incarnations.ignores(t.seq))
        .collect();
    Arc::new(Fragments::fragment(&kept))
}

/// The newest version of `key` at `sequence` in `table` that
/// `incarnations` does not ignore (`probe_table`'s answer, for a table
/// that may hold ignored writes).
pub(super) fn probe(
    table: &Arc<Table>,
    key: &[u8],
    sequence: u64,
    incarnations: &Arc<Incarnations>,
) -> Result<Probe<Vec<u8>>> {
    let covered = range_deletions(table, incarnations).covering_seq(key, sequence);
    let mut it = Unignored::new(table.iter_with(true), incarnations.clone());
    it.seek(InternalKey::new(key, sequence, ValueKind::SEEK).encoded());
    let found = match it.valid() && user_key(it.key()) == key {
        true => ParsedKey::parse(it.key()).map(|p| match p.kind {
            _ if p.sequence < covered => Probe::Deleted,
            ValueKind::Value => Probe::Found(it.value().to_vec()),
            ValueKind::Deletion => Probe::Deleted,
        }),
        false => None,
    };
    it.status()?;
    Ok(found.unwrap_or(match covered {
        0 => Probe::Absent,
        _ => Probe::Deleted,
    }))
}
