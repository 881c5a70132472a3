//! Point lookups: memtables, then each level's runs newest first; inside a
//! run one table is a candidate (binary search on key ranges), and its Bloom
//! filter, index and block (through the block cache) decide. A level with
//! an LSbM compaction buffer asks its buffer runs first. One list of the
//! tables to probe (`probe_order`) serves both searches: probed in turn,
//! or, with search threads, in parallel (SifrDB).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::search::Query;
use super::tree::Tree;
use super::DbInner;
use crate::db::call_options::ReadOptions;
use crate::db::probe::{probe_table, probe_table_resident, Probe};
use crate::error::Result;
use crate::format::internal_key::{append_internal_key, pack_trailer, ValueKind, TRAILER_LEN};
use crate::format::KeyOrder;
use crate::memtable::Lookup;
use crate::stats::Counters;
use crate::table::{blocks_read_on_this_thread, Table};
use crate::version::lsbm_buffer::{self, BufferProbe, BufferRun};
use crate::version::{TableMeta, Version};
use smallvec::SmallVec;

/// Candidate tables a parallel lookup collects without allocating.
const CANDIDATES_ON_STACK: usize = 8;

/// Longest lookup key (user key plus trailer) built on the stack.
const STACK_LOOKUP_KEY: usize = 128;

pub(crate) fn get(
    inner: &Arc<DbInner>,
    tree: &Tree,
    key: &[u8],
    opts: &ReadOptions,
) -> Result<Option<Vec<u8>>> {
    get_with(inner, tree, key, opts, <[u8]>::to_vec)
}

/// Looks `key` up and hands its value to `f` where it lies: in a table's
/// block (from the block cache, not copied) or in the memtable's copy.
/// Counts the lookup and the blocks it read.
pub(crate) fn get_with<R>(
    inner: &Arc<DbInner>,
    tree: &Tree,
    key: &[u8],
    opts: &ReadOptions,
    f: impl FnOnce(&[u8]) -> R,
) -> Result<Option<R>> {
    let before = blocks_read_on_this_thread();
    let found = lookup_with(inner, tree, key, opts, f);
    let c = &inner.counters;
    Counters::add(&c.gets, 1);
    Counters::add(&c.get_blocks_read, blocks_read_on_this_thread() - before);
    found
}

fn lookup_with<R>(
    inner: &Arc<DbInner>,
    tree: &Tree,
    key: &[u8],
    opts: &ReadOptions,
    f: impl FnOnce(&[u8]) -> R,
) -> Result<Option<R>> {
    inner.check_open()?;
    tree.check_live()?;
    // Read the sequence before the super version: every write at or below
    // it is then in one of the memtables or tables we look at.
    let seq = match &opts.snapshot {
        Some(s) => s.sequence(),
        None => inner.last_sequence.load(Ordering::Acquire),
    };
    let sv = tree.super_version();
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
    let tables = probe_order(inner, &sv.version, key, seq);
    let Some(pool) = &inner.search else {
        return Ok(probe_in_turn(inner, tables, lookup, opts, &mut Some(f))?.flatten());
    };
    search_in_parallel(inner, pool, &sv, tables, lookup, opts, f)
}

