//! What the kernel knows about this process and a directory: bytes sent to
//! the block layer, peak RSS, disk usage; and the write-back a settled
//! run waits for.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

fn field(file: &str, name: &str) -> Result<u64, String> {
    let text = fs::read_to_string(file).map_err(|e| format!("reading {file}: {e}"))?;
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
    fn write_back_syncs_a_store_directory_and_names_a_missing_one() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("f"), vec![3u8; 4096]).unwrap();
        write_back(dir.path()).unwrap();
        let missing = dir.path().join("missing");
        let err = write_back(&missing).unwrap_err();
        assert!(err.contains("missing"), "{err}");
    }
}
