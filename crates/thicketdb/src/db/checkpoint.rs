//! `Db::checkpoint`: a consistent, openable copy of the store at one point
//! of the write order (RocksDB's Checkpoint).
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

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

use super::Db;
use crate::error::{Error, Result};
use crate::io::{FileSystem, SequentialFile};
use crate::version::files::{
    current_path, manifest_name, options_path, parse_file_name, segment_path, FileKind,
};

/// What a checkpoint holds and how it was made.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CheckpointReport {
    /// Sequence number of the newest write the checkpoint holds.
    pub last_sequence: u64,
    /// Segments hard-linked (sharing their space with the source); in the
    /// chunked layout, funk tables.
    pub segments_linked: usize,
    /// Segments (funk tables) copied because linking failed.
    pub segments_copied: usize,
    /// Logs copied (writes not yet flushed to tables; in the chunked
    /// layout, chunk logs).
    pub logs: usize,
}

/// A file to copy: an open descriptor and how many bytes of it belong to
/// the checkpoint.
struct Prefix {
    file: Box<dyn SequentialFile>,
    len: u64,
    name: String,
}

impl Db {
    /// Writes a consistent copy of the store into the new directory `dir`
    /// (which must not exist), hard-linking table segments where the file
    /// system allows and copying the rest. Writers are held off only while
    /// the point is taken, not while files are copied. The copy opens like
    /// any store (read-write or read-only).
    pub fn checkpoint(&self, dir: impl AsRef<Path>) -> Result<CheckpointReport> {
        let inner = match &self.engine {
            super::Engine::Lsm(h) => &h.inner,
            super::Engine::Chunked(c) => return c.0.checkpoint(dir.as_ref()),
        };
        inner.check_open()?;
        inner.check_writable("checkpoint")?;
        let dir = dir.as_ref();
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
}

/// Where the checkpoint `dir` is built (`DIR.checkpoint-tmp`), once
/// created; neither may exist.
pub(super) fn building_dir(fs: &dyn FileSystem, dir: &Path) -> Result<PathBuf> {
    let name = dir.file_name().ok_or_else(|| {
        Error::InvalidArgument(format!("bad checkpoint target {}", dir.display()))
    })?;
    let mut building = name.to_os_string();
    building.push(".checkpoint-tmp");
    let building = dir.with_file_name(building);
    for path in [dir, &building] {
        if fs.exists(path) {
            return Err(Error::InvalidArgument(format!(
                "checkpoint target {} already exists",
                path.display()
            )));
        }
    }
    fs.create_dir_all(&building)?;
    Ok(building)
}

/// Copies the source's `OPTIONS` into `building`, syncs it and renames it
/// to `dir`.
pub(super) fn finish(
    fs: &dyn FileSystem,
    source: &Path,
    building: &Path,
    dir: &Path,
) -> Result<()> {
    let options = options_path(source);
    copy_prefix(
        fs,
        fs.open_sequential(&options)?,
        fs.file_size(&options)?,
        &options_path(building),
    )?;
    fs.sync_dir(building)?;
    fs.rename(building, dir)?;
    fs.sync_dir(parent(dir))
}

/// Hard-links the immutable file `from` as `to`, or copies it where the
/// file system cannot link; returns whether it linked.
pub(super) fn link_or_copy(fs: &dyn FileSystem, from: &Path, to: &Path) -> Result<bool> {
    if fs.hard_link(from, to).is_ok() {
        return Ok(true);
    }
    copy_prefix(fs, fs.open_sequential(from)?, fs.file_size(from)?, to)?;
    Ok(false)
}

fn parent(dir: &Path) -> &Path {
    match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

fn open_prefix(fs: &dyn FileSystem, dir: &Path, name: String) -> Result<Prefix> {
    let path = dir.join(&name);
    Ok(Prefix {
        file: fs.open_sequential(&path)?,
        len: fs.file_size(&path)?,
        name,
    })
}

/// Copies up to `len` bytes of `from` into a new file `to`, durably. A
/// source shorter than `len` (a memory-mapped log trimmed to its records
/// when it was closed) is copied whole.
pub(super) fn copy_prefix(
    fs: &dyn FileSystem,
    mut from: Box<dyn SequentialFile>,
    len: u64,
    to: &Path,
) -> Result<()> {
    let mut out = fs.create(to)?;
    let mut buf = vec![0u8; 1 << 20];
    let mut left = len;
    while left > 0 {
        let want = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        let n = from.read(&mut buf[..want])?;
        if n == 0 {
            break;
        }
        out.append(&buf[..n])?;
        left -= n as u64;
    }
    out.sync()
}
