//! Helpers shared by the fuzz targets and the seed-corpus generator.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use thicketdb::format::internal_key::{InternalKey, ValueKind, MAX_SEQUENCE};
use thicketdb::io::fault::FaultFs;
use thicketdb::io::{FileSystem, RandomAccessFile, SequentialFile};
use thicketdb::iterator::InternalIterator;

/// Steps any iterator may take in one pass: a decoder that loops forever
/// shows up as a hang report (libFuzzer's `-timeout`), not here.
pub const MAX_STEPS: usize = 100_000;

/// Directory of the fuzzed store inside the in-memory file system.
pub const STORE_DIR: &str = "db";

/// An in-memory file system holding one file with `data`.
pub fn single_file(name: &str, data: &[u8]) -> (FaultFs, PathBuf) {
    let fs = FaultFs::new();
    let path = PathBuf::from(name);
    fs.write_durably(&path, data).expect("in-memory write");
    (fs, path)
}

pub fn random_file(data: &[u8]) -> Arc<dyn RandomAccessFile> {
    let (fs, path) = single_file("fuzz.seg", data);
    fs.open_random(&path).expect("in-memory open")
}

pub fn sequential_file(data: &[u8]) -> Box<dyn SequentialFile> {
    let (fs, path) = single_file("fuzz.log", data);
    fs.open_sequential(&path).expect("in-memory open")
}

/// Walks an iterator both ways and seeks to `target` (a user key); returns
/// the entries seen. Each step must keep the iterator consistent: a valid
/// iterator has a key of at least a trailer's length or reports an error.
pub fn exercise(iter: &mut dyn InternalIterator, target: &[u8]) -> usize {
    let mut seen = 0;
    iter.seek_to_first();
    while iter.valid() && seen < MAX_STEPS {
        let _ = (iter.key(), iter.value());
        iter.next();
        seen += 1;
    }
    let _ = iter.status();
    iter.seek_to_last();
    let mut back = 0;
    while iter.valid() && back < MAX_STEPS {
        let _ = (iter.key(), iter.value());
        iter.prev();
        back += 1;
    }
    let _ = iter.status();
    let seek = InternalKey::new(target, MAX_SEQUENCE, ValueKind::SEEK);
    iter.seek(seek.encoded());
    for _ in 0..16 {
        if !iter.valid() {
            break;
        }
        iter.next();
    }
    let _ = iter.status();
    seen + back
}

/// The container the `open_store` target reads: a sequence of files, each
/// `[name length: u8][name][data length: u32 LE][data]`. A truncated last
/// entry takes what is left. Names are reduced to one path component.
pub fn decode_files(mut input: &[u8]) -> Vec<(String, Vec<u8>)> {
    let mut files = Vec::new();
    while let Some((&name_len, rest)) = input.split_first() {
        let name_len = usize::from(name_len).min(rest.len());
        let (name, rest) = rest.split_at(name_len);
        let len_bytes = rest.get(..4).unwrap_or(rest);
        let mut len = [0u8; 4];
        len[..len_bytes.len()].copy_from_slice(len_bytes);
        let rest = &rest[len_bytes.len()..];
        let len = (u32::from_le_bytes(len) as usize).min(rest.len());
        let (data, rest) = rest.split_at(len);
        let name: String = String::from_utf8_lossy(name)
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || *c == '.' || *c == '-')
            .collect();
        if !name.is_empty() && name != "." && name != ".." && name != "LOCK" {
            files.push((name, data.to_vec()));
        }
        input = rest;
    }
    files
}

