//! The chunked layout's synchronisation: puts to other chunks, and to the
//! chunk itself, go on while a funk is built (only its switch stops
//! them); syncing writers share fsyncs. Linearizability and splits under
//! concurrent puts: `tests/yodb.rs`.

use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use super::tests::tiny_uncached;
use super::ChunkStore;
use crate::db::{ReadOptions, WriteBatch, WriteOptions};
use crate::io::fault::FaultFs;
use crate::io::{FileSystem, PosixFs};
use crate::options::Options;

/// How long a test waits for something that must happen before it calls
/// the code under test stuck (a liveness guard, not a timing assertion).
pub(super) const STUCK: Duration = Duration::from_secs(120);

pub(super) fn put(store: &ChunkStore, key: &[u8], value: &[u8], sync: bool) {
    let mut batch = WriteBatch::new();
    batch.put(key, value).unwrap();
    let opts = WriteOptions { sync };
    store.write(batch, opts).unwrap();
}

pub(super) fn get(store: &ChunkStore, key: &[u8]) -> Option<Vec<u8>> {
    store
        .get(store.default_space(), key, &ReadOptions::default())
        .unwrap()
}

fn open(dir: &std::path::Path, options: Options) -> Arc<ChunkStore> {
    ChunkStore::open(dir, options, Arc::new(PosixFs)).unwrap()
}

/// A store of at least `chunks` chunks: keys `k0000` to `k0999`, split
/// by `compact_range`.
pub(super) fn split_store(
    dir: &std::path::Path,
    options: Options,
    chunks: usize,
) -> Arc<ChunkStore> {
    split_store_on(Arc::new(PosixFs), dir, options, chunks)
}

/// `split_store` on file system `fs`.
fn split_store_on(
    fs: Arc<dyn FileSystem>,
    dir: &std::path::Path,
    options: Options,
    chunks: usize,
) -> Arc<ChunkStore> {
    let store = ChunkStore::open(dir, options, fs).unwrap();
    for i in 0..1000u32 {
        put(&store, format!("k{i:04}").as_bytes(), &[b'a'; 64], false);
    }
    store
        .compact_range(store.default_space(), None, None)
        .unwrap();
    assert!(store.default_space().chunk_set().chunks.len() >= chunks);
    store
}

#[test]
fn puts_go_on_while_a_funk_is_built_and_wait_only_for_its_switch() {
    let dir = tempfile::tempdir().unwrap();
    // Writers build themselves (the build threads: `build_queue_tests.rs`).
    let options = Options {
        chunk_rebalance_threads: 0,
        ..tiny_uncached()
    };
    let store = split_store(dir.path(), options, 3);
    let counters = &store.counters;
    // The first chunk's next funk build stops before its switch until
    // released (other chunks rebalance freely).
    let first = store.default_space().chunk_set().chunks[0].clone();
    let (building_tx, building_rx) = mpsc::channel();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    let release_rx = parking_lot::Mutex::new(release_rx);
    let held = first.clone();
    *store.before_switch.lock() = Some(Arc::new(move |chunk: &super::Chunk| {
        if std::ptr::eq(chunk, &*held) {
            let _ = building_tx.send(());
            let _ = release_rx.lock().recv();
        }
    }));
    let rebalances = counters.chunk_funk_rebalances.load(Ordering::SeqCst);
    // Puts to the first chunk until one of them starts a rebalance.
    let builder = {
        let store = store.clone();
        std::thread::spawn(move || {
            for i in 0.. {
                put(&store, format!("a{i:05}").as_bytes(), &[b'b'; 64], false);
                if store.before_switch.lock().is_none() {
                    return;
                }
            }
        })
    };
    building_rx
        .recv_timeout(STUCK)
        .expect("a funk build started");
    let (skipped, waited) = (
        counters.chunk_funk_builds_skipped.load(Ordering::SeqCst),
        counters.chunk_puts_waited_for_switch.load(Ordering::SeqCst),
    );
    // Meanwhile: puts to every chunk, the one being rebalanced included
    // (past its log limit: they would start a build of their own).
    let (done_tx, done_rx) = mpsc::channel();
    let writer = {
        let store = store.clone();
        std::thread::spawn(move || {
            for i in 0..400u32 {
                let key = format!("k{:04}", i * 997 % 1000);
                put(&store, key.as_bytes(), format!("new{i}").as_bytes(), false);
                put(&store, format!("a-mid{i:04}").as_bytes(), b"mid", false);
            }
            done_tx.send(()).unwrap();
        })
    };
    done_rx
        .recv_timeout(STUCK)
        .expect("puts went on while the build was held");
    writer.join().unwrap();
    assert!(!first.is_retired(), "the build is held before its switch");
    assert!(
        counters.chunk_funk_builds_skipped.load(Ordering::SeqCst) > skipped,
        "puts past the log limit did not wait for the build"
    );
    assert_eq!(
        counters.chunk_puts_waited_for_switch.load(Ordering::SeqCst),
        waited,
        "no put waited: the only switches ran in the writing thread itself"
    );
    // Release the build: its switch copies what the puts appended.
    store.before_switch.lock().take();
    release_tx.send(()).unwrap();
    builder.join().unwrap();
    assert!(first.is_retired());
    assert!(counters.chunk_funk_rebalances.load(Ordering::SeqCst) > rebalances);
    for i in 0..400u32 {
        let key = format!("k{:04}", i * 997 % 1000);
        let last = (i..400)
            .rev()
            .find(|j| j * 997 % 1000 == i * 997 % 1000)
            .unwrap();
        assert_eq!(
            get(&store, key.as_bytes()),
            Some(format!("new{last}").into_bytes())
        );
        assert_eq!(
            get(&store, format!("a-mid{i:04}").as_bytes()),
            Some(b"mid".to_vec())
        );
    }
}

