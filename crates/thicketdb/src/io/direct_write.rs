//! Writes that bypass the page cache (`O_DIRECT`), for
//! `use_direct_io_for_flush_and_compaction` (RocksDB's option of that
//! name): the tables a flush or compaction writes do not fill the page
//! cache, so under a memory cap they do not push out the pages readers
//! need, and the device sees the write when it happens instead of at the
//! kernel's writeback.
//!
//! `O_DIRECT` wants offsets, lengths and the buffer aligned
//! ([`DIRECT_ALIGN`]): appends gather in an aligned buffer written out a
//! whole buffer at a time; a `flush` or `sync` writes the partial last
//! block padded with zeros and cuts the file back to the bytes appended
//! (as RocksDB does on close), keeping that block buffered so the next
//! append rewrites it whole.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::direct::{open_with_direct, DIRECT_ALIGN};
use super::fs::WritableFile;
use crate::error::{Error, Result};

/// Bytes gathered before a write: large writes are what the device wants.
const BUFFER: usize = 1 << 20;

/// A file created (or truncated) for appending with `O_DIRECT`. A file
/// system that refuses it (tmpfs) is a clear `InvalidArgument`.
pub fn create_direct(path: &Path) -> Result<Box<dyn WritableFile>> {
    let file = open_with_direct(
        std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true),
        path,
        "use_direct_io_for_flush_and_compaction",
    )?;
    let storage = vec![0u8; BUFFER + DIRECT_ALIGN];
    let skip = storage.as_ptr().align_offset(DIRECT_ALIGN);
    Ok(Box::new(DirectWritable {
        file,
        path: path.to_path_buf(),
        storage,
        skip,
        filled: 0,
        buffer_offset: 0,
        len: 0,
    }))
}

struct DirectWritable {
    file: File,
    path: PathBuf,
    /// The buffer is `storage[skip..skip + BUFFER]`, aligned in memory.
    storage: Vec<u8>,
    skip: usize,
    /// Bytes of the buffer holding appended data.
    filled: usize,
    /// File offset of the buffer's first byte (always aligned).
    buffer_offset: u64,
    /// Bytes appended.
    len: u64,
}

impl DirectWritable {
    fn buffer(&mut self) -> &mut [u8] {
        &mut self.storage[self.skip..self.skip + BUFFER]
    }

    /// Writes the buffer's first `len` bytes (a multiple of the alignment)
    /// at its file offset.
    fn write_buffer(&mut self, len: usize) -> Result<()> {
        let offset = self.buffer_offset;
        let start = self.skip;
        self.file
            .write_all_at(&self.storage[start..start + len], offset)
            .map_err(|e| Error::io(e, self.path.display().to_string()))
    }

    /// Hands every appended byte to the device: whole blocks as they are,
    /// the partial last one padded, then the file cut back to `len`. The
    /// partial block stays at the front of the buffer.
    fn write_out(&mut self) -> Result<()> {
        if self.filled == 0 {
            return Ok(());
        }
        let padded = self.filled.div_ceil(DIRECT_ALIGN) * DIRECT_ALIGN;
        let filled = self.filled;
        self.buffer()[filled..padded].fill(0);
        self.write_buffer(padded)?;
        if padded != filled {
            self.file
                .set_len(self.len)
                .map_err(|e| Error::io(e, self.path.display().to_string()))?;
        }
        let whole = filled - filled % DIRECT_ALIGN;
        self.buffer().copy_within(whole..filled, 0);
        self.buffer_offset += whole as u64;
        self.filled -= whole;
        Ok(())
    }
}

impl WritableFile for DirectWritable {
    fn append(&mut self, mut data: &[u8]) -> Result<()> {
        self.len += data.len() as u64;
        while !data.is_empty() {
            let filled = self.filled;
            let n = data.len().min(BUFFER - filled);
            self.buffer()[filled..filled + n].copy_from_slice(&data[..n]);
            self.filled += n;
            data = &data[n..];
            if self.filled == BUFFER {
                self.write_buffer(BUFFER)?;
                self.buffer_offset += BUFFER as u64;
                self.filled = 0;
            }
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        self.write_out()
    }

    fn sync(&mut self) -> Result<()> {
        self.write_out()?;
        self.file
            .sync_data()
            .map_err(|e| Error::io(e, self.path.display().to_string()))
    }

    fn len(&self) -> u64 {
        self.len
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use std::os::unix::fs::OpenOptionsExt;

    /// A writer on the test directory, or `None` when its file system has
    /// no `O_DIRECT` (the error must then say so; the skip is reported).
    fn writer(path: &Path) -> Option<Box<dyn WritableFile>> {
        match create_direct(path) {
            Ok(w) => Some(w),
            Err(Error::InvalidArgument(msg)) => {
                assert!(msg.contains("O_DIRECT"), "{msg}");
                eprintln!("SKIPPED: {msg}");
                None
            }
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn appends_of_any_size_with_syncs_between_leave_exactly_the_bytes_appended() {
        let dir = crate::io::direct::test_dir();
        let path = dir.path().join("f");
        let Some(mut w) = writer(&path) else { return };
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let mut want = Vec::new();
        for step in 0..120 {
            let len = match step % 8 {
                0 | 4 => rng.random_range(0..10),
                1 | 5 => rng.random_range(0..5000),
                7 => rng.random_range(BUFFER - 100..BUFFER + 9000),
                _ => rng.random_range(0..70_000),
            };
            let data: Vec<u8> = (0..len).map(|_| rng.random()).collect();
            w.append(&data).unwrap();
            want.extend_from_slice(&data);
            assert_eq!(w.len(), want.len() as u64);
            if step % 7 == 3 {
                w.sync().unwrap();
                // Synced: on disk exactly, no padding past the end.
                assert_eq!(std::fs::read(&path).unwrap(), want, "step {step}");
            } else if step % 11 == 5 {
                w.flush().unwrap();
                assert_eq!(std::fs::read(&path).unwrap(), want, "step {step}");
            }
        }
        w.sync().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), want);
    }

    #[test]
    fn the_file_is_written_with_o_direct() {
        let dir = crate::io::direct::test_dir();
        let path = dir.path().canonicalize().unwrap().join("f");
        let Ok(file) = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .custom_flags(rustix::fs::OFlags::DIRECT.bits() as i32)
            .open(&path)
        else {
            return;
        };
        drop(file);
        let mut w = create_direct(&path).unwrap();
        w.append(b"abc").unwrap();
        w.sync().unwrap();
        // The descriptor the writer holds is the only one open on `f`.
        let flags = std::fs::read_dir("/proc/self/fd")
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| std::fs::read_link(e.path()).ok().as_deref() == Some(path.as_path()))
            .map(|e| {
                let fd = e.file_name().into_string().unwrap();
                std::fs::read_to_string(format!("/proc/self/fdinfo/{fd}")).unwrap()
            })
            .collect::<Vec<_>>();
        assert_eq!(flags.len(), 1, "{flags:?}");
        let octal = flags[0]
            .lines()
            .find_map(|l| l.strip_prefix("flags:"))
            .unwrap()
            .trim();
        let bits = u32::from_str_radix(octal, 8).unwrap();
        assert_ne!(bits & rustix::fs::OFlags::DIRECT.bits(), 0, "{octal}");
        assert_eq!(std::fs::read(&path).unwrap(), b"abc");
    }
}
