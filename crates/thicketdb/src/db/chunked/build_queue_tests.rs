//! The build threads (`chunk_rebalance_threads`, `build_queue.rs`): a put
//! past its chunk's log limit returns while the chunk is built in the
//! background; a log past twice its limit makes its writer wait; `close`
//! stops a build under way cleanly; a failed build fails the store; the
//! threads never keep the store alive.

use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Instant;

use super::concurrency_tests::{get, put, split_store, STUCK};
use super::files::{chunk_list_path, parse_numbered};
use super::manifest::ChunkList;
use super::tests::tiny_uncached;
use super::{Chunk, ChunkHook, ChunkStore};
use crate::io::fault::{FaultFs, FaultKind};
use crate::io::{FileSystem, PosixFs};
use crate::options::Options;

/// `tiny_uncached` with one build thread.
fn one_thread() -> Options {
    Options {
        chunk_rebalance_threads: 1,
        ..tiny_uncached()
    }
}

/// A hook that holds the builds of `held` (any chunk: `None`) until
/// released, reporting each on `building` with the name of the thread
/// running it.
struct Hold {
    building: mpsc::Receiver<Option<String>>,
    release: mpsc::Sender<()>,
}

fn hold(held: Option<Arc<Chunk>>) -> (ChunkHook, Hold) {
    let (building_tx, building) = mpsc::channel();
    let (release, release_rx) = mpsc::channel::<()>();
    let (building_tx, release_rx) = (
        parking_lot::Mutex::new(building_tx),
        parking_lot::Mutex::new(release_rx),
    );
    let hook: ChunkHook = Arc::new(move |chunk: &Chunk| {
        if held.as_ref().is_none_or(|h| std::ptr::eq(chunk, &**h)) {
            let name = std::thread::current().name().map(str::to_string);
            let _ = building_tx.lock().send(name);
            let _ = release_rx.lock().recv_timeout(STUCK);
        }
    });
    (hook, Hold { building, release })
}

/// Waits (at most `STUCK`) until `done` holds.
fn wait_until(what: &str, done: impl Fn() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < STUCK, "stuck waiting until {what}");
        std::thread::yield_now();
    }
}

/// Puts keys `PREFIX00000..` of 64 bytes to `chunk` until its log passes
/// `limit` (one put past it) or it is replaced; returns the keys.
fn fill_past(store: &ChunkStore, chunk: &Chunk, prefix: &str, limit: u64) -> Vec<Vec<u8>> {
    let mut keys = Vec::new();
    while chunk.log.len() <= limit && !chunk.is_retired() {
        let key = format!("{prefix}{:05}", keys.len()).into_bytes();
        put(store, &key, &[b'p'; 64], false);
        keys.push(key);
    }
    keys
}

/// Asserts that every key of `keys` has a value.
fn assert_all_found(store: &ChunkStore, keys: &[Vec<u8>]) {
    for key in keys {
        assert!(get(store, key).is_some(), "{key:?} lost");
    }
}

/// A store of three chunks or more whose first chunk's build is held
/// before its switch: puts of keys `a00000..` passed its log limit,
/// queued it and returned.
struct HeldBuild {
    store: Arc<ChunkStore>,
    limit: u64,
    first: Arc<Chunk>,
    held: Hold,
    /// The keys put.
    keys: Vec<Vec<u8>>,
    /// The thread running the build.
    builder: Option<String>,
    /// `chunk_funk_builds_queued` before the puts.
    queued_before: u64,
}

fn held_build(dir: &std::path::Path) -> HeldBuild {
    let store = split_store(dir, one_thread(), 3);
    let limit = store.options.funk_log_limit;
    let first = store.default_space().chunk_set().chunks[0].clone();
    let (hook, held) = hold(Some(first.clone()));
    *store.before_switch.lock() = Some(hook);
    let queued_before = store
        .counters
        .chunk_funk_builds_queued
        .load(Ordering::SeqCst);
    let keys = fill_past(&store, &first, "a", limit);
    let builder = held.building.recv_timeout(STUCK).expect("a build started");
    HeldBuild {
        store,
        limit,
        first,
        held,
        keys,
        builder,
        queued_before,
    }
}

