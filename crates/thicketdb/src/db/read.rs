//! Point lookups: memtables, then each level's runs newest first; inside a
//! run one table is a candidate (binary search on key ranges), and its Bloom
//! filter, index and block (through the block cache) decide.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::snapshot::Snapshot;
use super::DbInner;
use crate::error::{Error, Result};
use crate::format::internal_key::{InternalKey, ParsedKey, ValueKind};
use crate::memtable::Lookup;
use crate::version::files::segment_path;

pub(crate) fn get(
    inner: &Arc<DbInner>,
    key: &[u8],
    snapshot: Option<&Snapshot>,
) -> Result<Option<Vec<u8>>> {
    inner.check_open()?;
    // Read the sequence before the super version: every write at or below
    // it is then in one of the memtables or tables we look at.
    let seq = match snapshot {
        Some(s) => s.sequence(),
        None => inner.last_sequence.load(Ordering::Acquire),
    };
    let sv = inner.super_version();
    let lookup = InternalKey::new(key, seq, ValueKind::SEEK);
    for mem in std::iter::once(&sv.mem).chain(sv.imms.iter()) {
        match mem.get(lookup.encoded()) {
            Some(Lookup::Value(v)) => return Ok(Some(v)),
            Some(Lookup::Deleted) => return Ok(None),
            None => {}
        }
    }
    for level in &sv.version.levels {
        for run in &level.runs {
            let Some(i) = run.find(key) else { continue };
            let meta = &run.tables[i];
            if meta.min_seq > seq {
                continue;
            }
            let table = inner.table_cache.table(meta)?;
            let found = table.get_with(lookup.encoded(), |found_key, value| {
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
