//! What the kernel knows about this process and a directory: bytes sent to
//! and read from the block layer, read system calls, peak RSS, disk usage;
//! and the write-back a settled run waits for.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

fn field(file: &str, name: &str) -> Result<u64, String> {
    let text = fs::read_to_string(file).map_err(|e| format!("reading {file}: {e}"))?;
    field_of(&text, file, name)
}

/// The number after `name` in `text`, the contents of `file`.
fn field_of(text: &str, file: &str, name: &str) -> Result<u64, String> {
    text.lines()
        .find_map(|l| l.strip_prefix(name))
        .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
        .ok_or_else(|| format!("no {name} in {file}"))
}

/// `write_bytes` of `/proc/self/io`: bytes this process (all its threads)
/// caused to be written to storage, counted when pages are dirtied.
pub fn write_bytes() -> Result<u64, String> {
    field("/proc/self/io", "write_bytes:")
}

/// The read side of `/proc/self/io`, for every thread of this process.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReadCounters {
    /// `read_bytes`: bytes this process caused to be read from storage
    /// (page-cache misses and direct reads).
    pub device_bytes: u64,
    /// `syscr`: read system calls (`read`, `pread64`, `readv`, ...).
    pub syscalls: u64,
    /// `rchar`: bytes those system calls returned, from the page cache or
    /// the device.
    pub syscall_bytes: u64,
}

impl ReadCounters {
    /// What was read between `self` and `later`.
    pub fn since(self, earlier: ReadCounters) -> ReadCounters {
        ReadCounters {
            device_bytes: self.device_bytes.saturating_sub(earlier.device_bytes),
            syscalls: self.syscalls.saturating_sub(earlier.syscalls),
            syscall_bytes: self.syscall_bytes.saturating_sub(earlier.syscall_bytes),
        }
    }
}

/// This process's read counters, from one read of `/proc/self/io`.
pub fn read_counters() -> Result<ReadCounters, String> {
    let file = "/proc/self/io";
    let text = fs::read_to_string(file).map_err(|e| format!("reading {file}: {e}"))?;
    Ok(ReadCounters {
        device_bytes: field_of(&text, file, "read_bytes:")?,
        syscalls: field_of(&text, file, "syscr:")?,
        syscall_bytes: field_of(&text, file, "rchar:")?,
    })
}

/// Major page faults of this process so far (`majflt`, the tenth field
/// after the command in `/proc/self/stat`): pages a memory-mapped file
/// (or swapped-out memory) had to bring in from the device.
pub fn major_faults() -> Result<u64, String> {
    let file = "/proc/self/stat";
    let text = fs::read_to_string(file).map_err(|e| format!("reading {file}: {e}"))?;
    // The command may hold spaces and parentheses: fields start after the
    // last ')'.
    text.rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().nth(9)?.parse().ok())
        .ok_or_else(|| format!("no majflt in {file}"))
}

/// Requests the block device under a directory completed: the device's
/// own counters (`/sys/dev/block/MAJ:MIN/stat`), so every process's I/O
/// on it is counted; the benchmark runs on a quiet machine.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DeviceOps {
    pub reads: u64,
    pub writes: u64,
}

impl DeviceOps {
    /// The requests between `earlier` and `self`.
    pub fn since(self, earlier: DeviceOps) -> DeviceOps {
        DeviceOps {
            reads: self.reads.saturating_sub(earlier.reads),
            writes: self.writes.saturating_sub(earlier.writes),
        }
    }
}

/// The device counters of the file system holding `dir`; `None` where it
/// is not a block device (tmpfs, overlay) or the kernel shows no counters.
pub fn device_ops(dir: &Path) -> Option<DeviceOps> {
    let dev = fs::metadata(dir).ok()?.dev();
    let (major, minor) = (rustix::fs::major(dev), rustix::fs::minor(dev));
    let text = fs::read_to_string(format!("/sys/dev/block/{major}:{minor}/stat")).ok()?;
    // Fields: reads completed, merged, sectors, ms; writes completed, ...
    let fields: Vec<u64> = text
        .split_whitespace()
        .map(|f| f.parse().ok())
        .collect::<Option<_>>()?;
    Some(DeviceOps {
        reads: *fields.first()?,
        writes: *fields.get(4)?,
    })
}

