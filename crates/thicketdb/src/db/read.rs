//! Point lookups: memtables, then each level's runs newest first; inside a
//! run one table is a candidate (binary search on key ranges), and its Bloom
//! filter, index and block (through the block cache) decide. A level with
//! an LSbM compaction buffer asks its buffer runs first.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::DbInner;
use super::ReadOptions;
use crate::error::{Error, Result};
use crate::format::internal_key::{
    append_internal_key, pack_trailer, ParsedKey, ValueKind, TRAILER_LEN,
};
use crate::memtable::Lookup;
use crate::stats::Counters;
use crate::table::Table;
use crate::version::buffer::{self, BufferProbe, BufferRun};
use crate::version::files::segment_path;
use crate::version::TableMeta;

/// Longest lookup key (user key plus trailer) built on the stack.
const STACK_LOOKUP_KEY: usize = 128;

pub(crate) fn get(inner: &Arc<DbInner>, key: &[u8], opts: &ReadOptions) -> Result<Option<Vec<u8>>> {
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
            Some(Lookup::Value(v)) => return Ok(Some(v)),
            Some(Lookup::Deleted) => return Ok(None),
            None => {}
        }
    }
    for (depth, level) in sv.version.levels.iter().enumerate() {
        for (r, run) in level.runs.iter().enumerate() {
            let Some(i) = run.find(key) else { continue };
            let meta = &run.tables[i];
            if sv.version.superseded_in(depth, run.id, meta, key) {
                continue;
            }
            if meta.min_seq > seq {
                continue;
            }
            let table = inner.table_cache.table(meta)?;
            // LSbM (Algorithm 3): the buffer is asked only when the level's
            // own index and filter say the key may be in the level.
            if r == 0 && !level.buffer.is_empty() && table.may_contain(key) {
                if let Some(found) = buffer_get(inner, &level.buffer, key, lookup, seq, opts)? {
                    Counters::add(&inner.counters.buffer_hits, 1);
                    return Ok(found);
                }
            }
            if let Some(found) = table_get(inner, meta, &table, lookup, opts)? {
                return Ok(found);
            }
        }
    }
    Ok(None)
}

/// The key's newest visible version in a level's compaction buffer, if
/// the buffer may answer: runs newest first, stopping at a removed entry
/// covering the key (see `version::buffer`).
fn buffer_get(
    inner: &DbInner,
    buffer: &[BufferRun],
    key: &[u8],
    lookup: &[u8],
    seq: u64,
    opts: &ReadOptions,
) -> Result<Option<Option<Vec<u8>>>> {
    for probe in buffer::probe(buffer, key) {
        let BufferProbe::Table(meta) = probe else {
            return Ok(None);
        };
        if meta.min_seq > seq {
            continue;
        }
        let table = inner.table_cache.table(meta)?;
        if let Some(found) = table_get(inner, meta, &table, lookup, opts)? {
            return Ok(Some(found));
        }
    }
    Ok(None)
}

/// The entry of `lookup`'s user key in one table: `Some(Some(value))`,
/// `Some(None)` for a deletion, `None` when the table does not hold it.
fn table_get(
    inner: &DbInner,
    meta: &TableMeta,
    table: &Table,
    lookup: &[u8],
    opts: &ReadOptions,
) -> Result<Option<Option<Vec<u8>>>> {
    let found = table.get_with(lookup, opts.fill_cache, |found_key, value| {
        ParsedKey::parse(found_key).map(|p| match p.kind {
            ValueKind::Value => Some(value.to_vec()),
            ValueKind::Deletion => None,
        })
    })?;
    match found {
        Some(Some(result)) => Ok(Some(result)),
        Some(None) => Err(Error::corruption(
            segment_path(&inner.dir, meta.segment),
            meta.offset,
            format!("malformed internal key in table {}", meta.id),
        )),
        None => Ok(None),
    }
}
