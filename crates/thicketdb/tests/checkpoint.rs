//! `Db::checkpoint`: the copy holds exactly the state at the checkpoint's
//! point while the source keeps writing and compacting, and the source's
//! later dead-table collection (hole punching in shared segments) leaves
//! it intact.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use thicketdb::io::{FileSystem, PosixFs};
use thicketdb::{Db, Error, Options, ReadOptions};

const KEYS: u64 = 1500;

fn options() -> Options {
    Options::default()
        .write_buffer_size(64 << 10)
        .target_table_size(8 << 10)
        .block_size(512)
        .l0_compaction_trigger(2)
}

fn key(k: u64) -> Vec<u8> {
    format!("key{k:06}").into_bytes()
}

/// The value of write number `i` (sequence number `i + 1`): it sets key
/// `i % KEYS`.
fn value(i: u64) -> Vec<u8> {
    format!("write-{i:08}-{}", "v".repeat(48)).into_bytes()
}

/// The state after writes `0..writes`.
fn state_after(writes: u64) -> BTreeMap<Vec<u8>, Vec<u8>> {
    (0..writes).map(|i| (key(i % KEYS), value(i))).collect()
}

fn scan(db: &Db) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut iter = db.iter(ReadOptions::default()).unwrap();
    iter.seek_to_first();
    let mut out = BTreeMap::new();
    while iter.valid() {
        out.insert(iter.key().to_vec(), iter.value().to_vec());
        iter.next();
    }
    iter.status().unwrap();
    out
}

/// Writes `4 * KEYS` values on a thread and checkpoints `source` into
/// `copy_dir` half-way (once flushes and compactions, or rebalances and
/// splits, have run); checks that the checkpoint's point lies between the
/// writes acknowledged before and after the call. Returns the report and
/// the number of writes.
fn checkpoint_mid_load(source: &Db, copy_dir: &Path) -> (thicketdb::CheckpointReport, u64) {
    let acked = Arc::new(AtomicU64::new(0));
    let total = 4 * KEYS;
    let writer = {
        let (db, acked) = (source.clone(), acked.clone());
        std::thread::spawn(move || {
            for i in 0..total {
                db.put(key(i % KEYS), value(i)).unwrap();
                acked.store(i + 1, Ordering::Release);
            }
        })
    };
    while acked.load(Ordering::Acquire) < total / 2 {
        std::thread::yield_now();
    }
    let acked_before = acked.load(Ordering::Acquire);
    let report = source.checkpoint(copy_dir).unwrap();
    let acked_after = acked.load(Ordering::Acquire);
    writer.join().unwrap();
    assert!(
        report.last_sequence >= acked_before && report.last_sequence <= acked_after + 1,
        "{report:?}, acked {acked_before}..{acked_after}"
    );
    (report, total)
}

#[test]
fn a_checkpoint_taken_under_writes_and_compactions_holds_exactly_its_point() {
    let dir = tempfile::tempdir().unwrap();
    let source_dir = dir.path().join("source");
    let copy_dir = dir.path().join("copy");
    let source = Db::open(&source_dir, options()).unwrap();
    let (report, total) = checkpoint_mid_load(&source, &copy_dir);
    assert!(report.segments_linked > 0, "same file system: {report:?}");
    assert_eq!(report.segments_copied, 0);
    assert!(source.stats().compactions_merge > 0);

    // The source goes on: everything is rewritten and compacted away, and
    // the reopen releases whatever dead space is left.
    source.compact_range(None, None).unwrap();
    source.close().unwrap();
    Db::open(&source_dir, options()).unwrap().close().unwrap();

    let expected = state_after(report.last_sequence);
    thicketdb::check::check_store(&copy_dir).unwrap();
    let copy = Db::open_read_only(&copy_dir, options()).unwrap();
    assert_eq!(copy.stats().last_sequence, report.last_sequence);
    assert_eq!(scan(&copy), expected);
    copy.close().unwrap();
    // Opened read-write, it is a store of its own.
    let copy = Db::open(&copy_dir, options()).unwrap();
    copy.compact_range(None, None).unwrap();
    assert_eq!(scan(&copy), expected);
    copy.close().unwrap();
    thicketdb::check::check_store(&copy_dir).unwrap();
    let source = Db::open_read_only(&source_dir, options()).unwrap();
    assert_eq!(scan(&source), state_after(total));
}

