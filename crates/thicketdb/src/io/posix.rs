//! The real file system, through `std::fs` and `rustix`.

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustix::fs::{fadvise, fallocate, Advice, FallocateFlags};

use super::fs::{
    FileLock, FileSyncer, FileSystem, RandomAccessFile, SequentialFile, WritableFile,
};
use super::mapped::MappedWritable;
use crate::error::{Error, Result};

/// Bytes buffered by a writable file before they are handed to the OS (the
/// buffer is allocated by the first append and grows to it).
const WRITE_BUFFER: usize = 64 * 1024;

/// The operating system's file system.
#[derive(Debug, Default, Clone, Copy)]
pub struct PosixFs;

fn ctx(path: &Path) -> String {
    path.display().to_string()
}

struct PosixWritable {
    /// Shared with the [`DataSyncer`]s handed out.
    file: Arc<File>,
    path: PathBuf,
    buf: Vec<u8>,
    len: u64,
}

impl PosixWritable {
    fn write_out(&mut self) -> Result<()> {
        if !self.buf.is_empty() {
            (&*self.file)
                .write_all(&self.buf)
                .map_err(|e| Error::io(e, ctx(&self.path)))?;
            self.buf.clear();
        }
        Ok(())
    }
}

impl WritableFile for PosixWritable {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.len += data.len() as u64;
        if self.buf.len() + data.len() > WRITE_BUFFER {
            self.write_out()?;
            if data.len() >= WRITE_BUFFER {
                return (&*self.file)
                    .write_all(data)
                    .map_err(|e| Error::io(e, ctx(&self.path)));
            }
        }
        self.buf.extend_from_slice(data);
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        self.write_out()
    }

    fn sync(&mut self) -> Result<()> {
        self.write_out()?;
        self.file
            .sync_data()
            .map_err(|e| Error::io(e, ctx(&self.path)))
    }

    fn len(&self) -> u64 {
        self.len
    }

    fn buffer_bytes(&self) -> usize {
        self.buf.capacity()
    }

    fn release_buffer(&mut self) {
        if self.buf.is_empty() {
            self.buf = Vec::new();
        }
    }

    fn syncer(&self) -> Option<Arc<dyn FileSyncer>> {
        Some(Arc::new(DataSyncer {
            file: Arc::clone(&self.file),
            path: self.path.clone(),
        }))
    }
}

/// `fdatasync` on a file another thread writes: it covers every `write`
/// that returned before it.
pub(super) struct DataSyncer {
    pub(super) file: Arc<File>,
    pub(super) path: PathBuf,
}

impl FileSyncer for DataSyncer {
    fn sync_data(&self) -> Result<()> {
        self.file.sync_data().map_err(|e| Error::io(e, ctx(&self.path)))
    }
}

struct PosixRandom {
    file: File,
    path: PathBuf,
    /// Opened with `O_DIRECT` (`use_direct_reads`): reads are aligned.
    direct: bool,
}

