//! The steps both layouts' checkpoints share (`Db::checkpoint`; the LSM's
//! in `lsm/checkpoint_copy.rs`, the chunked layout's in
//! `chunked/checkpoint_copy.rs`): the directory the copy is built in (`DIR.checkpoint-tmp`), hard-linking
//! or copying a file, copying a file's prefix measured at the point, and
//! the finish (`OPTIONS` copied, synced, renamed to `DIR`).

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::io::{FileSystem, SequentialFile};
use crate::version::files::options_path;

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
pub(crate) struct Prefix {
    pub file: Box<dyn SequentialFile>,
    pub len: u64,
    pub name: String,
}

/// Where the checkpoint `dir` is built (`DIR.checkpoint-tmp`), once
/// created; `dir` must not exist. A staging directory left by a checkpoint
/// cut short (a crash, a full disk) is emptied and used again, as RocksDB's
/// `CleanStagingDirectory` does: otherwise the same checkpoint could never
/// be taken again without a hand-made cleanup.
pub(crate) fn building_dir(fs: &dyn FileSystem, dir: &Path) -> Result<PathBuf> {
    let name = dir.file_name().ok_or_else(|| {
        Error::InvalidArgument(format!("bad checkpoint target {}", dir.display()))
    })?;
    let mut building = name.to_os_string();
    building.push(".checkpoint-tmp");
    let building = dir.with_file_name(building);
    if fs.exists(dir) {
        return Err(Error::InvalidArgument(format!(
            "checkpoint target {} already exists",
            dir.display()
        )));
    }
    if fs.exists(&building) {
        for name in fs.list(&building)? {
            fs.remove(&building.join(name))?;
        }
    }
    fs.create_dir_all(&building)?;
    Ok(building)
}

/// Copies the source's `OPTIONS` into `building`, syncs it and renames it
/// to `dir`.
pub(crate) fn finish(
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
pub(crate) fn link_or_copy(fs: &dyn FileSystem, from: &Path, to: &Path) -> Result<bool> {
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

pub(crate) fn open_prefix(fs: &dyn FileSystem, dir: &Path, name: String) -> Result<Prefix> {
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
pub(crate) fn copy_prefix(
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