/// Writes every key once, compacts them into one segment of many tables,
/// optionally checkpoints, then rewrites a slice of the keys and compacts
/// again, so that some tables of that segment die. Returns the holes the
/// source punched.
fn kill_part_of_a_segment(
    source_dir: &std::path::Path,
    checkpoint: Option<&std::path::Path>,
) -> u64 {
    let source = Db::open(source_dir, options()).unwrap();
    for i in 0..KEYS {
        source.put(key(i), value(i)).unwrap();
    }
    source.compact_range(None, None).unwrap();
    if let Some(copy_dir) = checkpoint {
        let report = source.checkpoint(copy_dir).unwrap();
        assert!(report.segments_linked > 0, "{report:?}");
    }
    for i in KEYS / 4..KEYS / 2 {
        source.put(key(i), b"new").unwrap();
    }
    source.compact_range(None, None).unwrap();
    let punched = source.stats().holes_punched;
    source.close().unwrap();
    // A reopen punches the dead gaps between live tables too.
    Db::open(source_dir, options()).unwrap().close().unwrap();
    punched
}

#[test]
fn hole_punching_in_the_source_spares_a_linked_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    // Without a checkpoint the scenario punches holes (the file system
    // supports it), so the checkpoint below is really at risk.
    let punched = kill_part_of_a_segment(&dir.path().join("control"), None);
    assert!(punched > 0, "the scenario punches dead tables");

    let source_dir = dir.path().join("source");
    let copy_dir = dir.path().join("copy");
    let punched = kill_part_of_a_segment(&source_dir, Some(&copy_dir));
    assert_eq!(punched, 0, "shared segments are not punched");

    thicketdb::check::check_store(&copy_dir).unwrap();
    let copy = Db::open_read_only(&copy_dir, options()).unwrap();
    assert_eq!(scan(&copy), state_after(KEYS));
}

#[test]
fn a_checkpoint_needs_a_new_directory_and_a_writable_store() {
    let dir = tempfile::tempdir().unwrap();
    let source_dir = dir.path().join("source");
    let source = Db::open(&source_dir, options()).unwrap();
    source.put(b"k", b"v").unwrap();
    let taken = dir.path().join("taken");
    std::fs::create_dir(&taken).unwrap();
    let err = source.checkpoint(&taken).unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
    source.close().unwrap();

    let read_only = Db::open_read_only(&source_dir, options()).unwrap();
    let err = read_only.checkpoint(dir.path().join("copy")).unwrap_err();
    assert!(matches!(err, Error::ReadOnly(_)), "{err}");
}

