//! TRIAD's FLUSH_TH: a full memtable whose distinct data is small is not
//! flushed. Its newest versions go to a fresh log as one re-logged record
//! (synced), a new memtable holding just them takes the old one's place,
//! and the old log, unpinned with the old memtable, is deleted.
//!
//! The paper triggers this when the commit log is full while the memtable
//! is not (its memtable updates in place). This memtable keeps every
//! version, so log and memtable fill together: the memtable-full trigger
//! is the log-size trigger here.
//!
//! Crash safety: the old log stays pinned (and listed by the MANIFEST)
//! until the new log is synced and installed. Recovery that still finds
//! the old log replays it and skips the record (whose source it is);
//! otherwise the record restores the newest version of every key, which is
//! the state after every write acknowledged before the rewrite.

use std::sync::Arc;

use super::write::{create_log, insert_relogged, set_background_error};
use super::{DbInner, SuperVersion};
use crate::error::{Error, Result};
use crate::log::{encode_relogged, LogWriter};
use crate::memtable::newest::newest_entries;
use crate::stats::Counters;
use crate::version::files::log_path;

/// Rewrites the log of the default keyspace's full memtable (`sv`; the
/// caller checked no other keyspace exists) when its newest versions
/// are below `triad_flush_threshold`; returns whether it did (then the
/// memtable has room again).
/// REQUIRES: `inner.write` held by the queue's front (no write group is
/// mid-commit). Takes `log`, then `versions`, then `super_version`.
pub(crate) fn rewrite_small_log(inner: &Arc<DbInner>, sv: &SuperVersion) -> Result<bool> {
    let tree = &inner.default;
    let opts = &tree.options;
    let limit = (opts.triad_flush_threshold * opts.write_buffer_size as f64) as u64;
    if limit == 0 {
        return Ok(false);
    }
    // Under `log` no re-logged record of a flush can land in the memtable
    // after it was read here.
    let mut log = inner.log.lock();
    let visible_to_all = inner.snapshots.oldest(&inner.last_sequence);
    let Some(entries) = newest_entries(&sv.mem, limit, visible_to_all) else {
        return Ok(false);
    };
    let number = inner.versions.lock().new_file_number();
    let record = encode_relogged(sv.mem.log_number(), &entries);
    let written =
        create_log(inner.fs.as_ref(), opts, &log_path(&inner.dir, number)).and_then(|f| {
            inner.fs.sync_dir(&inner.dir)?;
            let mut writer = LogWriter::new(f);
            let offset = writer.add_record(&record)?;
            writer.flush()?;
            writer.sync()?;
            Ok((writer, offset))
        });
    let (writer, offset) = match written {
        Ok(w) => w,
        Err(e) => {
            set_background_error(inner, e.clone());
            return Err(e);
        }
    };
    let c = &inner.counters;
    Counters::add(&c.fsyncs_log, 2);
    Counters::add(&c.log_bytes_written, record.len() as u64 + 7);
    Counters::add(&c.log_rewrites, 1);
    let mem = tree.memtable_on_log(&inner.backings, number);
    insert_relogged(&mem, &record, offset).map_err(|why| {
        Error::invariant(format!(
            "a record this process encoded failed to decode: {why}"
        ))
    })?;
    log.writer = writer;
    log.number = number;
    let mut current = tree.super_version.write();
    let next = SuperVersion {
        mem: Arc::new(mem),
        imms: current.imms.clone(),
        version: current.version.clone(),
        pending_compaction_bytes: current.pending_compaction_bytes,
    };
    *current = Arc::new(next);
    Ok(true)
}
