//! Helpers shared by the integration tests.
#![allow(dead_code)]

pub mod cuts;
pub mod linearizability;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use thicketdb::io::fault::FaultFs;
use thicketdb::io::FileSystem;
use thicketdb::{Db, DbIterator, Error, Options, ReadOptions, Result, WriteBatch};

pub type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// Key-value pairs in iteration order.
pub type Entries = Vec<(Vec<u8>, Vec<u8>)>;

/// One write as the model sees it: a key and `Some(value)` for a put,
/// `None` for a delete.
pub type Op = (Vec<u8>, Option<Vec<u8>>);

/// Small buffers and tables so that flushes and compactions happen often.
pub fn small_options() -> Options {
    Options::default()
        .write_buffer_size(64 << 10)
        .target_table_size(16 << 10)
        .block_size(1024)
        .l0_compaction_trigger(2)
}

/// Trees many levels deep from a few thousand keys: 64 KiB memtables,
/// 8 KiB tables of 1 KiB blocks, L0 compacted at two runs, a 64 KiB base
/// level, and BoLT's groups cut to `max_group` bytes so a group stays a
/// slice of such levels. Callers set the level multiplier.
pub fn tiny_tree(options: Options, max_group: u64) -> Options {
    let group = options.group_compaction_bytes.min(max_group);
    options
        .write_buffer_size(64 << 10)
        .target_table_size(8 << 10)
        .block_size(1024)
        .l0_compaction_trigger(2)
        .max_bytes_for_level_base(64 << 10)
        .level_base_write_buffers(0)
        .group_compaction_bytes(group)
}

/// The directory used for stores on a `FaultFs`.
pub fn fault_dir() -> PathBuf {
    PathBuf::from("db")
}

pub fn open_fault(fs: &FaultFs, options: Options) -> Result<Db> {
    Db::open_with_fs(fault_dir(), options, Arc::new(fs.clone()))
}

pub fn apply(model: &mut Model, ops: &[Op]) {
    for (k, v) in ops {
        match v {
            Some(v) => {
                model.insert(k.clone(), v.clone());
            }
            None => {
                model.remove(k);
            }
        }
    }
}

pub fn batch_of(ops: &[Op]) -> WriteBatch {
    let mut b = WriteBatch::new();
    for (k, v) in ops {
        match v {
            Some(v) => b.put(k, v).unwrap(),
            None => b.delete(k).unwrap(),
        }
    }
    b
}

/// Drains a positioned iterator forward (or backward), returning what it
/// yielded and its final status.
pub fn drain(it: &mut DbIterator, forward: bool) -> (Entries, Result<()>) {
    let mut out = Vec::new();
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        if forward {
            it.next();
        } else {
            it.prev();
        }
    }
    (out, it.status())
}

/// Everything in the store, in key order, through a forward scan.
pub fn scan(db: &Db, opts: ReadOptions) -> Result<Entries> {
    let mut it = db.iter(opts)?;
    it.seek_to_first();
    let (out, status) = drain(&mut it, true);
    status.map(|()| out)
}

pub fn scan_model(db: &Db) -> Result<Model> {
    Ok(scan(db, ReadOptions::default())?.into_iter().collect())
}

pub fn model_vec(model: &Model) -> Entries {
    model.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
}

/// Short description of the first difference between two states.
pub fn diff(got: &Model, want: &Model) -> String {
    for (k, v) in want {
        match got.get(k) {
            None => return format!("missing key {}", show(k)),
            Some(g) if g != v => {
                return format!(
                    "key {}: got value {} ({} bytes), want {} ({} bytes)",
                    show(k),
                    show(&g[..g.len().min(16)]),
                    g.len(),
                    show(&v[..v.len().min(16)]),
                    v.len()
                )
            }
            _ => {}
        }
    }
    for k in got.keys() {
        if !want.contains_key(k) {
            return format!("unexpected key {}", show(k));
        }
    }
    "equal".to_string()
}

pub fn show(bytes: &[u8]) -> String {
    thicketdb::Printable(bytes).to_string()
}

/// Files of a `FaultFs` whose name ends with `suffix` (or starts with it,
/// for `MANIFEST-`).
pub fn fault_files(fs: &FaultFs, pattern: &str) -> Vec<PathBuf> {
    fs.file_names()
        .into_iter()
        .filter(|p| name_matches(p, pattern))
        .collect()
}

/// Files of a real directory matching like `fault_files`.
pub fn posix_files(dir: &Path, pattern: &str) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| name_matches(p, pattern))
        .collect();
    out.sort();
    out
}

fn name_matches(path: &Path, pattern: &str) -> bool {
    let name = path.file_name().unwrap().to_string_lossy();
    if pattern.ends_with('-') {
        name.starts_with(pattern)
    } else {
        name.ends_with(pattern)
    }
}

/// Offsets of the records of a log-format file whose records are all FULL
/// fragments (small records, no block crossing): `(offset, payload_len)`.
pub fn log_records(fs: &dyn FileSystem, path: &Path) -> Vec<(u64, usize)> {
    let data = fs.read_to_vec(path).unwrap();
    let mut out = Vec::new();
    let mut pos = 0usize;
    while pos + 7 <= data.len() {
        let block_left = 32768 - pos % 32768;
        if block_left < 7 {
            pos += block_left;
            continue;
        }
        let len = u16::from_le_bytes([data[pos + 4], data[pos + 5]]) as usize;
        let kind = data[pos + 6];
        if kind == 0 {
            break;
        }
        assert_eq!(kind, 1, "test expects FULL fragments only");
        out.push((pos as u64, len));
        pos += 7 + len;
    }
    out
}

pub fn assert_corruption_in(err: &Error, file_part: &str) {
    match err {
        Error::Corruption { file, .. } => {
            assert!(file.contains(file_part), "expected {file_part} in {err}");
        }
        Error::Background(inner) => assert_corruption_in(inner, file_part),
        other => panic!("expected corruption in {file_part}, got {other:?}"),
    }
}

/// Keys in reverse byte order, as a user's comparator: every comparison
/// the engine makes must go through it for a store opened with it.
pub struct ReverseBytes;

impl thicketdb::Comparator for ReverseBytes {
    fn name(&self) -> &str {
        "thicketdb.test.ReverseBytes"
    }
    fn compare(&self, a: &[u8], b: &[u8]) -> std::cmp::Ordering {
        b.cmp(a)
    }
}

/// A scratch directory for tests of `O_DIRECT`: under the target directory
/// (`CARGO_TARGET_TMPDIR`), on the disk's file system, because the
/// system's temporary directory may be a tmpfs, which refuses `O_DIRECT`
/// and would leave such a test nothing to check.
pub fn direct_io_dir() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

/// Reports a test that cannot run here, so that a skip shows in the test
/// output instead of passing silently.
pub fn skipped(test: &str, why: &str) {
    eprintln!("SKIPPED {test}: {why}");
}