/// SifrDB's parallel search, where it pays: parallel probes overlap
/// device reads, and handing another thread a probe that reads no device
/// costs more than doing it (docs/reproduction.md, SifrDB: with a 4 MiB
/// block cache over the page cache, handing every block cache miss over
/// made p95 2.57x serial's). So candidates are probed in turn on the
/// caller while their data block is resident (in the block cache, or in
/// the page cache: a `RWF_NOWAIT` read, so buffered stores decide on what
/// the kernel holds, not on an option); those whose block needs the device
/// are set aside, and once a resident answer (or the last candidate)
/// decides which of them matter, they go to the search threads when at
/// least `parallel_search_min_candidates` (and 2) need the device, else
/// are probed in turn. A lookup whose blocks are resident is the serial
/// search.
fn search_in_parallel<R>(
    inner: &Arc<DbInner>,
    pool: &super::search::SearchPool,
    sv: &Arc<super::super_version::SuperVersion>,
    tables: impl Iterator<Item = Result<ProbeTable>>,
    lookup: &[u8],
    opts: &ReadOptions,
    f: impl FnOnce(&[u8]) -> R,
) -> Result<Option<R>> {
    let mut f = Some(f);
    // Candidates needing a device read, newest first, all newer than
    // `cached`.
    let mut uncached: SmallVec<[ProbeTable; CANDIDATES_ON_STACK]> = SmallVec::new();
    // The newest resident answer older than an uncached candidate: it
    // decides when they all answer `Absent`.
    let mut cached: Option<(Probe<Vec<u8>>, Option<usize>)> = None;
    for candidate in tables {
        let candidate = candidate?;
        if uncached.is_empty() {
            let answer = probe_table_resident(&candidate.table, lookup, opts.fill_cache, |v| {
                f.take().map(|f| f(v))
            });
            match answer {
                None => uncached.push(candidate),
                Some(probe) => {
                    if let Some(answer) = answered(inner, candidate.buffer_level, probe?) {
                        return Ok(answer);
                    }
                }
            }
            continue;
        }
        match probe_table_resident(&candidate.table, lookup, opts.fill_cache, <[u8]>::to_vec) {
            None => uncached.push(candidate),
            Some(answer) => match answer? {
                Probe::Absent => {}
                decided => {
                    cached = Some((decided, candidate.buffer_level));
                    break;
                }
            },
        }
    }
    if uncached.len() < inner.options.parallel_search_min_candidates.max(2) {
        let tables = uncached.into_iter().map(Ok);
        if let Some(answer) = probe_in_turn(inner, tables, lookup, opts, &mut f)? {
            return Ok(answer);
        }
        return Ok(decided_in_cache(inner, cached, f));
    }
    Counters::add(&inner.counters.search_lookups, 1);
    let buffer_levels: SmallVec<[Option<usize>; CANDIDATES_ON_STACK]> =
        uncached.iter().map(|t| t.buffer_level).collect();
    let pin: Arc<dyn Send + Sync> = sv.clone();
    let (value, decided_by) = pool.search(Query::new(
        lookup.to_vec(),
        opts.fill_cache,
        uncached.into_iter().map(|t| t.table).collect(),
        pin,
    ));
    // The value comes back from another thread, so it is copied once.
    let value = value?;
    let Some(by) = decided_by else {
        return Ok(decided_in_cache(inner, cached, f));
    };
    if let (true, Some(level)) = (value.is_some(), buffer_levels[by]) {
        count_buffer_hit(inner, level);
    }
    Ok(value.and_then(|v| f.take().map(|f| f(&v))))
}

/// The answer of the cached candidate older than every uncached one, once
/// those all answered `Absent`.
fn decided_in_cache<R>(
    inner: &DbInner,
    cached: Option<(Probe<Vec<u8>>, Option<usize>)>,
    f: Option<impl FnOnce(&[u8]) -> R>,
) -> Option<R> {
    match cached {
        Some((Probe::Found(v), buffer_level)) => {
            if let Some(level) = buffer_level {
                count_buffer_hit(inner, level);
            }
            f.map(|f| f(&v))
        }
        _ => None,
    }
}

/// A table a lookup probes: a level's own, or one of its LSbM buffer.
struct ProbeTable {
    table: Arc<Table>,
    /// Its level.
    level: usize,
    /// Its level when it is from the compaction buffer (a hit there counts
    /// as a buffer hit of that level).
    buffer_level: Option<usize>,
}

/// Counts a lookup answered by a buffer table of `level`.
fn count_buffer_hit(inner: &DbInner, level: usize) {
    Counters::add(&inner.counters.buffer_hits, 1);
    Counters::add_at(&inner.counters.buffer_hits_per_level, level, 1);
}

/// Probes `tables` one after another until one answers, handing a value
/// found to `f` where it lies: `Some` with the lookup's answer, `None` when
/// no table answers. The serial search, and the parallel one's probes of
/// too few tables to hand over.
fn probe_in_turn<R>(
    inner: &DbInner,
    tables: impl Iterator<Item = Result<ProbeTable>>,
    lookup: &[u8],
    opts: &ReadOptions,
    f: &mut Option<impl FnOnce(&[u8]) -> R>,
) -> Result<Option<Option<R>>> {
    for candidate in tables {
        let candidate = candidate?;
        // `f` is taken by the one table lookup that finds the key: the
        // loop returns right after it.
        let before = blocks_read_on_this_thread();
        let probe = probe_table(&candidate.table, lookup, opts.fill_cache, |v| {
            f.take().map(|f| f(v))
        });
        let read = blocks_read_on_this_thread() - before;
        if read > 0 {
            let c = &inner.counters;
            let per_level = match candidate.buffer_level {
                Some(_) => &c.buffer_blocks_read_per_level,
                None => &c.get_blocks_read_per_level,
            };
            Counters::add_at(per_level, candidate.level, read);
        }
        if let Some(answer) = answered(inner, candidate.buffer_level, probe?) {
            return Ok(Some(answer));
        }
    }
    Ok(None)
}

