//! What the kernel knows about this process and a directory: bytes sent to
//! the block layer, peak RSS, disk usage.

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
}
