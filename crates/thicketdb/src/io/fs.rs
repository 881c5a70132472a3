//! The interface between the engine and the file system.
//!
//! Everything the engine persists goes through these traits, so tests can
//! substitute a layer that loses unsynced data or fails writes on purpose.

use std::path::Path;
use std::sync::Arc;

use crate::error::{Error, Result};

/// A file opened for appending. Implementations may buffer; `flush` hands
/// buffered bytes to the operating system (enough to survive a process
/// crash), `sync` makes them durable (enough to survive power loss).
pub trait WritableFile: Send {
    /// Appends bytes (possibly buffered).
    fn append(&mut self, data: &[u8]) -> Result<()>;
    /// Hands buffered bytes to the operating system.
    fn flush(&mut self) -> Result<()>;
    /// Flushes, then makes all appended bytes durable (`fdatasync`).
    fn sync(&mut self) -> Result<()>;
    /// Bytes appended so far (including buffered ones).
    fn len(&self) -> u64;
    /// True when nothing was appended yet.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Bytes of memory the file's write buffer holds (its capacity).
    fn buffer_bytes(&self) -> usize {
        0
    }
    /// Frees the write buffer's memory if it holds no bytes (after a
    /// `flush` or `sync`): a file appended to now and then, one of many
    /// (YoDB's chunk logs), then holds none between its writes. The next
    /// append allocates it again.
    fn release_buffer(&mut self) {}
    /// A handle that makes this file's flushed bytes durable from another
    /// thread while the owner appends on (RocksDB's `SyncWAL`): a log sync
    /// then need not hold the log's writer, and so no write waits for it.
    /// `None` when the file cannot: its owner syncs it.
    fn syncer(&self) -> Option<Arc<dyn FileSyncer>> {
        None
    }
}

/// Syncs a file that another thread may be appending to.
pub trait FileSyncer: Send + Sync {
    /// Makes durable every byte handed to the operating system (flushed)
    /// before this call.
    fn sync_data(&self) -> Result<()>;
}

/// A file read at arbitrary offsets by many threads at once.
pub trait RandomAccessFile: Send + Sync {
    /// Reads exactly `buf.len()` bytes at `offset`; reading past the end is
    /// an error (a truncated file is reported, never padded).
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()>;
    /// Like [`read_exact_at`](Self::read_exact_at) when that needs no
    /// device read (the bytes are in the page cache): `Ok(false)`, with
    /// nothing usable in `buf`, when it would wait on the device. A file
    /// system that cannot tell answers `Ok(false)` (the default), so a
    /// caller deciding whether a read is worth handing to another thread
    /// (SifrDB's parallel search) takes every read for a device read.
    fn read_exact_at_resident(&self, offset: u64, buf: &mut [u8]) -> Result<bool> {
        let _ = (offset, buf);
        Ok(false)
    }
    /// Current length of the file.
    fn len(&self) -> Result<u64>;
    /// True when the file is empty.
    fn is_empty(&self) -> Result<bool> {
        Ok(self.len()? == 0)
    }
    /// Releases the disk space of `len` bytes at `offset` without changing
    /// the file length. Returns `Ok(false)` when the file system does not
    /// support hole punching, or when the file has another hard link (a
    /// checkpoint shares it and may still need those bytes): the space is
    /// then reclaimed only when the whole file is deleted.
    fn punch_hole(&self, offset: u64, len: u64) -> Result<bool>;
}

/// A file read from start to end (logs, the MANIFEST).
pub trait SequentialFile: Send {
    /// Reads up to `buf.len()` bytes; returns 0 at the end of the file.
    fn read(&mut self, buf: &mut [u8]) -> Result<usize>;
}

/// An exclusive lock on a store directory, released on drop.
pub trait FileLock: Send + Sync {}

