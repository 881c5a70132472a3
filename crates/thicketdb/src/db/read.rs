//! Point lookups: memtables, then each level's runs newest first; inside a
//! run one table is a candidate (binary search on key ranges), and its Bloom
//! filter, index and block (through the block cache) decide.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::search::{probe_table, Probe, Query};
use super::DbInner;
use super::ReadOptions;
use crate::error::Result;
use crate::format::internal_key::{append_internal_key, pack_trailer, ValueKind, TRAILER_LEN};
use crate::memtable::Lookup;
use crate::stats::Counters;
use crate::version::{TableMeta, Version};

/// Longest lookup key (user key plus trailer) built on the stack.
const STACK_LOOKUP_KEY: usize = 128;

pub(crate) fn get(inner: &Arc<DbInner>, key: &[u8], opts: &ReadOptions) -> Result<Option<Vec<u8>>> {
    get_with(inner, key, opts, <[u8]>::to_vec)
}

/// Looks `key` up and hands its value to `f` where it lies: in a table's
/// block (from the block cache, not copied) or in the memtable's copy.
pub(crate) fn get_with<R>(
    inner: &Arc<DbInner>,
    key: &[u8],
    opts: &ReadOptions,
    f: impl FnOnce(&[u8]) -> R,
) -> Result<Option<R>> {
    inner.check_open()?;
    // Read the sequence before the super version: every write at or below
    // it is then in one of the memtables or tables we look at.
    let seq = match &opts.snapshot {
        Some(s) => s.sequence(),
        None => inner.last_sequence.load(Ordering::Acquire),
    };
    let sv = inner.super_version();
    // Typical keys build their lookup key on the stack: a get allocates
    // nothing but the value it returns.
    let mut stack = [0u8; STACK_LOOKUP_KEY];
    let mut heap = Vec::new();
    let lookup: &[u8] = match stack.get_mut(..key.len() + TRAILER_LEN) {
        Some(buf) => {
            buf[..key.len()].copy_from_slice(key);
            buf[key.len()..].copy_from_slice(&pack_trailer(seq, ValueKind::SEEK).to_le_bytes());
            buf
        }
        None => {
            append_internal_key(&mut heap, key, seq, ValueKind::SEEK);
            &heap
        }
    };
    for mem in std::iter::once(&sv.mem).chain(sv.imms.iter()) {
        match mem.get(lookup) {
            Some(Lookup::Value(v)) => return Ok(Some(f(&v))),
            Some(Lookup::Deleted) => return Ok(None),
            None => {}
        }
    }
    let candidates = candidate_tables(&sv.version, key, seq);
    let Some(pool) = &inner.search else {
        // Taken by the one table lookup that finds the key: the loop
        // returns right after it.
        let mut f = Some(f);
        for meta in candidates {
            let table = inner.table_cache.table(meta)?;
            match probe_table(&table, lookup, opts.fill_cache, |v| f.take().map(|f| f(v)))? {
                Probe::Absent => continue,
                Probe::Found(result) => return Ok(result),
                Probe::Deleted => return Ok(None),
            }
        }
        return Ok(None);
    };
    // SifrDB's parallel search: the filters pick the candidates here, the
    // probes run on the search threads.
    let mut tables = Vec::new();
    for meta in candidates {
        let table = inner.table_cache.table(meta)?;
        if table.may_contain(key) {
            tables.push(table);
        }
    }
    if tables.len() < inner.options.parallel_search_min_candidates.max(2) {
        let mut f = Some(f);
        for table in &tables {
            match probe_table(table, lookup, opts.fill_cache, |v| f.take().map(|f| f(v)))? {
                Probe::Absent => continue,
                Probe::Found(result) => return Ok(result),
                Probe::Deleted => return Ok(None),
            }
        }
        return Ok(None);
    }
    Counters::add(&inner.counters.search_lookups, 1);
    let pin: Arc<dyn Send + Sync> = sv.clone();
    // The value comes back from another thread, so it is copied once.
    let value = pool.search(Query::new(lookup.to_vec(), opts.fill_cache, tables, pin))?;
    Ok(value.map(|v| f(&v)))
}

/// The tables that may hold `key` at sequence `seq`, newest first: per run
/// the one whose key range holds it, unless the run's keys there are
/// superseded by a journaled merge's interim run or the table holds only
/// newer writes.
fn candidate_tables<'a>(
    version: &'a Version,
    key: &'a [u8],
    seq: u64,
) -> impl Iterator<Item = &'a Arc<TableMeta>> + 'a {
    version
        .levels
        .iter()
        .enumerate()
        .flat_map(move |(depth, level)| {
            level.runs.iter().filter_map(move |run| {
                let meta = &run.tables[run.find(key)?];
                let superseded = version.superseded_in(depth, run.id, meta, key);
                (!superseded && meta.min_seq <= seq).then_some(meta)
            })
        })
}
