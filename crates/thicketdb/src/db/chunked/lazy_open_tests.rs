//! An open after a clean close, or after a crash in the asynchronous mode,
//! reads no chunk log: the logs' filters are built by the first get (or
//! scan, or put) that needs them.

use std::path::Path;
use std::sync::Arc;

use crate::db::tests::scan;
use crate::db::{Db, ReadOptions};
use crate::io::counting::{CountingFs, Reads};
use crate::io::PosixFs;
use crate::options::{Layout, Options};

fn is_log(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "clog")
}

/// Logs that do not rebalance in these tests (under 1 MB), filter parts
/// of 4 KiB (about 16 records), no munks or row cache: every get of a
/// logged key reads a part of its chunk log.
fn options() -> Options {
    Options {
        layout: Layout::Chunked,
        funk_log_limit: 2 << 20,
        funk_log_limit_with_munk: 2 << 20,
        log_filter_parts: 512,
        munk_cache_bytes: 0,
        row_cache_bytes: 0,
        ..Options::default()
    }
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

fn value(i: u32, round: u32) -> Vec<u8> {
    format!("value-{i}-{round}-{}", "x".repeat(200)).into_bytes()
}

/// Writes 2000 keys (twice), closes; returns the counter of a reopen.
fn fill_and_reopen(dir: &Path) -> (Db, Arc<Reads>) {
    let db = Db::open(dir, options()).unwrap();
    for round in 0..2 {
        for i in 0..2000 {
            db.put(key(i), value(i, round)).unwrap();
        }
    }
    db.close().unwrap();
    let fs = CountingFs::new(Arc::new(PosixFs), is_log);
    let reads = fs.reads();
    (
        Db::open_with_fs(dir, options(), Arc::new(fs)).unwrap(),
        reads,
    )
}

#[test]
fn an_open_after_a_clean_close_reads_no_log_until_a_get_needs_it() {
    let dir = tempfile::tempdir().unwrap();
    let (db, reads) = fill_and_reopen(dir.path());
    assert_eq!(reads.bytes(), 0, "the open read a log");
    assert!(db.stats().chunks >= 1);
    assert_eq!(db.get(key(17)).unwrap(), Some(value(17, 1)));
    let after_first = reads.bytes();
    assert!(
        after_first > 2000 * 200,
        "the first get read {after_first} bytes: not the whole log"
    );
    // The index is built once: a second get reads part of one filter
    // part (and a false positive's, maybe).
    assert_eq!(db.get(key(1234)).unwrap(), Some(value(1234, 1)));
    let second = reads.bytes() - after_first;
    assert!(second < 3 * 4096, "a second get read {second} bytes");
    // Appends and scans after the lazy build see every record.
    db.put(key(5000), b"new").unwrap();
    let all = scan(&db, ReadOptions::default());
    assert_eq!(all.len(), 2001);
    assert_eq!(all[17], (key(17), value(17, 1)));
    db.close().unwrap();
}

#[test]
fn concurrent_first_gets_build_the_index_once_and_all_find_their_keys() {
    let dir = tempfile::tempdir().unwrap();
    let (db, reads) = fill_and_reopen(dir.path());
    let log_bytes: u64 = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| is_log(p))
        .map(|p| std::fs::metadata(p).unwrap().len())
        .sum();
    std::thread::scope(|s| {
        for t in 0..4u32 {
            let db = &db;
            s.spawn(move || {
                for i in (t..2000).step_by(97) {
                    assert_eq!(db.get(key(i)).unwrap(), Some(value(i, 1)));
                }
            });
        }
    });
    // Each of the 84 gets reads about half a filter part (4 KiB), and
    // rarely a false positive's; one pass over the log besides. Two
    // builders would read it twice.
    let read = reads.bytes();
    assert!(
        read < log_bytes + 84 * 4096,
        "{read} bytes read for {log_bytes} bytes of log"
    );
}

#[test]
fn a_log_changed_since_the_clean_close_is_read_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let (db, _) = fill_and_reopen(dir.path());
    db.close().unwrap();
    // Append garbage to the log behind the store's back: its length no
    // longer matches, so the open reads it (and drops the torn tail).
    let log = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| is_log(p))
        .unwrap();
    let mut bytes = std::fs::read(&log).unwrap();
    bytes.extend_from_slice(&[0xAB; 100]);
    std::fs::write(&log, bytes).unwrap();
    let fs = CountingFs::new(Arc::new(PosixFs), is_log);
    let reads = fs.reads();
    let db = Db::open_with_fs(dir.path(), options(), Arc::new(fs)).unwrap();
    assert!(reads.bytes() > 0, "the changed log was trusted");
    assert_eq!(db.get(key(3)).unwrap(), Some(value(3, 1)));
}

/// After a crash in `durability=async`, however large the logs, the open
/// reads none of them (YoDB's near-instant recovery): it reads the
/// checkpoint mark and the recovery table, and starts an incarnation.
#[test]
fn an_open_after_an_async_crash_reads_no_log() {
    let fault = crate::io::fault::FaultFs::new();
    let dir = Path::new("/store");
    let async_options = Options {
        durability: crate::options::Durability::Async,
        checkpoint_interval: 3_600_000,
        ..options()
    };
    let db = Db::open_with_fs(dir, async_options.clone(), Arc::new(fault.clone())).unwrap();
    for round in 0..2 {
        for i in 0..2000 {
            db.put(key(i), value(i, round)).unwrap();
        }
        db.flush().unwrap();
    }
    // Past the checkpoint: on disk after the crash, ignored.
    db.put(key(0), b"unsaved").unwrap();
    fault.crash_process();
    drop(db);
    let fs = CountingFs::new(Arc::new(fault.clone()), is_log);
    let reads = fs.reads();
    let db = Db::open_with_fs(dir, async_options, Arc::new(fs)).unwrap();
    assert_eq!(reads.bytes(), 0, "the open read a log");
    assert_eq!(db.get(key(0)).unwrap(), Some(value(0, 1)));
    assert!(reads.bytes() > 2000 * 200);
    assert_eq!(scan(&db, ReadOptions::default()).len(), 2000);
    db.close().unwrap();
}