pub fn encode_files(files: &[(String, Vec<u8>)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (name, data) in files {
        out.push(u8::try_from(name.len()).expect("short name"));
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(&u32::try_from(data.len()).expect("small file").to_le_bytes());
        out.extend_from_slice(data);
    }
    out
}

/// Writes `files` into `dir` of `fs`.
pub fn install_files(fs: &FaultFs, dir: &Path, files: &[(String, Vec<u8>)]) {
    fs.create_dir_all(dir).expect("in-memory mkdir");
    for (name, data) in files {
        fs.write_durably(&dir.join(name), data)
            .expect("in-memory write");
    }
    fs.sync_dir(dir).expect("in-memory sync_dir");
}

/// Rewrites the checksum of every log fragment in `log` so that it passes,
/// letting the fuzzer reach record assembly and what follows instead of
/// stopping at the first checksum. Fragments are walked as the reader
/// does: 7-byte headers (crc, u16 length, type) in 32 KiB blocks.
pub fn fix_log_checksums(log: &mut [u8]) {
    use thicketdb::format::checksum;
    use thicketdb::log::{BLOCK_SIZE, HEADER_SIZE};
    let mut pos = 0;
    while pos + HEADER_SIZE <= log.len() {
        let block_end = (pos / BLOCK_SIZE + 1) * BLOCK_SIZE;
        if block_end - pos < HEADER_SIZE {
            pos = block_end;
            continue;
        }
        let len = usize::from(u16::from_le_bytes([log[pos + 4], log[pos + 5]]));
        let end = pos + HEADER_SIZE + len;
        if end > log.len() || end > block_end {
            return;
        }
        let crc = checksum::mask(checksum::crc32c_two(
            &log[pos + 6..pos + 7],
            &log[pos + HEADER_SIZE..end],
        ));
        log[pos..pos + 4].copy_from_slice(&crc.to_le_bytes());
        pos = end;
    }
}

/// Replaces (or adds) the `crc32c=` line of an OPTIONS text so that it
/// matches the body.
pub fn fix_options_checksum(text: &[u8]) -> Vec<u8> {
    let body_end = text
        .windows(7)
        .rposition(|w| w == b"crc32c=")
        .unwrap_or(text.len());
    let mut out = text[..body_end].to_vec();
    let crc = thicketdb::format::checksum::crc32c(&out);
    out.extend_from_slice(format!("crc32c={crc:08x}\n").as_bytes());
    out
}

/// Cuts `data` into at most 64 records whose sizes come from `sizes`
/// (cycled; 7 when empty; scaled by 300 so that records span blocks) and
/// writes them with `LogWriter` to an in-memory log. Returns the file
/// system, the log's path and each record with the offset it was written at.
pub fn write_records<'a>(data: &'a [u8], sizes: &[u8]) -> (FaultFs, PathBuf, Vec<(u64, &'a [u8])>) {
    let fs = FaultFs::new();
    let path = PathBuf::from("round-trip.log");
    let mut writer = thicketdb::log::LogWriter::new(fs.create(&path).expect("in-memory create"));
    let sizes = if sizes.is_empty() { &[7u8][..] } else { sizes };
    let mut records = Vec::new();
    let mut rest = data;
    for &size in sizes.iter().cycle().take(64) {
        let (record, tail) = rest.split_at((usize::from(size) * 300).min(rest.len()));
        let offset = writer.add_record(record).expect("in-memory append");
        records.push((offset, record));
        rest = tail;
        if rest.is_empty() {
            break;
        }
    }
    writer.flush().expect("in-memory flush");
    (fs, path, records)
}

/// The bytes a framed-file target decodes (`CHUNKS`, `LOGS_CLOSED`: one
/// envelope): the input after its first byte, with the checksum fixed up
/// when that byte is odd, so the fuzzer reaches the body's decoder too.
pub fn framed_input(data: &[u8]) -> Option<Vec<u8>> {
    let (&flags, rest) = data.split_first()?;
    Some(if flags & 1 == 1 {
        fix_chunk_list_checksum(rest)
    } else {
        rest.to_vec()
    })
}

/// Rewrites the checksum of a chunk list (`CHUNKS`) so that it passes,
/// letting the fuzzer reach the body's decoder: the body is the stated
/// length (cut to what is there) after the 16-byte header.
pub fn fix_chunk_list_checksum(data: &[u8]) -> Vec<u8> {
    use thicketdb::format::checksum::{crc32c, mask};
    if data.len() < 16 {
        return data.to_vec();
    }
    let stated = u32::from_le_bytes(data[12..16].try_into().expect("4 bytes")) as usize;
    let len = stated.min(data.len() - 16);
    let mut out = data[..16 + len].to_vec();
    out[12..16].copy_from_slice(&(len as u32).to_le_bytes());
    let crc = mask(crc32c(&data[16..16 + len]));
    out.extend_from_slice(&crc.to_le_bytes());
    out
}