/// Peak resident set size (`VmHWM`), bytes.
pub fn peak_rss() -> Result<u64, String> {
    Ok(field("/proc/self/status", "VmHWM:")? * 1024)
}

/// Allocated bytes of every file under `dir`, like `du`.
pub fn disk_usage(dir: &Path) -> Result<u64, String> {
    let mut total = 0;
    let entries = fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for entry in entries {
        let entry = entry.map_err(|e| e.to_string())?;
        let meta = entry.metadata().map_err(|e| e.to_string())?;
        total += if meta.is_dir() {
            disk_usage(&entry.path())?
        } else {
            meta.blocks() * 512
        };
    }
    Ok(total)
}

/// Writes back every dirty page of the file system holding `dir` and waits
/// for it (`syncfs`). A settled run calls it before measuring: left alone,
/// the kernel writes back the prefill's pages ~30 s after they were
/// dirtied (`dirty_expire_centisecs`), inside the measured phase of
/// whichever engine runs then.
pub fn write_back(dir: &Path) -> Result<(), String> {
    let file = fs::File::open(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    rustix::fs::syncfs(&file).map_err(|e| format!("syncfs {}: {e}", dir.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn counters_see_our_own_writes() {
        let dir = tempfile::tempdir().unwrap();
        let before = write_bytes().unwrap();
        let mut f = fs::File::create(dir.path().join("f")).unwrap();
        f.write_all(&vec![7u8; 1 << 20]).unwrap();
        f.sync_all().unwrap();
        fs::create_dir(dir.path().join("sub")).unwrap();
        fs::write(dir.path().join("sub/g"), vec![1u8; 8192]).unwrap();
        assert!(write_bytes().unwrap() >= before + (1 << 20));
        assert!(disk_usage(dir.path()).unwrap() >= (1 << 20) + 8192);
        assert!(peak_rss().unwrap() > 1 << 20);
    }

    #[test]
    fn major_faults_read_and_grow_monotonically() {
        let a = major_faults().unwrap();
        let b = major_faults().unwrap();
        assert!(b >= a);
    }

    /// Where the temporary directory is on a block device, its counters
    /// are found and a synced write of 1 MiB completes at least one write
    /// request; elsewhere (tmpfs) there are none, and the test says so.
    #[test]
    fn device_ops_count_a_synced_write_on_a_block_device() {
        let dir = tempfile::tempdir().unwrap();
        let Some(before) = device_ops(dir.path()) else {
            eprintln!("skipped: {} is not on a block device", dir.path().display());
            return;
        };
        let mut f = fs::File::create(dir.path().join("f")).unwrap();
        f.write_all(&vec![9u8; 1 << 20]).unwrap();
        f.sync_all().unwrap();
        let after = device_ops(dir.path()).unwrap();
        assert!(after.since(before).writes >= 1, "{before:?} {after:?}");
        assert_eq!(before.since(after), DeviceOps::default(), "saturates");
    }

    /// Reads through the page cache count as system calls and their
    /// bytes; `syncfs` plus dropping the file's pages is not possible
    /// without privileges, so the device bytes are only checked to be
    /// monotonic.
    #[test]
    fn read_counters_count_our_own_reads() {
        use std::io::Read;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        fs::write(&path, vec![5u8; 64 << 10]).unwrap();
        let before = read_counters().unwrap();
        let mut f = fs::File::open(&path).unwrap();
        let mut buf = [0u8; 4096];
        for _ in 0..16 {
            f.read_exact(&mut buf).unwrap();
        }
        let after = read_counters().unwrap();
        let d = after.since(before);
        // 16 reads, plus the read(s) of /proc/self/io itself.
        assert!((16..=20).contains(&d.syscalls), "{d:?}");
        assert!(d.syscall_bytes >= 16 * 4096, "{d:?}");
        assert!(after.device_bytes >= before.device_bytes);
        assert_eq!(before.since(after), ReadCounters::default(), "saturates");
    }

    #[test]
    fn write_back_syncs_a_store_directory_and_names_a_missing_one() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("f"), vec![3u8; 4096]).unwrap();
        write_back(dir.path()).unwrap();
        let missing = dir.path().join("missing");
        let err = write_back(&missing).unwrap_err();
        assert!(err.contains("missing"), "{err}");
    }
}
