//! The envelope of the chunked layout's small whole-file structures
//! (`CHUNKS`, `LOGS_CLOSED`): `magic (8 bytes) | fixed32 version |
//! fixed32 body length | body | fixed32 masked crc32c(body)`
//! (`docs/format.md`, *Chunked layout*).

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::format::checksum::{crc32c, mask, unmask};
use crate::format::coding::{get_fixed32, put_fixed32};
use crate::io::FileSystem;

/// Bytes before the body.
pub const HEADER: usize = 16;

/// `body` in its envelope.
pub fn encode(magic: &[u8; 8], version: u32, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len() + HEADER + 4);
    out.extend_from_slice(magic);
    put_fixed32(&mut out, version);
    put_fixed32(&mut out, body.len() as u32);
    out.extend_from_slice(body);
    put_fixed32(&mut out, mask(crc32c(body)));
    out
}

/// The version and body of `data`, the file `file` holding a `what` (for
/// errors) in one of `versions`; damage is `Corruption` naming the file
/// and offset. The body starts at offset `HEADER` of the file.
pub fn decode<'a>(
    file: &Path,
    data: &'a [u8],
    magic: &[u8; 8],
    what: &str,
    versions: &[u32],
) -> Result<(u32, &'a [u8])> {
    let bad = |offset: usize, why: &str| Error::corruption(file, offset as u64, why);
    if data.len() < HEADER || &data[..8] != magic {
        return Err(bad(0, &format!("not a {what} (bad magic)")));
    }
    let mut header = &data[8..HEADER];
    let version = get_fixed32(&mut header).unwrap_or_default();
    let len = get_fixed32(&mut header).unwrap_or_default() as usize;
    if !versions.contains(&version) {
        let readable: Vec<String> = versions.iter().map(u32::to_string).collect();
        return Err(bad(
            8,
            &format!(
                "{what} version {version} (this build reads {})",
                readable.join(" and ")
            ),
        ));
    }
    let body = data
        .get(HEADER..HEADER + len)
        .ok_or_else(|| bad(12, &format!("{what} body truncated")))?;
    let mut crc = data.get(HEADER + len..).unwrap_or_default();
    let stored = get_fixed32(&mut crc).ok_or_else(|| bad(HEADER + len, "checksum truncated"))?;
    if unmask(stored) != crc32c(body) {
        return Err(bad(HEADER + len, &format!("{what} checksum mismatch")));
    }
    Ok((version, body))
}

/// The path and bytes of the file `name` in `dir`, if it exists.
pub fn read_file(
    fs: &dyn FileSystem,
    dir: &Path,
    name: &str,
) -> Result<Option<(PathBuf, Vec<u8>)>> {
    let path = dir.join(name);
    if !fs.exists(&path) {
        return Ok(None);
    }
    let data = fs.read_to_vec(&path)?;
    Ok(Some((path, data)))
}

/// Writes `bytes` as the file `name` in `dir` durably and atomically
/// (`name.tmp`, synced, renamed, directory synced): a crash leaves the
/// old file or the new one.
pub fn write_file(fs: &dyn FileSystem, dir: &Path, name: &str, bytes: &[u8]) -> Result<()> {
    let tmp = dir.join(format!("{name}.tmp"));
    fs.write_durably(&tmp, bytes)?;
    fs.rename(&tmp, &dir.join(name))?;
    fs.sync_dir(dir)
}

/// Removes the file `name` from `dir` durably, if it exists.
pub fn remove_file(fs: &dyn FileSystem, dir: &Path, name: &str) -> Result<()> {
    let path = dir.join(name);
    if fs.exists(&path) {
        fs.remove(&path)?;
        fs.sync_dir(dir)?;
    }
    Ok(())
}
