//! The first phase of a chunked store's recovery: what the last run left
//! (a clean close's `LOGS_CLOSED`, the durable sequence, the incarnation
//! tables, an asynchronous run's `CHECKPOINT`) and how this open recovers
//! its writes (`Recovery`).

use std::path::Path;
use std::sync::Arc;

use crate::db::chunked::checkpoint_mark::CheckpointMark;
use crate::db::chunked::closed::ClosedLogs;
use crate::db::chunked::incarnations::Incarnations;
use crate::db::chunked::manifest::ChunkList;
use crate::error::Result;
use crate::io::FileSystem;
use crate::options::Options;

/// What the last run left and how this open recovers it.
pub(super) struct LastRun {
    pub(super) recovery: Recovery,
    /// The logs a clean close recorded (`LOGS_CLOSED`).
    pub(super) closed: Option<ClosedLogs>,
    /// Every write up to it is durable.
    pub(super) durable: Option<u64>,
    /// The incarnation table this run keeps.
    pub(super) kept: Incarnations,
    /// The table every log read leaves ignored records out by.
    pub(super) reading: Arc<Incarnations>,
}

impl LastRun {
    /// Reads what the last run left in `dir` beside its chunk list `list`
    /// (`LOGS_CLOSED`, `RECOVERY`, `CHECKPOINT`) and decides how this open
    /// recovers it. Also returns the incarnation table stored (`None`:
    /// none yet), which a read-write open replaces when it keeps another.
    pub(super) fn read(
        fs: &dyn FileSystem,
        dir: &Path,
        list: &ChunkList,
        options: &Options,
    ) -> Result<(LastRun, Option<Incarnations>)> {
        // A damaged `LOGS_CLOSED` only costs reading every log.
        let closed = ClosedLogs::read(fs, dir).ok().flatten();
        // A clean close synced every log: all it recorded is durable.
        let durable = match (list.durable_sequence, &closed) {
            (Some(d), Some(c)) => Some(d.max(c.last_sequence)),
            (d, c) => d.or(c.as_ref().map(|c| c.last_sequence)),
        };
        let stored_incarnations = Incarnations::read(fs, dir)?;
        // The stored bits win: the sequence numbers on disk are laid out so.
        let incarnations = stored_incarnations
            .clone()
            .unwrap_or_else(|| Incarnations::new(options.incarnation_bits));
        let recovery = Recovery::of(
            closed.is_some(),
            CheckpointMark::read(fs, dir)?,
            &incarnations,
        );
        // The table this run keeps (the next incarnation's after a recovery
        // from a checkpoint), and the one every log read leaves ignored
        // records out by (past the checkpoint, also when no incarnation is
        // left: those logs are rewritten without them).
        let kept = match &recovery {
            Recovery::Lazy { next } => next.clone(),
            _ => incarnations.clone(),
        };
        let last = LastRun {
            reading: Arc::new(recovery.ignoring(&incarnations)),
            recovery,
            closed,
            durable,
            kept,
        };
        Ok((last, stored_incarnations))
    }
}

/// The table by which an open now would leave records out of the logs
/// (`check` applies it too).
pub(in crate::db::chunked) fn ignored_by_recovery(
    dir: &Path,
    fs: &dyn FileSystem,
) -> Result<Incarnations> {
    let closed = ClosedLogs::read(fs, dir).ok().flatten();
    let options = Options::default();
    let incarnations =
        Incarnations::read(fs, dir)?.unwrap_or_else(|| Incarnations::new(options.incarnation_bits));
    let mark = CheckpointMark::read(fs, dir)?;
    Ok(Recovery::of(closed.is_some(), mark, &incarnations).ignoring(&incarnations))
}

/// How an open recovers the last run's writes.
pub(super) enum Recovery {
    /// Read every log not closed cleanly (the synchronous mode's crash, or
    /// no crash): keep the writes up to the first one missing past the
    /// durable sequence (`durable_prefix.rs`).
    Logs,
    /// An asynchronous-mode crash: the next incarnation, whose table
    /// ignores the last one's writes past its checkpoint; no log is read
    /// (each is on first need).
    Lazy { next: Incarnations },
    /// An asynchronous-mode crash with no incarnation left: read every
    /// log and rewrite those holding writes past the checkpoint without
    /// them; the incarnation goes on.
    Cut { checkpointed: u64 },
}

impl Recovery {
    /// The recovery after a run that closed cleanly (`clean`) or left
    /// `mark` (a run in the asynchronous mode), with `incarnations`.
    fn of(clean: bool, mark: Option<CheckpointMark>, incarnations: &Incarnations) -> Recovery {
        match mark {
            Some(mark) if !clean && mark.incarnation == incarnations.current() => {
                match incarnations.can_advance() {
                    true => Recovery::Lazy {
                        next: incarnations.advanced(mark.sequence),
                    },
                    false => Recovery::Cut {
                        checkpointed: mark.sequence,
                    },
                }
            }
            _ => Recovery::Logs,
        }
    }

    /// The table the logs are read by: the records it ignores are left
    /// out (past the checkpoint too, when no incarnation is left).
    fn ignoring(&self, incarnations: &Incarnations) -> Incarnations {
        match self {
            Recovery::Lazy { next } => next.clone(),
            Recovery::Cut { checkpointed } => incarnations.advanced(*checkpointed),
            Recovery::Logs => incarnations.clone(),
        }
    }
}
