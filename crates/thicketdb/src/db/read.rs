//! Point lookups: memtables, then each level's runs newest first; inside a
//! run one table is a candidate (binary search on key ranges), and its Bloom
//! filter, index and block (through the block cache) decide.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::DbInner;
use super::ReadOptions;
use crate::error::{Error, Result};
use crate::format::internal_key::{
    append_internal_key, pack_trailer, ParsedKey, ValueKind, TRAILER_LEN,
};
use crate::memtable::Lookup;
use crate::version::files::segment_path;

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
        for run in &level.runs {
            let Some(i) = run.find(key) else { continue };
            let meta = &run.tables[i];
            if sv.version.superseded_in(depth, run.id, meta, key) {
                continue;
            }
            if meta.min_seq > seq {
                continue;
            }
            let table = inner.table_cache.table(meta)?;
            let found = table.get_with(lookup, opts.fill_cache, |found_key, value| {
                ParsedKey::parse(found_key).map(|p| match p.kind {
                    ValueKind::Value => Some(value.to_vec()),
                    ValueKind::Deletion => None,
                })
            })?;
            match found {
                Some(Some(result)) => return Ok(result),
                Some(None) => {
                    return Err(Error::corruption(
                        segment_path(&inner.dir, meta.segment),
                        meta.offset,
                        format!("malformed internal key in table {}", meta.id),
                    ))
                }
                None => {}
            }
        }
    }
    Ok(None)
}