#[test]
fn a_put_past_the_limit_returns_while_its_chunk_is_built_in_the_background() {
    let dir = tempfile::tempdir().unwrap();
    // The put that passed the limit queued the chunk and returned.
    let HeldBuild {
        store,
        first,
        held,
        mut keys,
        builder,
        queued_before,
        ..
    } = held_build(dir.path());
    assert_eq!(builder.as_deref(), Some("thicket-rebalance-0"));
    let c = &store.counters;
    let (waited, rebalances) = (
        c.chunk_puts_waited_for_build.load(Ordering::SeqCst),
        c.chunk_funk_rebalances.load(Ordering::SeqCst),
    );
    // Meanwhile more puts to the chunk, past its limit, return too and
    // do not queue it again.
    let (done_tx, done_rx) = mpsc::channel();
    let writer = {
        let store = store.clone();
        std::thread::spawn(move || {
            let more: Vec<Vec<u8>> = (0..5u32)
                .map(|i| format!("a-more{i}").into_bytes())
                .collect();
            for key in &more {
                put(&store, key, b"more", false);
            }
            done_tx.send(more).unwrap();
        })
    };
    keys.extend(
        done_rx
            .recv_timeout(STUCK)
            .expect("puts returned while the build was held"),
    );
    writer.join().unwrap();
    assert!(!first.is_retired(), "the build is held before its switch");
    assert_eq!(
        c.chunk_funk_builds_queued.load(Ordering::SeqCst),
        queued_before + 1
    );
    assert_eq!(c.chunk_puts_waited_for_build.load(Ordering::SeqCst), waited);
    // Released, the build switches: every put is in the new chunks.
    store.before_switch.lock().take();
    held.release.send(()).unwrap();
    // (The switch retires the chunk, then counts the rebalance.)
    wait_until("the build switched", || {
        c.chunk_funk_rebalances.load(Ordering::SeqCst) > rebalances
    });
    assert!(first.is_retired());
    assert_all_found(&store, &keys);
    store.close().unwrap();
}

#[test]
fn a_log_past_twice_its_limit_makes_its_writer_wait_for_the_build() {
    let dir = tempfile::tempdir().unwrap();
    let HeldBuild {
        store,
        limit,
        first,
        held,
        mut keys,
        ..
    } = held_build(dir.path());
    let c = &store.counters;
    let waited = c.chunk_puts_waited_for_build.load(Ordering::SeqCst);
    // A writer fills the held chunk's log up to four times its limit
    // (if nothing stops it).
    let (done_tx, done_rx) = mpsc::channel();
    let writer = {
        let (store, first) = (store.clone(), first.clone());
        std::thread::spawn(move || {
            let keys = fill_past(&store, &first, "b", 4 * limit);
            done_tx.send(keys).unwrap();
        })
    };
    wait_until("the writer waits for the build or is done", || {
        c.chunk_puts_waited_for_build.load(Ordering::SeqCst) > waited || writer.is_finished()
    });
    assert_eq!(
        c.chunk_puts_waited_for_build.load(Ordering::SeqCst),
        waited + 1
    );
    assert!(
        done_rx.try_recv().is_err(),
        "the writer waits for the build"
    );
    // The last put appended past twice the limit, then waited.
    let bound = 2 * limit + 200;
    assert!(first.log.len() <= bound, "{} > {bound}", first.log.len());
    store.before_switch.lock().take();
    held.release.send(()).unwrap();
    keys.extend(done_rx.recv_timeout(STUCK).expect("the writer went on"));
    writer.join().unwrap();
    assert!(first.is_retired());
    assert_all_found(&store, &keys);
    store.close().unwrap();
}

#[test]
fn a_chunk_is_queued_once_it_grew_by_its_limit_past_the_tail_its_switch_left() {
    let dir = tempfile::tempdir().unwrap();
    let HeldBuild {
        store,
        limit,
        first,
        held,
        ..
    } = held_build(dir.path());
    // A tail of most of a limit, which the build does not merge.
    let started = first.log.len();
    fill_past(&store, &first, "b", started + limit * 3 / 4);
    store.before_switch.lock().take();
    held.release.send(()).unwrap();
    // The first chunk is marked retired before the new chunk set is
    // published: wait for the set whose first chunk is the child.
    wait_until("the build switched", || {
        first.is_retired() && !store.default_space().chunk_set().chunks[0].is_retired()
    });
    let child = store.default_space().chunk_set().chunks[0].clone();
    assert!(child.tail_bytes > limit / 2, "tail {}", child.tail_bytes);
    let c = &store.counters;
    let queued = c.chunk_funk_builds_queued.load(Ordering::SeqCst);
    // Past the limit, not past the limit beyond the tail: not queued.
    // (Keys below "a": the first chunk's, whatever the split.)
    fill_past(&store, &child, "0c", limit);
    assert!(child.log.len() - child.tail_bytes < limit);
    assert_eq!(c.chunk_funk_builds_queued.load(Ordering::SeqCst), queued);
    // Grown by the limit past the tail: queued.
    fill_past(&store, &child, "0d", child.tail_bytes + limit);
    wait_until("the chunk was queued", || {
        c.chunk_funk_builds_queued.load(Ordering::SeqCst) == queued + 1
    });
    store.close().unwrap();
}

