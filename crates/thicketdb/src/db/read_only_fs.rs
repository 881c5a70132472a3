//! A file system that reads and refuses every change: what a read-only
//! open (either layout) and `check_store` read through, so a write attempted
//! by mistake fails with `Error::ReadOnly` instead of reaching the disk.

use std::path::Path;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::io::{FileLock, FileSystem, RandomAccessFile, SequentialFile, WritableFile};

fn refused(what: &str, path: &Path) -> Error {
    Error::ReadOnly(format!("{what} {}", path.display()))
}

/// A file system that reads through `inner` and refuses every change.
pub(crate) struct ReadOnlyFs {
    inner: Arc<dyn FileSystem>,
}

impl ReadOnlyFs {
    pub(crate) fn wrap(inner: Arc<dyn FileSystem>) -> Arc<dyn FileSystem> {
        Arc::new(ReadOnlyFs { inner })
    }
}

impl FileSystem for ReadOnlyFs {
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        Err(refused("creating", path))
    }

    fn create_mapped(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        Err(refused("creating", path))
    }

    fn open_append(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        Err(refused("appending to", path))
    }

    fn open_random(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        Ok(Arc::new(ReadOnlyFile {
            inner: self.inner.open_random(path)?,
            path: path.to_path_buf(),
        }))
    }

    fn open_random_scattered(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        Ok(Arc::new(ReadOnlyFile {
            inner: self.inner.open_random_scattered(path)?,
            path: path.to_path_buf(),
        }))
    }

    fn open_random_direct(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        Ok(Arc::new(ReadOnlyFile {
            inner: self.inner.open_random_direct(path)?,
            path: path.to_path_buf(),
        }))
    }

    fn open_sequential(&self, path: &Path) -> Result<Box<dyn SequentialFile>> {
        self.inner.open_sequential(path)
    }

    fn rename(&self, from: &Path, _to: &Path) -> Result<()> {
        Err(refused("renaming", from))
    }

    fn remove(&self, path: &Path) -> Result<()> {
        Err(refused("removing", path))
    }

    fn list(&self, dir: &Path) -> Result<Vec<String>> {
        self.inner.list(dir)
    }

    fn exists(&self, path: &Path) -> bool {
        self.inner.exists(path)
    }

    fn file_size(&self, path: &Path) -> Result<u64> {
        self.inner.file_size(path)
    }

    fn allocated_size(&self, path: &Path) -> Result<u64> {
        self.inner.allocated_size(path)
    }

    fn hard_link(&self, from: &Path, _to: &Path) -> Result<()> {
        Err(refused("linking", from))
    }

    fn create_dir_all(&self, dir: &Path) -> Result<()> {
        Err(refused("creating", dir))
    }

    fn sync_dir(&self, dir: &Path) -> Result<()> {
        Err(refused("syncing", dir))
    }

    fn set_len(&self, path: &Path, _len: u64) -> Result<()> {
        Err(refused("truncating", path))
    }

    fn sync_file(&self, path: &Path) -> Result<()> {
        Err(refused("syncing", path))
    }

    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        Err(refused("locking", path))
    }
}

/// A readable file whose space is never released.
struct ReadOnlyFile {
    inner: Arc<dyn RandomAccessFile>,
    path: std::path::PathBuf,
}

impl RandomAccessFile for ReadOnlyFile {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        self.inner.read_exact_at(offset, buf)
    }

    fn read_exact_at_resident(&self, offset: u64, buf: &mut [u8]) -> Result<bool> {
        self.inner.read_exact_at_resident(offset, buf)
    }

    fn len(&self) -> Result<u64> {
        self.inner.len()
    }

    fn punch_hole(&self, _offset: u64, _len: u64) -> Result<bool> {
        Err(refused("punching a hole in", &self.path))
    }
}
