//! The chunked layout's synchronisation: puts to other chunks, and to the
//! chunk itself, go on while a funk is built (only its switch stops
//! them); splits under concurrent puts lose nothing; syncing writers
//! share fsyncs; concurrent puts, gets and scans are linearizable.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use super::tests::{tiny, tiny_uncached};
use super::ChunkStore;
use crate::db::{ReadOptions, WriteBatch, WriteOptions};
use crate::io::fault::FaultFs;
use crate::io::PosixFs;
use crate::options::Options;

/// How long a test waits for something that must happen before it calls
/// the code under test stuck (a liveness guard, not a timing assertion).
const STUCK: Duration = Duration::from_secs(120);

fn put(store: &ChunkStore, key: &[u8], value: &[u8], sync: bool) {
    let mut batch = WriteBatch::new();
    batch.put(key, value).unwrap();
    let opts = WriteOptions {
        sync,
        ..WriteOptions::default()
    };
    store.write(batch, opts).unwrap();
}

fn get(store: &ChunkStore, key: &[u8]) -> Option<Vec<u8>> {
    store
        .get(store.default_space(), key, &ReadOptions::default())
        .unwrap()
}

fn open(dir: &std::path::Path, options: Options) -> Arc<ChunkStore> {
    Arc::new(ChunkStore::open(dir, options, Arc::new(PosixFs)).unwrap())
}

/// A store of at least `chunks` chunks: keys `k0000` to `k0999`, split
/// by `compact_range`.
fn split_store(dir: &std::path::Path, options: Options, chunks: usize) -> Arc<ChunkStore> {
    let store = open(dir, options);
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
    let store = split_store(dir.path(), tiny_uncached(), 3);
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
    building_rx.recv_timeout(STUCK).expect("a funk build started");
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
        let last = (i..400).rev().find(|j| j * 997 % 1000 == i * 997 % 1000).unwrap();
        assert_eq!(get(&store, key.as_bytes()), Some(format!("new{last}").into_bytes()));
        assert_eq!(get(&store, format!("a-mid{i:04}").as_bytes()), Some(b"mid".to_vec()));
    }
}