/// The numbered files in `dir` and those its `CHUNKS` names (funk tables,
/// chunk logs, the batch log).
fn files_and_named(dir: &std::path::Path) -> (Vec<u64>, Vec<u64>) {
    let path = chunk_list_path(dir);
    let list = ChunkList::decode(&path, &std::fs::read(&path).unwrap()).unwrap();
    let mut named: Vec<u64> = list
        .keyspaces
        .iter()
        .flat_map(|k| &k.chunks)
        .flat_map(|c| [c.table_number, c.log_number])
        .filter(|&n| n != 0)
        .chain([list.batch_log_number])
        .collect();
    named.sort_unstable();
    let mut files: Vec<u64> = PosixFs
        .list(dir)
        .unwrap()
        .iter()
        .filter_map(|name| parse_numbered(name))
        .collect();
    files.sort_unstable();
    (files, named)
}

#[test]
fn close_stops_a_held_build_which_leaves_no_file_behind() {
    let dir = tempfile::tempdir().unwrap();
    let HeldBuild {
        store,
        first,
        held,
        keys,
        ..
    } = held_build(dir.path());
    let rebalances = store.counters.chunk_funk_rebalances.load(Ordering::SeqCst);
    let (closed_tx, closed_rx) = mpsc::channel();
    let closer = {
        let store = store.clone();
        std::thread::spawn(move || closed_tx.send(store.close()).unwrap())
    };
    wait_until("close started", || store.closed.load(Ordering::SeqCst));
    assert!(closed_rx.try_recv().is_err(), "close waits for the build");
    held.release.send(()).unwrap();
    closed_rx
        .recv_timeout(STUCK)
        .expect("close returned")
        .unwrap();
    closer.join().unwrap();
    // The build abandoned: the old chunk stays, its new files are gone.
    assert!(!first.is_retired());
    assert_eq!(
        store.counters.chunk_funk_rebalances.load(Ordering::SeqCst),
        rebalances
    );
    drop(first);
    drop(store);
    let (files, named) = files_and_named(dir.path());
    assert_eq!(files, named, "files CHUNKS does not name");
    let store = ChunkStore::open(dir.path(), one_thread(), Arc::new(PosixFs)).unwrap();
    assert_all_found(&store, &keys);
    store.close().unwrap();
}

#[test]
fn a_fault_in_a_background_build_fails_the_store_and_a_reopen_keeps_every_put() {
    let fs = FaultFs::new();
    let dir = std::path::Path::new("/db");
    let store = ChunkStore::open(dir, one_thread(), Arc::new(fs.clone())).unwrap();
    let (hook, held) = hold(None);
    *store.before_build.lock() = Some(hook);
    let chunk = store.default_space().chunk_set().chunks[0].clone();
    let keys = fill_past(&store, &chunk, "k", store.options.funk_log_limit);
    held.building.recv_timeout(STUCK).expect("a build started");
    // The disk fills before the build writes anything.
    store.before_build.lock().take();
    fs.set_write_error(Some(FaultKind::NoSpace));
    held.release.send(()).unwrap();
    wait_until("the store failed", || {
        store.stats().background_error.is_some()
    });
    let error = store.stats().background_error.unwrap();
    assert!(error.contains("no space"), "{error}");
    let mut batch = crate::db::WriteBatch::new();
    batch.put(b"after", b"refused").unwrap();
    let refused = store.write(batch, Default::default()).unwrap_err();
    assert!(
        matches!(refused, crate::error::Error::Background(_)),
        "{refused}"
    );
    fs.clear_faults();
    store.close().unwrap();
    drop(chunk);
    drop(store);
    fs.crash_process();
    let store = ChunkStore::open(dir, one_thread(), Arc::new(fs.clone())).unwrap();
    for key in &keys {
        assert_eq!(get(&store, key), Some(vec![b'p'; 64]), "{key:?}");
    }
    assert_eq!(get(&store, b"after"), None);
    store.close().unwrap();
}

#[test]
fn the_threads_never_keep_the_store_alive_and_read_only_opens_start_none() {
    let dir = tempfile::tempdir().unwrap();
    let store = ChunkStore::open(dir.path(), one_thread(), Arc::new(PosixFs)).unwrap();
    assert!(store.builds.is_running());
    put(&store, b"k", b"v", false);
    let weak = Arc::downgrade(&store);
    drop(store);
    assert!(weak.upgrade().is_none(), "a build thread holds the store");
    let read_only = ChunkStore::open_read_only(dir.path(), one_thread(), Arc::new(PosixFs));
    let read_only = read_only.unwrap();
    assert!(!read_only.builds.is_running());
    assert_eq!(get(&read_only, b"k"), Some(b"v".to_vec()));
    let inline = Options {
        chunk_rebalance_threads: 0,
        ..one_thread()
    };
    let store = ChunkStore::open(dir.path(), inline, Arc::new(PosixFs)).unwrap();
    assert!(!store.builds.is_running());
}
