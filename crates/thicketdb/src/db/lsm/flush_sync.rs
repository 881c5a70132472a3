//! The log syncs a flush needs, run by the flush thread with the log
//! released.
//!
//! Some flushes need the flushed memtable's log durable before their edit:
//! a TRIAD-LOG log table keeps its values in that log, TRIAD-MEM's
//! re-logged record (synced in the active log) must not survive a power
//! loss that takes the older log's tail, and a flush of one keyspace must
//! not make half of a cross-keyspace batch durable. The memtable switch
//! used to sync the old log (and the directory) itself, holding the write
//! queue: on ws2 (4 MiB memtables) 359 switches each stopped every writer
//! for a 4 MiB `fdatasync` (docs/reproduction.md, "TRIAD, session 24").
//! Now every switch leaves its log unsynced (`LogState::switch_unsynced`,
//! as LevelDB's) and the flush syncs them here before it writes: each log
//! is flushed to the file under `log`, and its `fdatasync` runs after the
//! lock is released, while writers append to the active log. What survives
//! a power loss stays a prefix of the writes: earlier logs are synced
//! before the active one (`relog`), and a sync write still syncs every
//! unsynced log first (`LogState::sync`).

use std::sync::Arc;

use super::background_state::set_background_error;
use super::DbInner;
use crate::error::Result;
use crate::io::FileSyncer;
use crate::stats::Counters;

/// Whether a flush needs its memtable's log durable first (see the module's
/// comment).
pub(crate) fn flush_needs_synced_log(inner: &DbInner) -> bool {
    let trees = inner.trees();
    inner.options.triad_log
        || trees.len() > 1
        || trees
            .iter()
            .any(|t| t.options.triad_mem || t.options.triad_flush_threshold > 0.0)
}

/// Makes durable every log a switch left unsynced and the directory entries
/// of the logs, with the `fdatasync`s run outside `log`. With
/// `and_current`, the active log too, last (its syncer taken under the same
/// lock as the others', so it covers everything appended before).
/// Takes `log`.
pub(crate) fn sync_logs_released(inner: &DbInner, and_current: bool) -> Result<()> {
    let synced = sync_logs(inner, and_current);
    if let Err(e) = &synced {
        set_background_error(inner, e.clone());
    }
    synced
}

fn sync_logs(inner: &DbInner, and_current: bool) -> Result<()> {
    let c = &inner.counters;
    let (number, dir, earlier, current) = {
        let mut log = inner.log.lock();
        let mut earlier: Vec<(u64, Arc<dyn FileSyncer>)> = Vec::new();
        let mut synced_here = Vec::new();
        for (n, writer) in &mut log.unsynced {
            writer.flush()?;
            match writer.syncer()? {
                Some(syncer) => earlier.push((*n, syncer)),
                None => {
                    writer.sync()?;
                    Counters::add(&c.fsyncs_log, 1);
                    synced_here.push(*n);
                }
            }
        }
        log.unsynced.retain(|(n, _)| !synced_here.contains(n));
        let current = match and_current {
            true => {
                log.writer.flush()?;
                match log.writer.syncer()? {
                    Some(syncer) => Some(syncer),
                    None if earlier.is_empty() && !log.dir_unsynced => {
                        log.writer.sync()?;
                        Counters::add(&c.fsyncs_log, 1);
                        None
                    }
                    // Without a syncer the active log is synced under the
                    // lock, after the others.
                    None => {
                        let syncs = log.sync(inner.fs.as_ref(), &inner.dir)?;
                        Counters::add(&c.fsyncs_log, syncs);
                        return Ok(());
                    }
                }
            }
            false => None,
        };
        (log.number, log.dir_unsynced, earlier, current)
    };
    if dir {
        inner.fs.sync_dir(&inner.dir)?;
        Counters::add(&c.fsyncs_log, 1);
    }
    for (_, syncer) in &earlier {
        syncer.sync_data()?;
        Counters::add(&c.fsyncs_log, 1);
    }
    if let Some(syncer) = current {
        syncer.sync_data()?;
        Counters::add(&c.fsyncs_log, 1);
    }
    if dir || !earlier.is_empty() {
        let mut log = inner.log.lock();
        // Nothing appends to a switched-out log: synced, it needs no more.
        log.unsynced
            .retain(|(n, _)| earlier.iter().all(|(e, _)| e != n));
        // The directory sync covered the active log's entry unless a
        // switch made another since.
        if dir && log.number == number {
            log.dir_unsynced = false;
        }
    }
    Ok(())
}