/// The lookup's answer when a probe decides it (`None` for `Absent`: the
/// next candidate decides), counting a value found in the compaction
/// buffer of a level (`buffer_level`) as a buffer hit.
fn answered<R>(
    inner: &DbInner,
    buffer_level: Option<usize>,
    probe: Probe<Option<R>>,
) -> Option<Option<R>> {
    match probe {
        Probe::Absent => None,
        Probe::Found(result) => {
            if let Some(level) = buffer_level {
                count_buffer_hit(inner, level);
            }
            Some(result)
        }
        Probe::Deleted => Some(None),
    }
}

/// The tables a lookup of `key` at `seq` may probe, newest first, opened
/// only as they are reached (the serial search stops at the first
/// answer): per candidate, LSbM's buffer tables first, then the level's
/// own table. A level with a buffer is passed over when its table's filter
/// (and range tombstones) rule the key out, and its buffer is asked only
/// when that filter says the key may be there and no tombstone of the
/// table covers it (Algorithm 3). The serial and the parallel search both
/// probe these; the parallel one keeps those whose filter admits the key.
fn probe_order<'a>(
    inner: &'a DbInner,
    version: &'a Version,
    key: &'a [u8],
    seq: u64,
) -> impl Iterator<Item = Result<ProbeTable>> + 'a {
    let open = move |meta: &Arc<TableMeta>, level: usize, in_buffer: bool| {
        inner.table_cache.table(meta).map(|table| ProbeTable {
            table,
            level,
            buffer_level: in_buffer.then_some(level),
        })
    };
    candidate_tables(version, key, seq).flat_map(move |candidate| {
        let depth = candidate.level;
        let level = open(candidate.meta, depth, false);
        let buffer: &[BufferRun] = match &level {
            Ok(own) if !candidate.buffer.is_empty() => {
                if !own.table.may_answer(key) {
                    return None.into_iter().flatten();
                }
                match own.table.may_contain(key) && !covers(&own.table, key, seq) {
                    true => candidate.buffer,
                    false => &[],
                }
            }
            _ => &[],
        };
        let stopped = move || Counters::add_at(&inner.counters.buffer_stops_per_level, depth, 1);
        let buffered = buffer_tables(buffer, key, seq, &version.order, stopped)
            .map(move |m| open(m, depth, true));
        Some(buffered.chain(std::iter::once(level)))
            .into_iter()
            .flatten()
    })
}

/// A table that may hold the key, and the compaction buffer to ask first
/// (a leveled level's own run with LSbM's buffer; empty otherwise).
struct Candidate<'a> {
    meta: &'a Arc<TableMeta>,
    level: usize,
    buffer: &'a [BufferRun],
}

/// The tables that may hold `key` at sequence `seq`, newest first: per run
/// the one whose key range holds it, unless the run's keys there are
/// superseded by a journaled merge's interim run or the table holds only
/// newer writes.
fn candidate_tables<'a>(
    version: &'a Version,
    key: &'a [u8],
    seq: u64,
) -> impl Iterator<Item = Candidate<'a>> + 'a {
    version
        .levels
        .iter()
        .enumerate()
        .flat_map(move |(depth, level)| {
            level.runs.iter().enumerate().filter_map(move |(r, run)| {
                let meta = &run.tables[run.find(key, &version.order)?];
                let superseded = version.superseded_in(depth, run.id, meta, key);
                let buffer: &[BufferRun] = if r == 0 { &level.buffer } else { &[] };
                (!superseded && meta.min_seq <= seq).then_some(Candidate {
                    meta,
                    level: depth,
                    buffer,
                })
            })
        })
}

/// The buffer tables to ask for `key`, newest run first, up to a removed
/// entry covering it (see `version::buffer`), where `stopped` is called.
fn buffer_tables<'a>(
    buffer: &'a [BufferRun],
    key: &'a [u8],
    seq: u64,
    order: &'a KeyOrder,
    mut stopped: impl FnMut() + 'a,
) -> impl Iterator<Item = &'a Arc<TableMeta>> + 'a {
    lsbm_buffer::probe(buffer, key, order)
        .map_while(move |probe| match probe {
            BufferProbe::Table(meta) => Some(meta),
            BufferProbe::Stop => {
                stopped();
                None
            }
        })
        .filter(move |meta| meta.min_seq <= seq)
}

/// Whether a range tombstone of `table` visible at `seq` covers `key`. An
/// LSbM buffer copy of the key may then be a version the tombstone deleted
/// when the buffer's table was merged into this one, so the buffer is
/// passed over and the table, which holds the merge's result, answers.
fn covers(table: &Table, key: &[u8], seq: u64) -> bool {
    table
        .range_deletions()
        .find(key)
        .is_some_and(|f| f.visible_seq(seq).is_some())
}
