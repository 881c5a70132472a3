//! The range tombstones an iterator must respect: those of every memtable
//! and every run it reads, asked key by key as the iterator moves.
//!
//! A memtable's fragments are copied (an `Arc`) when the iterator is made.
//! A run's are its tables': the view keeps the table holding the last key
//! asked about, so a scan opens each table's tombstones once and answers
//! most keys with two comparisons. Whether a tombstone covers an entry is
//! decided by sequence numbers alone (newer than the entry, visible at the
//! snapshot); only the iterator's skip past a covered span relies on the
//! order of the sources (see [`Cover`]).

use std::sync::Arc;

use super::meta::TableMeta;
use super::table_cache::TableCache;
use crate::error::Result;
use crate::format::range_tombstone::{successor, Fragments};
use crate::table::Table;

/// One run's tables and the one last looked at.
struct RunRangeDels {
    /// The iterator's source (merge child) reading this run.
    source: usize,
    tables: Vec<Arc<TableMeta>>,
    /// A journaled merge's inputs: keys at or below this are the interim
    /// run's (which holds the merged tombstones), not theirs.
    above: Option<Vec<u8>>,
    /// Whether older sources may be sought past this run's tombstones.
    skippable: bool,
    current: Option<(usize, Arc<Table>)>,
}

/// A table's fragments and the floor of the run holding it: the run
/// answers only for keys above the floor.
type FragmentsAbove<'a> = (&'a Fragments, Option<&'a [u8]>);

impl RunRangeDels {
    /// The fragments of the table that holds `key`, if any, with the
    /// run's floor (see `above`).
    fn fragments_at(
        &mut self,
        key: &[u8],
        cache: &TableCache,
    ) -> Result<Option<FragmentsAbove<'_>>> {
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
        let floor = self.above.as_deref();
        Ok(self
            .current
            .as_ref()
            .map(|(_, t)| (&**t.range_deletions(), floor)))
    }
}

/// A source made of disjoint parts read one after another (the chunked
/// layout's chunks), whose tombstones are known only once a part is
/// opened: the view asks for the lists of the part holding a key.
pub trait PartedRangeDels: Send {
    /// The tombstone lists of the part holding `key` (none when no part
    /// holds it).
    fn fragments_at(&mut self, key: &[u8]) -> Result<&[Arc<Fragments>]>;
}

/// The range tombstones of an iterator's sources, at its snapshot.
pub struct RangeDelView {
    snapshot: u64,
    /// False in a store with a custom key order (no range tombstones).
    enabled: bool,
    /// With the merge child reading each.
    memtables: Vec<(usize, Arc<Fragments>)>,
    runs: Vec<RunRangeDels>,
    /// With the merge child reading each.
    parted: Vec<(usize, Box<dyn PartedRangeDels>)>,
    /// Where runs' tables are read (`None`: a view of fragment lists only).
    cache: Option<Arc<TableCache>>,
}

/// What covers a key: the newest visible tombstone's sequence, and the
/// newest source holding a visible tombstone over it with that
/// tombstone's fragment bounds. Sources older than that one hold only
/// versions older than its tombstone within the fragment (the tree's
/// order), so an iterator may seek them past its end, or back before its
/// start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cover {
    pub seq: u64,
    pub source: usize,
    pub start: Vec<u8>,
    pub end: Vec<u8>,
    /// False when the newest covering source's tombstones may not be used
    /// to seek older sources (see [`RangeDelView::add_unskippable_run`]).
    pub skippable: bool,
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
            parted: Vec::new(),
            cache: Some(cache),
        }
    }

    /// A view at `snapshot` of fragment lists only (`add_memtable`), no
    /// runs: the chunked layout's sources.
    pub fn of_fragments(snapshot: u64) -> RangeDelView {
        RangeDelView {
            snapshot,
            enabled: true,
            memtables: Vec::new(),
            runs: Vec::new(),
            parted: Vec::new(),
            cache: None,
        }
    }

    /// Adds the tombstones of a memtable that merge child `source` reads.
    /// Sources are added newest first.
    pub fn add_memtable(&mut self, source: usize, fragments: Arc<Fragments>) {
        if self.enabled && !fragments.is_empty() {
            self.memtables.push((source, fragments));
        }
    }

    /// Adds the tombstones of a parted source that merge child `source`
    /// reads. A part's lists may cover several of its own sources' versions
    /// (a chunk's log and table), so they give no license to seek older
    /// sources past them.
    pub fn add_parted(&mut self, source: usize, parts: Box<dyn PartedRangeDels>) {
        if self.enabled {
            self.parted.push((source, parts));
        }
    }

    /// Adds a run's tables (those merge child `source` reads, in key
    /// order); keys at or below `above` are not theirs.
    pub fn add_run(&mut self, source: usize, tables: Vec<Arc<TableMeta>>, above: Option<Vec<u8>>) {
        self.push_run(source, tables, above, true);
    }

    /// Adds sorted, disjoint tables whose tombstones hide older entries
    /// but give no license to seek older sources past them (an LSbM
    /// buffer's copies, read through the same merge child as its level).
    pub fn add_unskippable_run(&mut self, source: usize, tables: Vec<Arc<TableMeta>>) {
        self.push_run(source, tables, None, false);
    }

    fn push_run(
        &mut self,
        source: usize,
        tables: Vec<Arc<TableMeta>>,
        above: Option<Vec<u8>>,
        skippable: bool,
    ) {
        debug_assert!(self.cache.is_some(), "runs need a table cache");
        if self.enabled && !tables.is_empty() && self.cache.is_some() {
            self.runs.push(RunRangeDels {
                source,
                tables,
                above,
                skippable,
                current: None,
            });
        }
    }

    /// What covers `key` at the snapshot, if anything.
    pub fn covering(&mut self, key: &[u8]) -> Result<Option<Cover>> {
        let snapshot = self.snapshot;
        let mut cover: Option<Cover> = None;
        // `floor`: a journaled merge's input run answers only above it, and
        // older sources below it hold the merge's output, whose entries
        // its tombstones need not be older than: a skip back stops there.
        let mut note =
            |source: usize, skippable: bool, floor: Option<&[u8]>, fragments: &Fragments| {
                let Some(f) = fragments.find(key) else {
                    return;
                };
                let Some(seq) = f.visible_seq(snapshot) else {
                    return;
                };
                match &mut cover {
                    // Sources come newest first: the first one stays.
                    Some(c) => c.seq = c.seq.max(seq),
                    None => {
                        cover = Some(Cover {
                            seq,
                            source,
                            start: match floor {
                                Some(floor) if f.start.as_slice() <= floor => successor(floor),
                                _ => f.start.clone(),
                            },
                            end: f.end.clone(),
                            skippable,
                        })
                    }
                }
            };
        for (source, m) in &self.memtables {
            note(*source, true, None, m);
        }
        for run in &mut self.runs {
            let (source, skippable) = (run.source, run.skippable);
            let Some(cache) = &self.cache else { break };
            if let Some((fragments, floor)) = run.fragments_at(key, cache)? {
                note(source, skippable, floor, fragments);
            }
        }
        for (source, parts) in &mut self.parted {
            for fragments in parts.fragments_at(key)? {
                note(*source, false, None, fragments);
            }
        }
        Ok(cover)
    }

    /// Whether nothing can cover any key (no source has tombstones it
    /// could know of).
    pub fn is_empty(&self) -> bool {
        self.memtables.is_empty() && self.runs.is_empty() && self.parted.is_empty()
    }
}
