//! Writes a sorted stream of entries as tables of about `target_table_size`
//! into one new segment, synced once (BoLT's compaction file). A table is
//! only cut between user keys, so every version of a key lives in one table
//! and the tables of a run never overlap.

use std::path::Path;
use std::sync::Arc;

use crate::error::Result;
use crate::format::internal_key::user_key;
use crate::io::segment::SegmentWriter;
use crate::io::FileSystem;
use crate::iterator::InternalIterator;
use crate::table::{TableBuilder, TableOptions, TableSummary};
use crate::version::files::segment_path;
use crate::version::TableMeta;

/// Where and how to write.
pub struct OutputSpec<'a> {
    pub fs: &'a dyn FileSystem,
    pub dir: &'a Path,
    pub segment: u64,
    pub table_options: TableOptions,
    pub target_table_size: u64,
    /// Allocates a table number.
    pub new_table_id: &'a dyn Fn() -> u64,
}

/// The tables written and the bytes of the synced segment.
#[derive(Debug, Default)]
pub struct Output {
    pub tables: Vec<Arc<TableMeta>>,
    pub segment_bytes: u64,
}

/// Drains `source` from its current position, keeping the entries `keep`
/// accepts. Writes nothing (and leaves no file) when nothing is kept.
pub fn write_tables(
    spec: &OutputSpec<'_>,
    source: &mut dyn InternalIterator,
    keep: &mut dyn FnMut(&[u8]) -> bool,
) -> Result<Output> {
    let path = segment_path(spec.dir, spec.segment);
    let mut segment = SegmentWriter::create(spec.fs, &path)?;
    let result = fill(spec, &mut segment, source, keep);
    let tables = match result {
        Ok(t) if !t.is_empty() => t,
        other => {
            drop(segment);
            // The segment is not referenced by any version; removing it now
            // only saves the next open's sweep the work.
            let _ = spec.fs.remove(&path);
            return other.map(|_| Output::default());
        }
    };
    let segment_bytes = segment.finish()?;
    // The MANIFEST edit that follows must not name a file whose directory
    // entry could vanish on power loss.
    spec.fs.sync_dir(spec.dir)?;
    Ok(Output {
        tables,
        segment_bytes,
    })
}

fn fill(
    spec: &OutputSpec<'_>,
    segment: &mut SegmentWriter,
    source: &mut dyn InternalIterator,
    keep: &mut dyn FnMut(&[u8]) -> bool,
) -> Result<Vec<Arc<TableMeta>>> {
    let mut tables = Vec::new();
    let mut last_user_key = Vec::new();
    while source.valid() {
        let mut builder = TableBuilder::new(&spec.table_options, segment.file());
        while source.valid() {
            let key = source.key();
            if builder.entries() > 0
                && builder.estimated_size() >= spec.target_table_size
                && user_key(key) != last_user_key.as_slice()
            {
                break;
            }
            if keep(key) {
                builder.add(key, source.value())?;
                last_user_key.clear();
                last_user_key.extend_from_slice(user_key(key));
            }
            source.next();
        }
        source.status()?;
        if builder.entries() > 0 {
            let summary = builder.finish()?;
            tables.push(Arc::new(meta(spec.segment, (spec.new_table_id)(), summary)));
        }
    }
    source.status()?;
    Ok(tables)
}

fn meta(segment: u64, id: u64, s: TableSummary) -> TableMeta {
    TableMeta {
        id,
        segment,
        offset: s.offset,
        length: s.length,
        smallest: s.properties.smallest_key,
        largest: s.properties.largest_key,
        entries: s.properties.entries,
        min_seq: s.properties.min_seq,
        max_seq: s.properties.max_seq,
    }
}
