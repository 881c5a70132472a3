//! A writable file whose appends are copies into a shared memory map.
//!
//! An acknowledged log write must survive a process crash, so the buffered
//! writer makes one `write(2)` per write group; with one writer that
//! syscall is most of the cost of a put. Bytes copied into a shared file
//! mapping belong to the page cache as soon as the copy ends, which gives
//! the same guarantee without a syscall (LevelDB's original
//! `PosixMmapFile` did the same for its logs).
//!
//! The file grows by `fallocate`d chunks, so a page fault does not have to
//! find data blocks: a full disk shows up as an error from `fallocate`.
//! (A file system may still need metadata blocks when a fault first
//! writes an allocated page; if even those are gone the kernel raises
//! `SIGBUS`. `log_mmap=false` avoids mapped writes entirely.)
//! Closing truncates the file to the bytes appended; after a crash the
//! unused rest of the last chunk reads as zeros, which the log reader drops
//! as a torn tail.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use memmap2::{MmapMut, MmapOptions};
use rustix::fs::{fallocate, FallocateFlags};

use super::fs::{FileSyncer, WritableFile};
use super::posix::DataSyncer;
use crate::error::{Error, Result};

/// Bytes mapped (and allocated) at a time.
pub const CHUNK: u64 = 1 << 20;

pub struct MappedWritable {
    /// Shared with the [`DataSyncer`]s handed out.
    file: Arc<File>,
    path: PathBuf,
    /// The chunk being filled; `None` before the first append.
    map: Option<MmapMut>,
    /// File offset of the chunk's first byte.
    map_start: u64,
    len: u64,
}

impl MappedWritable {
    /// Creates (or truncates) the file at `path` for appending.
    pub fn create(path: &Path) -> Result<MappedWritable> {
        // Mapping for writing needs read access too.
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
            .map_err(|e| Error::io(e, path.display().to_string()))?;
        Ok(MappedWritable {
            file: Arc::new(file),
            path: path.to_path_buf(),
            map: None,
            map_start: 0,
            len: 0,
        })
    }

    fn err(&self, e: impl Into<std::io::Error>) -> Error {
        Error::io(e.into(), self.path.display().to_string())
    }

    /// Maps the chunk that starts at `self.len` (a chunk boundary).
    fn map_next_chunk(&mut self) -> Result<()> {
        // Unmapping keeps the written pages in the page cache.
        self.map = None;
        let start = self.len;
        match fallocate(&self.file, FallocateFlags::empty(), start, CHUNK) {
            Ok(()) => {}
            // Without fallocate the chunk is sparse; faults then allocate.
            Err(rustix::io::Errno::OPNOTSUPP) => {
                self.file.set_len(start + CHUNK).map_err(|e| self.err(e))?
            }
            Err(e) => return Err(self.err(e)),
        }
        // SAFETY: the mapping covers bytes [start, start + CHUNK) that were
        // just allocated in a file this process created and holds open. The
        // store directory's LOCK keeps other ThicketDB processes out, and
        // within this process only this struct writes or resizes the file
        // while it is mapped (readers, the sequential one at recovery and
        // the random-access one on a live log, only read with their own
        // descriptors), so the mapped bytes are not changed or truncated
        // behind the `&mut [u8]` this hands out.
        let map = unsafe {
            MmapOptions::new()
                .offset(start)
                .len(CHUNK as usize)
                .map_mut(&self.file)
        }
        .map_err(|e| self.err(e))?;
        self.map_start = start;
        self.map = Some(map);
        Ok(())
    }
}

impl WritableFile for MappedWritable {
    fn append(&mut self, mut data: &[u8]) -> Result<()> {
        while !data.is_empty() {
            let at = (self.len - self.map_start) as usize;
            let room = self.map.as_ref().map_or(0, |m| m.len() - at);
            if room == 0 {
                self.map_next_chunk()?;
                continue;
            }
            let n = room.min(data.len());
            let map = self.map.as_mut().expect("a chunk is mapped");
            map[at..at + n].copy_from_slice(&data[..n]);
            self.len += n as u64;
            data = &data[n..];
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        // The bytes are already in the page cache.
        Ok(())
    }

    fn sync(&mut self) -> Result<()> {
        if let Some(map) = &self.map {
            map.flush().map_err(|e| self.err(e))?;
        }
        // Also writes back earlier chunks and the allocation metadata.
        self.file.sync_data().map_err(|e| self.err(e))
    }

    fn len(&self) -> u64 {
        self.len
    }

    /// `fdatasync` alone: on Linux it writes back the pages dirtied through
    /// the map as well (`msync(MS_SYNC)` is the same write-back, limited to
    /// the mapped range), and the copies are in those pages once `append`
    /// returns.
    fn syncer(&self) -> Option<Arc<dyn FileSyncer>> {
        Some(Arc::new(DataSyncer {
            file: Arc::clone(&self.file),
            path: self.path.clone(),
        }))
    }
}

impl Drop for MappedWritable {
    fn drop(&mut self) {
        self.map = None;
        // Failing leaves a zero tail, which readers drop like a crash's.
        let _ = self.file.set_len(self.len);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn create(path: &Path) -> MappedWritable {
        MappedWritable::create(path).unwrap()
    }

    #[test]
    fn appends_across_chunks_and_truncates_on_drop() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        let mut w = create(&path);
        let data: Vec<u8> = (0..CHUNK as usize * 2 + 1234)
            .map(|i| (i % 251) as u8)
            .collect();
        for piece in data.chunks(70_001) {
            w.append(piece).unwrap();
        }
        w.sync().unwrap();
        assert_eq!(w.len(), data.len() as u64);
        drop(w);
        assert_eq!(std::fs::read(&path).unwrap(), data);
    }

    #[test]
    fn appended_bytes_are_visible_before_close() {
        // What a process crash leaves: the appended bytes, then zeros to
        // the end of the chunk.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        let mut w = create(&path);
        w.append(b"acknowledged").unwrap();
        w.flush().unwrap();
        let on_disk = std::fs::read(&path).unwrap();
        assert_eq!(on_disk.len() as u64, CHUNK);
        assert_eq!(&on_disk[..12], b"acknowledged");
        assert!(on_disk[12..].iter().all(|&b| b == 0));
    }

    #[test]
    fn empty_file_stays_empty() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        let mut w = create(&path);
        w.sync().unwrap();
        drop(w);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 0);
    }
}
