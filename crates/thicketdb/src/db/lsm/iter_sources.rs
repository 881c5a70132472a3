//! An LSM keyspace's iterator: every memtable and run of its super version
//! (a level with an LSbM buffer serving range reads as one piece-by-piece
//! source), their range tombstones, and the search pool's parallel seeks.

use std::sync::Arc;

use super::tree::Tree;
use super::DbInner;
use crate::db::call_options::ReadOptions;
use crate::db::iter::DbIterator;
use crate::db::snapshot::Snapshot;
use crate::error::Result;
use crate::iterator::{AboveKey, InternalIterator};
use crate::memtable::MemtableIterator;
use crate::version::piece_iter::PieceIterator;
use crate::version::range_del_view::RangeDelView;
use crate::version::run_iter::RunIterator;
use crate::version::Version;

/// An iterator over `tree` at `opts`' snapshot (the latest when none).
pub(crate) fn new(inner: &Arc<DbInner>, tree: &Tree, mut opts: ReadOptions) -> Result<DbIterator> {
    inner.check_open()?;
    tree.check_live()?;
    let snapshot = match opts.snapshot.take() {
        Some(s) => s,
        None => Snapshot::latest(&inner.last_sequence, inner.snapshots.clone()),
    };
    let sv = tree.super_version();
    let order = &tree.options.comparator;
    let mut children: Vec<Box<dyn InternalIterator>> = Vec::new();
    let mut range_dels = RangeDelView::new(
        snapshot.sequence(),
        inner.table_cache.clone(),
        order.is_bytewise(),
    );
    for mem in std::iter::once(&sv.mem).chain(sv.imms.iter()) {
        range_dels.add_memtable(children.len(), mem.range_deletions());
        children.push(Box::new(MemtableIterator::new(mem.clone())));
    }
    for (depth, level) in sv.version.levels.iter().enumerate() {
        if let Some(pieces) = buffer_pieces(inner, tree, &sv.version, depth, opts.fill_cache) {
            // The pieces read the level's run and its buffer, so the
            // tombstones of both hide older entries (sequence numbers
            // decide). Buffer tables are copies beside the run, so the
            // tree's order that lets a scan seek older sources past a
            // tombstone is not argued for them: covering only, no skip.
            // Of the buffer, only tables with tombstones are asked.
            let source = children.len();
            let buffer = sv
                .version
                .buffer_tombstone_tables(depth, &inner.table_cache)?
                .iter()
                .cloned();
            for tables in level.runs.iter().map(|r| r.tables.clone()).chain(buffer) {
                range_dels.add_unskippable_run(source, tables);
            }
            children.push(pieces);
            continue;
        }
        for run in &level.runs {
            let mut tables = run.overlapping(
                opts.lower_bound.as_deref(),
                opts.upper_bound.as_deref(),
                order,
            );
            let iter =
                |tables| RunIterator::new(tables, inner.table_cache.clone(), opts.fill_cache);
            if let Some(through) = sv.version.superseded_through(depth, run.id) {
                // The merge inputs still in place (from the one straddling
                // the checkpoint key on) show only their keys above it; the
                // task's moves below it are untouched.
                let straddling =
                    tables.partition_point(|t| order.le(t.largest_user_key(), through));
                let inputs = tables.split_off(straddling);
                if !inputs.is_empty() {
                    range_dels.add_run(children.len(), inputs.clone(), Some(through.to_vec()));
                    children.push(Box::new(AboveKey::new(
                        iter(inputs),
                        through.to_vec(),
                        order.clone(),
                    )));
                }
            }
            if !tables.is_empty() {
                range_dels.add_run(children.len(), tables.clone(), None);
                children.push(Box::new(iter(tables)));
            }
        }
    }
    let runs = children.len() - 1 - sv.imms.len();
    let parallel_seek = inner
        .search
        .clone()
        .filter(|_| runs >= inner.options.parallel_search_min_candidates.max(2));
    let mut it = DbIterator::over_sources(children, snapshot, opts, order.clone(), Box::new(sv))
        .with_range_dels(range_dels);
    if let Some(pool) = parallel_seek {
        it = it.with_parallel_seek(pool);
    }
    Ok(it)
}

/// LSbM (Algorithm 4): a level whose compaction buffer serves range reads
/// is read piece by piece, from its buffer where that holds all the
/// level's data, from its own run elsewhere (`version::buffer_range`).
fn buffer_pieces(
    inner: &DbInner,
    tree: &Tree,
    version: &Arc<Version>,
    level: usize,
    fill_cache: bool,
) -> Option<Box<dyn InternalIterator>> {
    if !tree.options.lsbm_range_reads {
        return None;
    }
    version.range_plan(level)?;
    Some(Box::new(PieceIterator::new(
        version.clone(),
        level,
        inner.table_cache.clone(),
        fill_cache,
        inner.counters.clone(),
        (tree.options.lsbm_range_by_cache).then_some(tree.options.lsbm_trim_threshold),
    )))
}