/// A file system as seen by the engine.
pub trait FileSystem: Send + Sync + 'static {
    /// Creates (or truncates) a file for appending.
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>>;
    /// Creates a file for appending a log, written through a shared memory
    /// map where the file system supports it so that `flush` needs no
    /// syscall. The default is [`create`](Self::create).
    fn create_mapped(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        self.create(path)
    }
    /// Creates a file for appending that bypasses the page cache
    /// (`use_direct_io_for_flush_and_compaction`). A file system with no
    /// page cache (the in-memory fault file system) creates as `create`.
    fn create_direct(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        self.create(path)
    }
    /// Opens an existing file to append at its end (a chunk log after a
    /// reopen). File systems that never hold such files refuse.
    fn open_append(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        Err(Error::InvalidArgument(format!(
            "{}: this file system cannot append to an existing file",
            path.display()
        )))
    }
    /// Opens a file for reads at any offset from many threads.
    fn open_random(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>>;
    /// Like `open_random`, bypassing the page cache (`use_direct_reads`).
    /// A file system with no page cache (the in-memory fault file system)
    /// reads as `open_random` does.
    fn open_random_direct(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        self.open_random(path)
    }
    /// Like `open_random`, for a file read only at scattered offsets in
    /// reads that already cover what they need (TRIAD-LOG's log reads): the
    /// page cache reads no more than each read asks (`POSIX_FADV_RANDOM`),
    /// where a kernel read-ahead would bring in pages no read wants and,
    /// under a memory cap, evict pages others do. The default is
    /// [`open_random`](Self::open_random).
    fn open_random_scattered(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        self.open_random(path)
    }
    /// Opens an existing file for sequential reads.
    fn open_sequential(&self, path: &Path) -> Result<Box<dyn SequentialFile>>;
    /// Atomically replaces `to` with `from`.
    fn rename(&self, from: &Path, to: &Path) -> Result<()>;
    /// Deletes a file.
    fn remove(&self, path: &Path) -> Result<()>;
    /// Names (not paths) of the entries of a directory.
    fn list(&self, dir: &Path) -> Result<Vec<String>>;
    /// Whether a file exists.
    fn exists(&self, path: &Path) -> bool;
    /// Size of a file in bytes.
    fn file_size(&self, path: &Path) -> Result<u64>;
    /// Bytes the file occupies on the device: punched holes and unwritten
    /// ranges do not count. A file system that does not model allocation
    /// reports the file's size.
    fn allocated_size(&self, path: &Path) -> Result<u64> {
        self.file_size(path)
    }
    /// Makes `to` a second name of the existing file `from` (a hard link).
    /// The default refuses: callers fall back to copying.
    fn hard_link(&self, from: &Path, _to: &Path) -> Result<()> {
        Err(crate::error::Error::io(
            std::io::Error::from(std::io::ErrorKind::Unsupported),
            format!("hard link of {}", from.display()),
        ))
    }
    /// Creates a directory and its parents.
    fn create_dir_all(&self, dir: &Path) -> Result<()>;
    /// Makes the directory's entries (creations, renames) durable.
    fn sync_dir(&self, dir: &Path) -> Result<()>;
    /// Makes the content of an existing file durable (`fdatasync`), e.g.
    /// a log that recovery replayed and log tables will rely on.
    fn sync_file(&self, path: &Path) -> Result<()>;
    /// Cuts the file to its first `len` bytes (a torn log tail; the cut
    /// is durable with the file's next sync).
    fn set_len(&self, path: &Path, len: u64) -> Result<()>;
    /// Takes an exclusive lock; `Error::Locked` when someone else has it.
    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>>;
    /// Reads a whole (small) file.
    fn read_to_vec(&self, path: &Path) -> Result<Vec<u8>> {
        let mut file = self.open_sequential(path)?;
        let mut out = Vec::new();
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = file.read(&mut buf)?;
            if n == 0 {
                return Ok(out);
            }
            out.extend_from_slice(&buf[..n]);
        }
    }
    /// Writes a whole file durably: create, append, sync.
    fn write_durably(&self, path: &Path, data: &[u8]) -> Result<()> {
        let mut file = self.create(path)?;
        file.append(data)?;
        file.sync()
    }
}