#[test]
fn syncing_writers_share_one_sync_per_chunk_log() {
    let fs = FaultFs::new();
    let dir = std::path::Path::new("/db");
    let store = split_store_on(Arc::new(fs.clone()), dir, tiny_uncached(), 2);
    let set = store.default_space().chunk_set();
    assert!(set.chunks.len() >= 2);
    // Two chunks, four syncing writers each.
    let keys: Vec<Vec<u8>> = [0, set.chunks.len() - 1]
        .iter()
        .flat_map(|&c| {
            let start = set.chunks[c].start.clone();
            (0..4u8).map(move |w| [start.as_slice(), b"-w", &[b'0' + w]].concat())
        })
        .collect();
    let syncs = fs.stats().syncs;
    let fsyncs_log = store.counters.fsyncs_log.load(Ordering::SeqCst);
    // The first sync round stops before it syncs anything until
    // released: every writer appends meanwhile.
    let (release_tx, release_rx) = mpsc::channel::<()>();
    let release_rx = parking_lot::Mutex::new(release_rx);
    *store.before_sync_round.lock() = Some(Arc::new(move || {
        let _ = release_rx.lock().recv_timeout(STUCK);
    }));
    let writers: Vec<_> = keys
        .iter()
        .cloned()
        .map(|key| {
            let store = store.clone();
            std::thread::spawn(move || put(&store, &key, b"synced", true))
        })
        .collect();
    // One writer leads the held round; the other seven wait for the next.
    while store.sync_group.waiting() < keys.len() - 1 {
        std::thread::yield_now();
    }
    store.before_sync_round.lock().take();
    release_tx.send(()).unwrap();
    for w in writers {
        w.join().unwrap();
    }
    assert_eq!(fs.stats().syncs - syncs, 2, "one sync per chunk log");
    assert_eq!(
        store.counters.fsyncs_log.load(Ordering::SeqCst) - fsyncs_log,
        2
    );
    // And they are durable.
    fs.drop_unsynced();
    drop(store);
    let store = ChunkStore::open(dir, tiny_uncached(), Arc::new(fs.clone())).unwrap();
    for key in &keys {
        assert_eq!(get(&store, key), Some(b"synced".to_vec()));
    }
}

/// A write that passed the open check and then met `close` (which sets
/// `closed` before it takes the append locks) gets `Closed` and leaves
/// the store unfailed, so `close` still records a clean close.
#[test]
fn a_write_racing_close_gets_closed_and_fails_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path(), tiny_uncached());
    put(&store, b"k", b"v", false);
    let chunk = store.default_space().chunk_set().chunks[0].clone();
    let held = chunk.append_lock.lock();
    let writer = {
        let store = store.clone();
        std::thread::spawn(move || {
            let mut batch = WriteBatch::new();
            batch.put(b"k2", b"v").unwrap();
            store.write(batch, WriteOptions::default())
        })
    };
    // The writer holds the chunk's `rebalance_lock` shared (past the open
    // check) and waits for its append lock.
    let start = std::time::Instant::now();
    while !chunk.rebalance_lock.is_locked() {
        assert!(
            start.elapsed() < STUCK,
            "the writer never reached the chunk"
        );
        std::thread::yield_now();
    }
    let closer = {
        let store = store.clone();
        std::thread::spawn(move || store.close())
    };
    while !store.closed.load(Ordering::Acquire) {
        assert!(start.elapsed() < STUCK, "close never started");
        std::thread::yield_now();
    }
    drop(held);
    let written = writer.join().unwrap();
    closer.join().unwrap().unwrap();
    assert!(
        matches!(written, Err(crate::error::Error::Closed)),
        "{written:?}"
    );
    assert!(store.failed.lock().is_none(), "{:?}", store.failed.lock());
}