#[test]
fn splits_under_concurrent_puts_lose_nothing() {
    for options in [tiny(), tiny_uncached()] {
        let dir = tempfile::tempdir().unwrap();
        let store = open(dir.path(), options.clone());
        let threads: Vec<_> = (0..4u32)
            .map(|t| {
                let store = store.clone();
                std::thread::spawn(move || {
                    for i in 0..1500u32 {
                        // Interleaved key ranges: every chunk takes puts
                        // from every thread.
                        let key = format!("{:05}-{t}", i * 7 % 1500);
                        put(&store, key.as_bytes(), format!("{t}:{i}").as_bytes(), false);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let stats = store.stats();
        assert!(
            stats.chunk_splits > 0 && stats.chunks > 4,
            "{} splits, {} rebalances, {} skipped, {} chunks",
            stats.chunk_splits,
            stats.chunk_funk_rebalances,
            stats.chunk_funk_builds_skipped,
            stats.chunks
        );
        let check = |store: &ChunkStore| {
            for t in 0..4u32 {
                for i in 0..1500u32 {
                    let key = format!("{:05}-{t}", i * 7 % 1500);
                    assert_eq!(
                        get(store, key.as_bytes()),
                        Some(format!("{t}:{i}").into_bytes()),
                        "{key}"
                    );
                }
            }
        };
        check(&store);
        store.close().unwrap();
        drop(store);
        check(&open(dir.path(), options));
    }
}

#[test]
fn syncing_writers_share_one_sync_per_chunk_log() {
    let fs = FaultFs::new();
    let dir = std::path::Path::new("/db");
    let store = {
        let store = ChunkStore::open(dir, tiny_uncached(), Arc::new(fs.clone())).unwrap();
        for i in 0..1000u32 {
            put(&store, format!("k{i:04}").as_bytes(), &[b'a'; 64], false);
        }
        store
            .compact_range(store.default_space(), None, None)
            .unwrap();
        Arc::new(store)
    };
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
    // Holding the metadata lock stops the first sync round before it
    // syncs anything: every writer appends meanwhile.
    let meta = store.writer.lock();
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
    drop(meta);
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

/// An operation of the linearizability test and what it saw.
#[derive(Clone, Debug)]
enum Op {
    Put { key: u8, value: u32 },
    Get { key: u8, seen: Option<u32> },
    Scan { seen: BTreeMap<u8, u32> },
}

/// One completed operation: what it did and when (a global counter
/// read before its call and after its return).
#[derive(Clone, Debug)]
struct Event {
    op: Op,
    call: u64,
    ret: u64,
}

/// Whether `history` has a linearization: an order of its operations,
/// each placed between its call and its return, in which every get and
/// scan sees exactly `initial` and the puts before it (Wing & Gong's
/// search, with the states reached memoised).
fn linearizable(history: &[Event], initial: BTreeMap<u8, u32>) -> bool {
    fn search(
        history: &[Event],
        done: &mut Vec<bool>,
        state: &mut BTreeMap<u8, u32>,
        seen: &mut std::collections::HashSet<(Vec<bool>, Vec<(u8, u32)>)>,
    ) -> bool {
        if done.iter().all(|&d| d) {
            return true;
        }
        let memo = (done.clone(), state.iter().map(|(&k, &v)| (k, v)).collect());
        if !seen.insert(memo) {
            return false;
        }
        // Only an operation called before every pending one returned
        // can go first.
        let horizon = history
            .iter()
            .zip(done.iter())
            .filter(|(_, &d)| !d)
            .map(|(e, _)| e.ret)
            .min()
            .unwrap_or(u64::MAX);
        for i in 0..history.len() {
            if done[i] || history[i].call > horizon {
                continue;
            }
            let fits = match &history[i].op {
                Op::Put { .. } => true,
                Op::Get { key, seen } => state.get(key) == seen.as_ref(),
                Op::Scan { seen } => state == seen,
            };
            if !fits {
                continue;
            }
            let undo = match &history[i].op {
                Op::Put { key, value } => Some((*key, state.insert(*key, *value))),
                _ => None,
            };
            done[i] = true;
            if search(history, done, state, seen) {
                return true;
            }
            done[i] = false;
            if let Some((key, old)) = undo {
                match old {
                    Some(v) => state.insert(key, v),
                    None => state.remove(&key),
                };
            }
        }
        false
    }
    let mut done = vec![false; history.len()];
    search(history, &mut done, &mut initial.clone(), &mut Default::default())
}

#[test]
fn the_checker_refuses_a_scan_that_sees_puts_out_of_order() {
    // Put a=1 returns before put b=1 is called; a scan overlapping b's
    // put sees b but not a: no order explains it.
    let history = vec![
        Event { op: Op::Put { key: 1, value: 1 }, call: 0, ret: 1 },
        Event { op: Op::Put { key: 2, value: 1 }, call: 2, ret: 5 },
        Event { op: Op::Scan { seen: [(2, 1)].into() }, call: 3, ret: 4 },
    ];
    assert!(!linearizable(&history, BTreeMap::new()));
    let mut fixed = history.clone();
    fixed[2].op = Op::Scan { seen: [(1, 1), (2, 1)].into() };
    assert!(linearizable(&fixed, BTreeMap::new()));
}

/// Every key and value of the store, as the linearizability test writes
/// them (`keyNN`, a value starting with a big-endian `u32`).
fn scan_state(store: &ChunkStore) -> BTreeMap<u8, u32> {
    let mut seen = BTreeMap::new();
    let mut it = store
        .iter(store.default_space(), ReadOptions::default())
        .unwrap();
    it.seek_to_first();
    while it.valid() {
        let k: u8 = std::str::from_utf8(&it.key()[3..]).unwrap().parse().unwrap();
        seen.insert(k, u32::from_be_bytes(it.value()[..4].try_into().unwrap()));
        it.next();
    }
    it.status().unwrap();
    seen
}

#[test]
fn concurrent_puts_gets_and_scans_are_linearizable_across_splits() {
    let dir = tempfile::tempdir().unwrap();
    let mut options = tiny_uncached();
    // Splits of a small key range: tiny chunks, long values.
    options.chunk_size = 4 << 10;
    let store = open(dir.path(), options);
    let clock = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let key_of = |k: u8| format!("key{k:02}").into_bytes();
    for round in 0..60u32 {
        // The state before the round (no operation runs).
        let before = scan_state(&store);
        let threads: Vec<_> = (0..4u32)
            .map(|t| {
                let (store, clock) = (store.clone(), clock.clone());
                std::thread::spawn(move || {
                    let mut events = Vec::new();
                    for i in 0..3u32 {
                        let call = clock.fetch_add(1, Ordering::SeqCst);
                        let key = ((round * 7 + t * 3 + i) % 16) as u8;
                        let op = match (t + i) % 3 {
                            0 | 1 if t < 2 => {
                                let value = round * 100 + t * 10 + i;
                                let mut v = value.to_be_bytes().to_vec();
                                v.resize(400, b'.');
                                put(&store, &key_of(key), &v, false);
                                Op::Put { key, value }
                            }
                            2 => {
                                let seen = scan_state(&store);
                                Op::Scan { seen }
                            }
                            _ => {
                                let seen = get(&store, &key_of(key))
                                    .map(|v| u32::from_be_bytes(v[..4].try_into().unwrap()));
                                Op::Get { key, seen }
                            }
                        };
                        let ret = clock.fetch_add(1, Ordering::SeqCst);
                        events.push(Event { op, call, ret });
                    }
                    events
                })
            })
            .collect();
        let mut history: Vec<Event> = threads
            .into_iter()
            .flat_map(|t| t.join().unwrap())
            .collect();
        history.sort_by_key(|e| e.call);
        assert!(
            linearizable(&history, before),
            "round {round}: {history:#?}"
        );
    }
    assert!(store.stats().chunk_splits > 0);
}