impl RandomAccessFile for PosixRandom {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        if self.direct {
            return super::direct::read_exact_direct(&self.file, &self.path, offset, buf);
        }
        self.file.read_exact_at(buf, offset).map_err(|e| {
            if e.kind() == std::io::ErrorKind::UnexpectedEof {
                Error::corruption(
                    &self.path,
                    offset,
                    format!("file too short to read {} bytes", buf.len()),
                )
            } else {
                Error::io(e, ctx(&self.path))
            }
        })
    }

    /// One `preadv2` with `RWF_NOWAIT` per stretch: the kernel copies what
    /// the page cache holds and answers `EAGAIN` where it would have to
    /// wait for the device (and for every read of an `O_DIRECT` file).
    fn read_exact_at_resident(&self, offset: u64, buf: &mut [u8]) -> Result<bool> {
        use rustix::io::{preadv2, Errno, ReadWriteFlags};
        if self.direct {
            return Ok(false);
        }
        let mut done = 0;
        while done < buf.len() {
            let at = offset + done as u64;
            let mut slices = [std::io::IoSliceMut::new(&mut buf[done..])];
            match preadv2(&self.file, &mut slices, at, ReadWriteFlags::NOWAIT) {
                Ok(0) => {
                    return Err(Error::corruption(
                        &self.path,
                        offset,
                        format!("file too short to read {} bytes", buf.len()),
                    ))
                }
                Ok(n) => done += n,
                Err(Errno::INTR) => {}
                // Not resident, or a kernel or file system without
                // `RWF_NOWAIT` for reads: a read that may wait.
                Err(Errno::AGAIN | Errno::OPNOTSUPP | Errno::NOSYS | Errno::INVAL) => {
                    return Ok(false)
                }
                Err(e) => return Err(Error::io(e.into(), ctx(&self.path))),
            }
        }
        Ok(true)
    }

    fn len(&self) -> Result<u64> {
        Ok(self
            .file
            .metadata()
            .map_err(|e| Error::io(e, ctx(&self.path)))?
            .len())
    }

    fn punch_hole(&self, offset: u64, len: u64) -> Result<bool> {
        // A second link is a checkpoint sharing this inode: punching here
        // would punch its tables too. The checkpoint links only segments of
        // a version it pins, so a link made after this check never covers
        // the (already dead) extent being punched.
        let links = self
            .file
            .metadata()
            .map_err(|e| Error::io(e, ctx(&self.path)))?
            .nlink();
        if links > 1 {
            return Ok(false);
        }
        // Readers hold the file read-only; hole punching needs write access,
        // and is rare enough that a second descriptor per call is fine.
        let writable = OpenOptions::new()
            .write(true)
            .open(&self.path)
            .map_err(|e| Error::io(e, ctx(&self.path)))?;
        match fallocate(
            &writable,
            FallocateFlags::PUNCH_HOLE | FallocateFlags::KEEP_SIZE,
            offset,
            len,
        ) {
            Ok(()) => Ok(true),
            Err(rustix::io::Errno::OPNOTSUPP) | Err(rustix::io::Errno::NOSYS) => Ok(false),
            Err(e) => Err(Error::io(e.into(), ctx(&self.path))),
        }
    }
}

struct PosixSequential {
    file: File,
    path: PathBuf,
}

impl SequentialFile for PosixSequential {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize> {
        self.file
            .read(buf)
            .map_err(|e| Error::io(e, ctx(&self.path)))
    }
}

struct PosixLock {
    _file: File,
}

impl FileLock for PosixLock {}

