//! The second phase of a chunked store's recovery: every keyspace's
//! chunks opened, each funk's table named (opened on first read) and its
//! chunk log read now (its
//! records' sequence numbers listed, a torn tail found) or, after a clean
//! close or a recovery from a checkpoint, on first need.

use std::path::Path;
use std::sync::Arc;

use super::filters;
use super::last_run::{LastRun, Recovery};
use crate::db::chunked::chunk::{Chunk, ChunkLog};
use crate::db::chunked::chunk_space::{space_options, ChunkSpace};
use crate::db::chunked::closed::ClosedLogs;
use crate::db::chunked::durable_prefix::SeqRange;
use crate::db::chunked::files::chunk_list_path;
use crate::db::chunked::funk_tables::FunkTables;
use crate::db::chunked::manifest::ChunkList;
use crate::db::chunked::ChunkSet;
use crate::error::Result;
use crate::io::FileSystem;
use crate::options::Options;

/// Every keyspace's chunks as opened, and what their logs hold.
pub(super) struct OpenedLogs {
    pub(super) spaces: Vec<Arc<ChunkSpace>>,
    /// Per keyspace, per chunk: the sequence numbers of each record its
    /// log holds (none read for a log a clean close recorded).
    pub(super) log_ranges: Vec<Vec<Vec<SeqRange>>>,
    /// The last sequence number a clean close recorded for such a log.
    pub(super) closed_ends: Vec<Vec<u64>>,
    /// (keyspace, chunk) of the logs to rewrite: torn, or holding writes
    /// past the cut.
    pub(super) torn: Vec<(usize, usize)>,
}

/// Opens every keyspace's chunks: each funk's table named (opened on first
/// read, `funk_tables.rs`), and its log read now
/// or, after a clean close or a recovery from a checkpoint, on first need.
pub(super) fn open_keyspaces(
    dir: &Path,
    options: &Options,
    fs: &Arc<dyn FileSystem>,
    list: &ChunkList,
    tables: &Arc<FunkTables>,
    last: &LastRun,
) -> Result<OpenedLogs> {
    let LastRun {
        recovery,
        closed,
        reading,
        ..
    } = last;
    let list_path = chunk_list_path(dir);
    let mut log_ranges: Vec<Vec<Vec<SeqRange>>> = Vec::with_capacity(list.keyspaces.len());
    let mut closed_ends: Vec<Vec<u64>> = Vec::with_capacity(list.keyspaces.len());
    let mut torn = Vec::new();
    let mut spaces = Vec::with_capacity(list.keyspaces.len());
    for (s, record) in list.keyspaces.iter().enumerate() {
        let space_options = match record.id {
            0 => options.clone(),
            _ => {
                let what = format!("{} (keyspace {:?})", list_path.display(), record.name);
                space_options(options, &Options::decode(&what, &record.options)?)?
            }
        };
        let mut chunks = Vec::with_capacity(record.chunks.len());
        let mut ranges = Vec::with_capacity(record.chunks.len());
        let mut ends = Vec::with_capacity(record.chunks.len());
        for (i, chunk) in record.chunks.iter().enumerate() {
            let table = match chunk.table_number {
                0 => None,
                n => Some(tables.on_disk(n)?),
            };
            let number = chunk.log_number;
            let lazy = match (recovery, closed_length(fs.as_ref(), dir, closed, number)) {
                // Read on first need, cut at any damage then.
                (Recovery::Lazy { .. }, _) => {
                    let len =
                        fs.file_size(&crate::db::chunked::files::chunk_log_path(dir, number))?;
                    Some((len, 0, true))
                }
                (_, Some((len, last))) => Some((len, last, false)),
                (_, None) => None,
            };
            let (log, log_ranges, log_last, is_torn) = match lazy {
                Some((len, last, may_be_torn)) => {
                    let log = ChunkLog::open_unread(
                        fs.clone(),
                        dir,
                        number,
                        filters(&space_options),
                        len,
                        reading.clone(),
                        may_be_torn,
                    )?;
                    (log, Vec::new(), last, false)
                }
                None => {
                    let (log, ranges, torn) = ChunkLog::open(
                        fs.as_ref(),
                        dir,
                        number,
                        filters(&space_options),
                        options.wal_recovery_mode,
                        reading,
                    )?;
                    (log, ranges, 0, torn)
                }
            };
            if is_torn {
                torn.push((s, i));
            }
            ranges.push(log_ranges);
            ends.push(log_last);
            chunks.push(Arc::new(Chunk::new(
                chunk.start.clone(),
                table,
                log,
                tables.clone(),
            )));
        }
        log_ranges.push(ranges);
        closed_ends.push(ends);
        spaces.push(Arc::new(ChunkSpace::new(
            record.id,
            record.name.clone(),
            space_options,
            ChunkSet { chunks },
        )));
    }
    Ok(OpenedLogs {
        spaces,
        log_ranges,
        closed_ends,
        torn,
    })
}

/// The length a clean close recorded for chunk log `number` and the
/// store's last sequence number then, if the file still has that length
/// (else the log is read at open, as after a crash).
fn closed_length(
    fs: &dyn FileSystem,
    dir: &Path,
    closed: &Option<ClosedLogs>,
    number: u64,
) -> Option<(u64, u64)> {
    let closed = closed.as_ref()?;
    let len = *closed.lengths.get(&number)?;
    let size = fs
        .file_size(&crate::db::chunked::files::chunk_log_path(dir, number))
        .ok()?;
    (size == len).then_some((len, closed.last_sequence))
}