/// A checkpoint cut short leaves `DIR.checkpoint-tmp`; the next one into
/// `DIR` empties it and succeeds.
#[test]
fn a_checkpoint_reuses_the_staging_directory_an_interrupted_one_left() {
    let dir = tempfile::tempdir().unwrap();
    let source = Db::open(dir.path().join("source"), options()).unwrap();
    source.put(b"k", b"v").unwrap();
    let staging = dir.path().join("copy.checkpoint-tmp");
    std::fs::create_dir(&staging).unwrap();
    std::fs::write(staging.join("000007.log"), b"half a copy").unwrap();
    source.checkpoint(dir.path().join("copy")).unwrap();
    assert!(!staging.exists());
    let copy = Db::open(dir.path().join("copy"), options()).unwrap();
    assert_eq!(copy.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
    assert!(!dir.path().join("copy/000007.log").exists());
}

/// The real file system without hard links (as across file systems).
struct NoLinks;

impl FileSystem for NoLinks {
    fn create(&self, path: &Path) -> thicketdb::Result<Box<dyn thicketdb::io::WritableFile>> {
        PosixFs.create(path)
    }
    fn open_append(&self, path: &Path) -> thicketdb::Result<Box<dyn thicketdb::io::WritableFile>> {
        PosixFs.open_append(path)
    }
    fn open_random(
        &self,
        path: &Path,
    ) -> thicketdb::Result<Arc<dyn thicketdb::io::RandomAccessFile>> {
        PosixFs.open_random(path)
    }
    fn open_sequential(
        &self,
        path: &Path,
    ) -> thicketdb::Result<Box<dyn thicketdb::io::SequentialFile>> {
        PosixFs.open_sequential(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> thicketdb::Result<()> {
        PosixFs.rename(from, to)
    }
    fn remove(&self, path: &Path) -> thicketdb::Result<()> {
        PosixFs.remove(path)
    }
    fn list(&self, dir: &Path) -> thicketdb::Result<Vec<String>> {
        PosixFs.list(dir)
    }
    fn exists(&self, path: &Path) -> bool {
        PosixFs.exists(path)
    }
    fn set_len(&self, path: &Path, len: u64) -> thicketdb::Result<()> {
        PosixFs.set_len(path, len)
    }
    fn file_size(&self, path: &Path) -> thicketdb::Result<u64> {
        PosixFs.file_size(path)
    }
    fn create_dir_all(&self, dir: &Path) -> thicketdb::Result<()> {
        PosixFs.create_dir_all(dir)
    }
    fn sync_dir(&self, dir: &Path) -> thicketdb::Result<()> {
        PosixFs.sync_dir(dir)
    }
    fn sync_file(&self, path: &Path) -> thicketdb::Result<()> {
        PosixFs.sync_file(path)
    }
    fn lock(&self, path: &Path) -> thicketdb::Result<Box<dyn thicketdb::io::FileLock>> {
        PosixFs.lock(path)
    }
}

#[test]
fn without_hard_links_segments_are_copied() {
    for options in [options(), chunked_options()] {
        without_hard_links_files_are_copied(options);
    }
}

fn without_hard_links_files_are_copied(options: Options) {
    let dir = tempfile::tempdir().unwrap();
    let source_dir = dir.path().join("source");
    let copy_dir = dir.path().join("copy");
    let source = Db::open_with_fs(&source_dir, options.clone(), Arc::new(NoLinks)).unwrap();
    for i in 0..KEYS {
        source.put(key(i), value(i)).unwrap();
    }
    source.flush().unwrap();
    let report = source.checkpoint(&copy_dir).unwrap();
    assert_eq!(report.segments_linked, 0, "{report:?}");
    assert!(report.segments_copied > 0, "{report:?}");
    // The copies are files of their own: the source rewriting everything
    // does not touch them.
    for i in 0..KEYS {
        source.put(key(i), b"new").unwrap();
    }
    source.compact_range(None, None).unwrap();
    source.close().unwrap();
    thicketdb::check::check_store(&copy_dir).unwrap();
    let copy = Db::open_read_only(&copy_dir, options).unwrap();
    assert_eq!(scan(&copy), state_after(KEYS));
}

/// YoDB's chunked layout with chunks that split and funks that rebalance
/// constantly.
fn chunked_options() -> Options {
    let mut o = thicketdb::Profile::YoDb.options();
    o.chunk_size = 8 << 10;
    o.funk_log_limit = 2 << 10;
    o.funk_log_limit_with_munk = 4 << 10;
    o.munk_cache_bytes = 16 << 10;
    o.row_cache_bytes = 4 << 10;
    o.block_size = 512;
    o
}

#[test]
fn a_chunked_checkpoint_under_writes_and_splits_holds_exactly_its_point() {
    let dir = tempfile::tempdir().unwrap();
    let source_dir = dir.path().join("source");
    let copy_dir = dir.path().join("copy");
    let source = Db::open(&source_dir, chunked_options()).unwrap();
    let (report, total) = checkpoint_mid_load(&source, &copy_dir);
    assert!(report.segments_linked > 1, "funk tables linked: {report:?}");
    assert_eq!(report.segments_copied, 0);
    let stats = source.stats();
    assert!(stats.chunk_splits > 0 && stats.chunks > 2, "{stats:?}");
    // The source rewrites and rebalances everything; the copy's linked
    // tables and copied logs are its own.
    source.compact_range(None, None).unwrap();
    source.close().unwrap();

    let expected = state_after(report.last_sequence);
    thicketdb::check::check_store(&copy_dir).unwrap();
    let copy = Db::open_read_only(&copy_dir, chunked_options()).unwrap();
    assert_eq!(copy.stats().last_sequence, report.last_sequence);
    assert_eq!(scan(&copy), expected);
    for k in (0..KEYS).step_by(97) {
        assert_eq!(copy.get(key(k)).unwrap().as_ref(), expected.get(&key(k)));
    }
    copy.close().unwrap();
    let copy = Db::open(&copy_dir, chunked_options()).unwrap();
    copy.put(b"after", b"x").unwrap();
    copy.compact_range(None, None).unwrap();
    let mut after = expected.clone();
    after.insert(b"after".to_vec(), b"x".to_vec());
    assert_eq!(scan(&copy), after);
    copy.close().unwrap();
    thicketdb::check::check_store(&copy_dir).unwrap();
    let source = Db::open_read_only(&source_dir, chunked_options()).unwrap();
    assert_eq!(scan(&source), state_after(total));
}
