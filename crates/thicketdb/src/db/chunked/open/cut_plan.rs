//! The third phase of a chunked store's recovery: the batch log read and
//! the cut found, the first sequence number not kept (a durable prefix,
//! `durable_prefix.rs`, or an asynchronous run's checkpoint); logs holding
//! writes past it are to be rewritten.

use std::path::Path;

use super::last_run::{LastRun, Recovery};
use super::open_chunks::OpenedLogs;
use crate::db::chunked::batch_log;
use crate::db::chunked::durable_prefix::{self, SeqRange};
use crate::db::chunked::manifest::ChunkList;
use crate::error::{Error, Result};
use crate::io::FileSystem;
use crate::log::RecoveryMode;
use crate::options::Options;

/// Which writes of the last run an open keeps.
pub(super) struct CutPlan {
    /// The first sequence number not kept (`u64::MAX`: all kept).
    pub(super) cut: u64,
    /// The batch log's batches below the cut.
    pub(super) batches: Vec<batch_log::LoggedBatch>,
    /// Per keyspace, per chunk: the last sequence number it holds.
    pub(super) log_ends: Vec<Vec<u64>>,
    /// The store's last sequence number.
    pub(super) last_sequence: u64,
}

/// Reads the batch log and finds the cut: the writes kept are those below
/// it (up to the first one missing past the durable sequence, or the
/// checkpoint); logs holding writes past it join `logs.torn`.
pub(super) fn plan_cut(
    fs: &dyn FileSystem,
    dir: &Path,
    list: &ChunkList,
    options: &Options,
    last: &LastRun,
    logs: &mut OpenedLogs,
) -> Result<CutPlan> {
    let (recovery, durable, kept) = (&last.recovery, last.durable, &last.kept);
    let mut batches = batch_log::read(fs, dir, list.batch_log_number, options.wal_recovery_mode)?;
    if let Recovery::Lazy { .. } = recovery {
        // The checkpointed batches are whole in the chunk logs.
        batches.clear();
    }
    let batch_ranges = batches
        .iter()
        .map(|(first, record)| {
            let count = crate::db::batch::DecodedBatch::parse(record)
                .map_err(Error::invariant)?
                .count;
            Ok((*first, first + u64::from(count).saturating_sub(1)))
        })
        .collect::<Result<Vec<_>>>()?;
    let cut = match *recovery {
        // The logs' records past the checkpoint are left out already; the
        // batch log's are dropped here.
        Recovery::Cut { checkpointed } => checkpointed + 1,
        Recovery::Lazy { .. } => u64::MAX,
        // Salvaging a damaged store keeps every record it can read.
        Recovery::Logs => durable
            .filter(|_| options.wal_recovery_mode != RecoveryMode::SkipAnyCorruption)
            .and_then(|d| {
                let logged = logs.log_ranges.iter().flatten().flatten().copied();
                durable_prefix::first_gap(d, logged.chain(batch_ranges.iter().copied()))
            })
            .unwrap_or(u64::MAX),
    };
    batches.truncate(batch_ranges.iter().filter(|r| r.0 < cut).count());
    let kept_last = |ranges: &[SeqRange]| {
        ranges
            .iter()
            .filter(|r| r.0 < cut)
            .map(|r| r.1)
            .max()
            .unwrap_or(0)
    };
    // Below the durable sequence a chunk may hold a write in its funk
    // rather than its log; without one (a version-2 list), below the
    // list's last sequence.
    let floor = durable.unwrap_or(list.last_sequence);
    // Per keyspace, per chunk: the last sequence number it holds.
    let log_ends: Vec<Vec<u64>> = logs
        .log_ranges
        .iter()
        .zip(&logs.closed_ends)
        .map(|(ranges, ends)| {
            ranges
                .iter()
                .zip(ends)
                .map(|(r, &end)| kept_last(r).max(end).max(floor))
                .collect()
        })
        .collect();
    // Logs holding writes past the cut are rewritten without them.
    for (s, ranges) in logs.log_ranges.iter().enumerate() {
        for (i, r) in ranges.iter().enumerate() {
            if r.iter().any(|r| r.0 >= cut) && !logs.torn.contains(&(s, i)) {
                logs.torn.push((s, i));
            }
        }
    }
    let last_sequence = log_ends
        .iter()
        .flatten()
        .copied()
        .chain([kept_last(&batch_ranges), floor, kept.base()])
        .max()
        .unwrap_or(0);
    Ok(CutPlan {
        cut,
        batches,
        log_ends,
        last_sequence,
    })
}