impl FileSystem for PosixFs {
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
            .map_err(|e| Error::io(e, ctx(path)))?;
        Ok(Box::new(PosixWritable {
            file: Arc::new(file),
            path: path.to_path_buf(),
            buf: Vec::new(),
            len: 0,
        }))
    }

    fn create_direct(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        super::direct_write::create_direct(path)
    }

    fn open_append(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        let file = OpenOptions::new()
            .append(true)
            .open(path)
            .map_err(|e| Error::io(e, ctx(path)))?;
        let len = file.metadata().map_err(|e| Error::io(e, ctx(path)))?.len();
        Ok(Box::new(PosixWritable {
            file: Arc::new(file),
            path: path.to_path_buf(),
            buf: Vec::new(),
            len,
        }))
    }

    fn create_mapped(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        Ok(Box::new(MappedWritable::create(path)?))
    }

    fn open_random(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        let file = File::open(path).map_err(|e| Error::io(e, ctx(path)))?;
        Ok(Arc::new(PosixRandom {
            file,
            path: path.to_path_buf(),
            direct: false,
        }))
    }

    fn open_random_scattered(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        let file = File::open(path).map_err(|e| Error::io(e, ctx(path)))?;
        // Advice only: a kernel that refuses it reads ahead as before, and
        // every read stays correct either way.
        let _ = fadvise(&file, 0, None, Advice::Random);
        Ok(Arc::new(PosixRandom {
            file,
            path: path.to_path_buf(),
            direct: false,
        }))
    }

    fn open_random_direct(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        Ok(Arc::new(PosixRandom {
            file: super::direct::open_direct(path)?,
            path: path.to_path_buf(),
            direct: true,
        }))
    }

    fn open_sequential(&self, path: &Path) -> Result<Box<dyn SequentialFile>> {
        let file = File::open(path).map_err(|e| Error::io(e, ctx(path)))?;
        Ok(Box::new(PosixSequential {
            file,
            path: path.to_path_buf(),
        }))
    }

    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        fs::rename(from, to).map_err(|e| Error::io(e, ctx(from)))
    }

    fn remove(&self, path: &Path) -> Result<()> {
        fs::remove_file(path).map_err(|e| Error::io(e, ctx(path)))
    }

    fn list(&self, dir: &Path) -> Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in fs::read_dir(dir).map_err(|e| Error::io(e, ctx(dir)))? {
            let entry = entry.map_err(|e| Error::io(e, ctx(dir)))?;
            if let Some(name) = entry.file_name().to_str() {
                names.push(name.to_string());
            }
        }
        Ok(names)
    }

    fn exists(&self, path: &Path) -> bool {
        path.exists()
    }

    fn set_len(&self, path: &Path, len: u64) -> Result<()> {
        OpenOptions::new()
            .write(true)
            .open(path)
            .and_then(|f| f.set_len(len))
            .map_err(|e| Error::io(e, ctx(path)))
    }

    fn file_size(&self, path: &Path) -> Result<u64> {
        Ok(fs::metadata(path)
            .map_err(|e| Error::io(e, ctx(path)))?
            .len())
    }

    fn allocated_size(&self, path: &Path) -> Result<u64> {
        // st_blocks counts 512-byte units whatever the file system's block
        // size.
        Ok(fs::metadata(path)
            .map_err(|e| Error::io(e, ctx(path)))?
            .blocks()
            * 512)
    }

    fn hard_link(&self, from: &Path, to: &Path) -> Result<()> {
        fs::hard_link(from, to).map_err(|e| Error::io(e, ctx(from)))
    }

    fn create_dir_all(&self, dir: &Path) -> Result<()> {
        fs::create_dir_all(dir).map_err(|e| Error::io(e, ctx(dir)))
    }

    fn sync_file(&self, path: &Path) -> Result<()> {
        OpenOptions::new()
            .write(true)
            .open(path)
            .and_then(|f| f.sync_data())
            .map_err(|e| Error::io(e, ctx(path)))
    }

    fn sync_dir(&self, dir: &Path) -> Result<()> {
        File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| Error::io(e, ctx(dir)))
    }

    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|e| Error::io(e, ctx(path)))?;
        match file.try_lock() {
            Ok(()) => Ok(Box::new(PosixLock { _file: file })),
            Err(std::fs::TryLockError::WouldBlock) => Err(Error::Locked(ctx(path))),
            Err(std::fs::TryLockError::Error(e)) => Err(Error::io(e, ctx(path))),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Drops `path`'s clean pages from the page cache.
    pub(crate) fn evict_from_page_cache(path: &Path) {
        let file = File::open(path).unwrap();
        rustix::fs::fadvise(&file, 0, None, rustix::fs::Advice::DontNeed).unwrap();
    }

    #[test]
    fn resident_reads_succeed_only_from_the_page_cache() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let fs = PosixFs;
        let mut w = fs.create(&path).unwrap();
        w.append(&[7u8; 64 * 1024]).unwrap();
        w.sync().unwrap();
        let r = fs.open_random(&path).unwrap();
        let mut buf = [0u8; 4096];
        r.read_exact_at(8192, &mut buf).unwrap();
        buf = [0; 4096];
        assert!(r.read_exact_at_resident(8192, &mut buf).unwrap());
        assert_eq!(buf, [7u8; 4096]);
        // DONTNEED skips a page still in another core's LRU batch (seen
        // with tests running side by side); asked again, it drops it. A
        // resident read that misses may start read-ahead, so the first miss
        // ends the loop.
        let dropped = (0..100).any(|_| {
            evict_from_page_cache(&path);
            let resident = r.read_exact_at_resident(8192, &mut buf).unwrap();
            if resident {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            !resident
        });
        assert!(dropped, "a page the kernel dropped still read as resident");
        // Past the end is the same damage a plain read reports.
        r.read_exact_at(60 * 1024, &mut buf).unwrap();
        let mut past = [0u8; 8];
        let err = r.read_exact_at_resident(64 * 1024 - 4, &mut past).unwrap_err();
        assert!(matches!(err, Error::Corruption { .. }), "{err:?}");
        // Direct reads always wait on the device.
        let direct = fs.open_random_direct(&path).unwrap();
        assert!(!direct.read_exact_at_resident(0, &mut buf).unwrap());
    }

    #[test]
    fn write_read_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let fs = PosixFs;
        let mut w = fs.create(&path).unwrap();
        w.append(b"hello ").unwrap();
        w.append(&vec![7u8; WRITE_BUFFER + 10]).unwrap();
        w.sync().unwrap();
        assert_eq!(w.len(), 6 + WRITE_BUFFER as u64 + 10);
        let r = fs.open_random(&path).unwrap();
        let mut buf = [0u8; 6];
        r.read_exact_at(0, &mut buf).unwrap();
        assert_eq!(&buf, b"hello ");
        let mut past = [0u8; 4];
        let err = r.read_exact_at(w.len() - 2, &mut past).unwrap_err();
        assert!(err.is_corruption());
    }

    #[test]
    fn second_lock_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("LOCK");
        let fs = PosixFs;
        let held = fs.lock(&path).unwrap();
        assert!(matches!(fs.lock(&path), Err(Error::Locked(_))));
        drop(held);
        fs.lock(&path).unwrap();
    }

    #[test]
    fn allocated_size_excludes_punched_holes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("seg");
        let fs = PosixFs;
        let mut w = fs.create(&path).unwrap();
        w.append(&vec![1u8; 256 * 1024]).unwrap();
        w.sync().unwrap();
        let before = fs.allocated_size(&path).unwrap();
        assert!(before >= 256 * 1024, "{before}");
        let punched = fs
            .open_random(&path)
            .unwrap()
            .punch_hole(0, 128 * 1024)
            .unwrap();
        let after = fs.allocated_size(&path).unwrap();
        assert_eq!(fs.file_size(&path).unwrap(), 256 * 1024);
        if punched {
            assert!(after <= before - 128 * 1024, "{before} -> {after}");
        }
    }

    #[test]
    fn punch_hole_spares_a_file_with_another_link() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("seg");
        PosixFs.write_durably(&path, &[7u8; 64 << 10]).unwrap();
        let file = PosixFs.open_random(&path).unwrap();
        PosixFs
            .hard_link(&path, &dir.path().join("linked"))
            .unwrap();
        assert!(!file.punch_hole(0, 32 << 10).unwrap());
        let mut buf = vec![0u8; 64 << 10];
        file.read_exact_at(0, &mut buf).unwrap();
        assert!(buf.iter().all(|&b| b == 7), "the shared bytes survive");
        PosixFs.remove(&dir.path().join("linked")).unwrap();
        // Alone again, the file is punched (where the file system can).
        if file.punch_hole(0, 32 << 10).unwrap() {
            file.read_exact_at(0, &mut buf).unwrap();
            assert!(buf[..32 << 10].iter().all(|&b| b == 0));
        }
    }

    #[test]
    fn punch_hole_keeps_length() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("seg");
        let fs = PosixFs;
        let mut w = fs.create(&path).unwrap();
        w.append(&vec![1u8; 64 * 1024]).unwrap();
        w.sync().unwrap();
        let r = fs.open_random(&path).unwrap();
        let punched = r.punch_hole(4096, 8192).unwrap();
        assert_eq!(r.len().unwrap(), 64 * 1024);
        let mut buf = [9u8; 16];
        r.read_exact_at(4096, &mut buf).unwrap();
        if punched {
            assert_eq!(buf, [0u8; 16]);
        }
    }
}
