//! `Db::checkpoint` of an LSM store: a consistent, openable copy of the
//! store at one point of the write order (RocksDB's Checkpoint).
//!
//! The point: under the `log` mutex (no write group is mid-append) the log
//! writer is flushed to the OS and, under `versions` (no flush or
//! compaction commits), the current version is pinned and the MANIFEST and
//! every log it still needs are opened and measured. The checkpoint holds
//! exactly the writes up to the last sequence published then: every write
//! acknowledged before the call, none begun after it returned; what a
//! process crash at that instant would leave (unsynced writes included,
//! since they had reached the OS). Nothing is flushed first.
//!
//! Then, without locks: each segment of the pinned version is hard-linked
//! (copied where linking fails: another file system, or one without
//! links), the MANIFEST and logs are copied up to the measured lengths
//! (through descriptors opened under the locks, so a roll or deletion
//! meanwhile does not matter), `OPTIONS` is copied and `CURRENT` written.
//! The copy is built in `DIR.checkpoint-tmp`, synced, and renamed to `DIR`.
//!
//! A linked segment shares its inode with the source, where dead-table
//! collection punches holes: `PosixRandom::punch_hole` skips a file with a
//! second link, so the source keeps those bytes (their space returns when
//! the whole segment is deleted) and the checkpoint's tables stay intact.
//! The pinned version keeps the checkpoint's extents from being punched
//! before the links exist. The checkpoint, once opened, likewise never
//! punches a segment the source still links.

use std::path::Path;
use std::sync::atomic::Ordering;

use super::DbInner;
use crate::db::checkpoint_steps::CheckpointReport;
use crate::db::checkpoint_steps::{building_dir, copy_prefix, finish, link_or_copy, open_prefix};
use crate::error::Result;
use crate::version::files::{current_path, manifest_name, parse_file_name, segment_path, FileKind};

/// A consistent copy of the store in the new directory `dir`.
pub(crate) fn checkpoint(inner: &DbInner, dir: &Path) -> Result<CheckpointReport> {
    inner.check_open()?;
    inner.check_writable("checkpoint")?;
    let fs = inner.fs.as_ref();
    let building = building_dir(fs, dir)?;

    let (versions_held, last_sequence, manifest, files) = {
        let mut log = inner.log.lock();
        log.writer.flush()?;
        let versions = inner.versions.lock();
        let last_sequence = inner.last_sequence.load(Ordering::Acquire);
        let manifest = manifest_name(versions.manifest_number());
        let mut files = vec![open_prefix(fs, &inner.dir, manifest.clone())?];
        // Every keyspace's version, pinned until the segments are linked.
        let current: Vec<_> = versions.currents().map(|(_, v)| v.clone()).collect();
        // Log tables' logs (TRIAD-LOG) are their data.
        let referenced: std::collections::HashSet<u64> = current
            .iter()
            .flat_map(|v| v.referenced_logs())
            .map(|b| b.number)
            .collect();
        for name in fs.list(&inner.dir)? {
            let Some(FileKind::Log(n)) = parse_file_name(&name) else {
                continue;
            };
            // Older logs are complete; the current one counts only what
            // was written (a memory-mapped log's file is longer); a newer
            // one, made by a memtable switch waiting for this mutex,
            // holds nothing of this point.
            if (n < versions.log_number() && !referenced.contains(&n)) || n > log.number {
                continue;
            }
            let mut prefix = open_prefix(fs, &inner.dir, name)?;
            if n == log.number {
                prefix.len = log.writer.len();
            }
            files.push(prefix);
        }
        (current, last_sequence, manifest, files)
    };

    let mut report = CheckpointReport {
        last_sequence,
        logs: files.len() - 1,
        ..CheckpointReport::default()
    };
    let mut segments: Vec<u64> = versions_held
        .iter()
        .flat_map(|v| v.segment_table_counts().into_keys())
        .collect();
    segments.sort_unstable();
    segments.dedup();
    for segment in segments {
        let from = segment_path(&inner.dir, segment);
        match link_or_copy(fs, &from, &segment_path(&building, segment))? {
            true => report.segments_linked += 1,
            false => report.segments_copied += 1,
        }
    }
    // The version pinned the segments' extents until they were linked.
    drop(versions_held);
    for prefix in files {
        copy_prefix(fs, prefix.file, prefix.len, &building.join(&prefix.name))?;
    }
    fs.write_durably(&current_path(&building), format!("{manifest}\n").as_bytes())?;
    finish(fs, &inner.dir, &building, dir)?;
    Ok(report)
}