/// YoDB's puts wait for nothing outside their own chunk (§3.2-3.3): a
/// put to one chunk held in a sync round (numbered before, not finished)
/// keeps neither a later put to another chunk nor a get of it waiting.
/// With one in-order publication the later put waited for the held one.
#[test]
fn a_put_waits_for_no_put_to_another_chunk() {
    let fs = FaultFs::new();
    let dir = std::path::Path::new("/db");
    let store = split_store_on(Arc::new(fs.clone()), dir, tiny_uncached(), 2);
    let set = store.default_space().chunk_set();
    assert!(set.chunks.len() >= 2);
    let held_key = [set.chunks[0].start.as_slice(), b"-held"].concat();
    let free_key = [set.chunks[set.chunks.len() - 1].start.as_slice(), b"-free"].concat();
    let (entered_tx, entered_rx) = mpsc::channel::<()>();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    let (entered_tx, release_rx) = (
        parking_lot::Mutex::new(entered_tx),
        parking_lot::Mutex::new(release_rx),
    );
    *store.before_sync_round.lock() = Some(Arc::new(move || {
        let _ = entered_tx.lock().send(());
        let _ = release_rx.lock().recv_timeout(STUCK);
    }));
    let held = {
        let (store, key) = (store.clone(), held_key.clone());
        std::thread::spawn(move || put(&store, &key, b"held", true))
    };
    entered_rx
        .recv_timeout(STUCK)
        .expect("the sync round began");
    store.before_sync_round.lock().take();
    let (done_tx, done_rx) = mpsc::channel();
    let free = {
        let (store, key) = (store.clone(), free_key.clone());
        std::thread::spawn(move || {
            put(&store, &key, b"free", false);
            done_tx.send(get(&store, &key)).unwrap();
        })
    };
    let read = done_rx.recv_timeout(STUCK);
    release_tx.send(()).unwrap();
    assert_eq!(
        read.expect("the put to another chunk waited for the held one"),
        Some(b"free".to_vec())
    );
    held.join().unwrap();
    free.join().unwrap();
    assert_eq!(get(&store, &held_key), Some(b"held".to_vec()));
}

/// A put that returned survives a process crash even while a put numbered
/// before it (to another chunk) is still appending: recovery keeps the
/// writes before the first number no log holds, so the later put must not
/// return before the earlier one is in its log (`append_order.rs`;
/// without it `scripts/lib/server_crash.py` lost acknowledged INCRs).
#[test]
fn a_returned_put_survives_a_crash_while_an_earlier_numbered_put_appends() {
    let fs = FaultFs::new();
    let dir = std::path::Path::new("db");
    let store = split_store_on(Arc::new(fs.clone()), dir, tiny_uncached(), 2);
    // In the first chunk and the last: two chunks, two logs.
    let (first_key, last_key) = (b"k0000".to_vec(), b"k0999".to_vec());
    // The next put stops once it has its numbers, until released.
    let (held_tx, held_rx) = mpsc::channel();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    let release_rx = Arc::new(parking_lot::Mutex::new(release_rx));
    let armed = Arc::new(std::sync::atomic::AtomicBool::new(true));
    *store.after_numbers_taken.lock() = Some(Arc::new(move || {
        if armed.swap(false, Ordering::SeqCst) {
            held_tx.send(()).unwrap();
            release_rx.lock().recv_timeout(STUCK).unwrap();
        }
    }));
    std::thread::scope(|s| {
        let early = s.spawn(|| put(&store, &first_key, b"early", false));
        held_rx.recv_timeout(STUCK).unwrap();
        let late = s.spawn(|| put(&store, &last_key, b"late", false));
        // Either the later put waits for the earlier one, or it returned.
        while !late.is_finished() && store.append_order.waiting() == 0 {
            std::thread::yield_now();
        }
        if late.is_finished() {
            // Returned while an earlier number was not in any log: a
            // crash now must keep it all the same.
            fs.crash_process();
            let reopened = ChunkStore::open(dir, tiny_uncached(), Arc::new(fs.clone())).unwrap();
            assert_eq!(
                get(&reopened, &last_key).as_deref(),
                Some(&b"late"[..]),
                "a put that returned was lost by a process crash"
            );
        }
        release_tx.send(()).unwrap();
        early.join().unwrap();
        late.join().unwrap();
    });
    assert_eq!(get(&store, &last_key).as_deref(), Some(&b"late"[..]));
}

/// An asynchronous put takes no store-wide lock: the append order (a
/// mutex and a map entry per put) is the synchronous mode's (a crash in
/// the asynchronous mode returns to a checkpoint, which waits for every
/// write below its point).
#[test]
fn an_asynchronous_put_takes_no_store_wide_append_order() {
    let dir = tempfile::tempdir().unwrap();
    let options = Options {
        durability: crate::options::Durability::Async,
        checkpoint_interval: 3_600_000,
        ..tiny_uncached()
    };
    let store = ChunkStore::open(dir.path(), options, Arc::new(PosixFs)).unwrap();
    let held = store.append_order.hold();
    let (done_tx, done_rx) = mpsc::channel();
    std::thread::scope(|s| {
        s.spawn(|| {
            put(&store, b"k", b"v", false);
            done_tx.send(()).unwrap();
        });
        let done = done_rx.recv_timeout(Duration::from_secs(10));
        drop(held);
        done.expect("the put waited for the append order's lock");
    });
    assert_eq!(get(&store, b"k").as_deref(), Some(&b"v"[..]));
}
