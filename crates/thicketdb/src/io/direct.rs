//! Reads that bypass the page cache (`O_DIRECT`), for `use_direct_reads`:
//! with them a table block the block cache does not hold costs a device
//! read, as on a store larger than memory, instead of a page-cache copy
//! (SifrDB's parallel search hides exactly that latency).
//!
//! `O_DIRECT` wants the file offset, the length and the buffer aligned to
//! the device's logical block; reads here cover the aligned span around
//! the bytes asked for, into an aligned scratch buffer, and copy them out.

use std::cell::RefCell;
use std::fs::File;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;

use crate::error::{Error, Result};

/// Alignment of offsets, lengths and buffers: 4 KiB covers the logical
/// block of every common device (512 B or 4 KiB).
pub const DIRECT_ALIGN: usize = 4096;

/// Opens `path` for reading with `O_DIRECT`. A file system that refuses
/// it (tmpfs, some overlay mounts) is a clear `InvalidArgument`.
pub fn open_direct(path: &Path) -> Result<File> {
    open_with_direct(std::fs::OpenOptions::new().read(true), path, "use_direct_reads")
}

/// Opens `path` with `options` plus `O_DIRECT`; a refusal names `option`,
/// the store option that asked for it.
pub fn open_with_direct(
    options: &mut std::fs::OpenOptions,
    path: &Path,
    option: &str,
) -> Result<File> {
    options
        .custom_flags(rustix::fs::OFlags::DIRECT.bits() as i32)
        .open(path)
        .map_err(|e| {
            if e.raw_os_error() == Some(rustix::io::Errno::INVAL.raw_os_error()) {
                Error::InvalidArgument(format!(
                    "{}: the file system refuses O_DIRECT, which {option} needs \
                     (tmpfs does); open the store without it",
                    path.display()
                ))
            } else {
                Error::io(e, path.display().to_string())
            }
        })
}

/// Reads larger than this do not keep their scratch.
const MAX_KEPT_SCRATCH: usize = 1 << 20;

thread_local! {
    /// Scratch for the aligned span of a read, kept per thread so that a
    /// block read does not allocate (and zero) a buffer each time.
    static SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Reads exactly `buf.len()` bytes at `offset` of a file opened by
/// `open_direct`; a file ending before them is corruption, as a buffered
/// read reports it.
pub fn read_exact_direct(file: &File, path: &Path, offset: u64, buf: &mut [u8]) -> Result<()> {
    // A block of a huge value gets a scratch of its own rather than
    // leaving the thread holding its size.
    if buf.len() > MAX_KEPT_SCRATCH {
        return read_through(file, path, offset, buf, &mut Vec::new());
    }
    SCRATCH.with(|scratch| match scratch.try_borrow_mut() {
        Ok(mut scratch) => read_through(file, path, offset, buf, &mut scratch),
        // Only a re-entrant read on this thread lands here: a scratch of
        // its own.
        Err(_) => read_through(file, path, offset, buf, &mut Vec::new()),
    })
}

/// `read_exact_direct` through `scratch`, grown to the aligned span.
fn read_through(
    file: &File,
    path: &Path,
    offset: u64,
    buf: &mut [u8],
    scratch: &mut Vec<u8>,
) -> Result<()> {
    let align = DIRECT_ALIGN as u64;
    let start = offset - offset % align;
    let end = offset
        .checked_add(buf.len() as u64)
        .map(|e| e.div_ceil(align) * align)
        .ok_or_else(|| Error::corruption(path, offset, "read past the largest offset"))?;
    let span = usize::try_from(end - start)
        .map_err(|_| Error::corruption(path, offset, "read larger than memory"))?;
    if scratch.len() < span + DIRECT_ALIGN {
        scratch.resize(span + DIRECT_ALIGN, 0);
    }
    let skip = scratch.as_ptr().align_offset(DIRECT_ALIGN);
    let aligned = &mut scratch[skip..skip + span];
    let first = (offset - start) as usize;
    let wanted = first + buf.len();
    let mut done = 0;
    while done < wanted {
        let n = file
            .read_at(&mut aligned[done..], start + done as u64)
            .map_err(|e| Error::io(e, path.display().to_string()))?;
        done += n;
        // A short read ends at the end of the file; the next offset would
        // not be aligned anyway.
        if n == 0 || n % DIRECT_ALIGN != 0 {
            break;
        }
    }
    if done < wanted {
        return Err(Error::corruption(
            path,
            offset,
            format!("file too short to read {} bytes", buf.len()),
        ));
    }
    buf.copy_from_slice(&aligned[first..wanted]);
    Ok(())
}

/// A scratch directory for tests of `O_DIRECT`: beside the test binary, in
/// the target directory on the disk's file system, because the system's
/// temporary directory may be a tmpfs, which refuses `O_DIRECT` and would
/// leave such a test nothing to check.
#[cfg(test)]
pub(crate) fn test_dir() -> tempfile::TempDir {
    let exe = std::env::current_exe().unwrap();
    tempfile::tempdir_in(exe.parent().unwrap()).unwrap()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::{FileSystem, PosixFs};

    #[test]
    fn direct_reads_return_the_bytes_buffered_reads_do() {
        let dir = test_dir();
        let path = dir.path().join("f");
        let data: Vec<u8> = (0..MAX_KEPT_SCRATCH + 3 * DIRECT_ALIGN + 123)
            .map(|i| (i % 251) as u8)
            .collect();
        std::fs::write(&path, &data).unwrap();
        let file = match open_direct(&path) {
            Ok(f) => f,
            Err(Error::InvalidArgument(msg)) => {
                // The test directory's file system has no O_DIRECT: the
                // error must say so, and the skip shows in the output.
                assert!(msg.contains("O_DIRECT"), "{msg}");
                eprintln!("SKIPPED direct_reads_return_the_bytes_buffered_reads_do: {msg}");
                return;
            }
            Err(e) => panic!("{e}"),
        };
        let buffered = PosixFs.open_random(&path).unwrap();
        for (offset, len) in [
            (0, 1),
            (1, 4095),
            (4095, 2),
            (5, MAX_KEPT_SCRATCH + 1),
            (4096, 4096),
            (100, 9000),
            (0, data.len()),
            (data.len() - 5, 5),
        ] {
            let mut direct = vec![0u8; len];
            read_exact_direct(&file, &path, offset as u64, &mut direct).unwrap();
            let mut want = vec![0u8; len];
            buffered.read_exact_at(offset as u64, &mut want).unwrap();
            assert_eq!(direct, want, "offset {offset} len {len}");
        }
        let mut past_end = vec![0u8; 10];
        let err =
            read_exact_direct(&file, &path, data.len() as u64 - 5, &mut past_end).unwrap_err();
        assert!(err.is_corruption(), "{err}");
    }
}
