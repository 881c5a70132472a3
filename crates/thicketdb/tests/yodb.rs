//! YoDB's chunked layout under concurrency: a linearizability check of
//! concurrent puts, gets and scans while chunks split and rebalance, and
//! concurrent puts across splits losing nothing.

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use thicketdb::{Db, Options, Profile, ReadOptions, Snapshot, WriteBatch};

/// `yodb` with limits that make chunks split, funks and munks rebalance and
/// munks and rows come and go constantly.
fn tiny(caches: bool) -> Options {
    let mut o = Profile::YoDb.options();
    o.chunk_size = 4 << 10;
    o.funk_log_limit = 1 << 10;
    o.funk_log_limit_with_munk = 2 << 10;
    o.log_filter_parts = 4;
    o.block_size = 512;
    o.munk_cache_bytes = if caches { 16 << 10 } else { 0 };
    o.row_cache_bytes = if caches { 2 << 10 } else { 0 };
    o
}

/// The tracked keys' values.
type State = BTreeMap<u8, Vec<u8>>;

#[derive(Debug, Clone)]
enum Call {
    /// One batch: a put, or puts of several keys (in several chunks) that
    /// a scan sees all or none of.
    Put(Vec<(u8, Vec<u8>)>),
    Get(u8, Option<Vec<u8>>),
    /// The tracked keys a scan returned, with their values.
    Scan(State),
}

/// One operation: what it did and when it was invoked and returned, on
/// one logical clock.
#[derive(Debug, Clone)]
struct Event {
    call: Call,
    invoked: u64,
    returned: u64,
}

/// Applies `call` to `state` if it is legal there.
fn step(state: &State, call: &Call) -> Option<State> {
    match call {
        Call::Put(puts) => {
            let mut next = state.clone();
            next.extend(puts.iter().cloned());
            Some(next)
        }
        Call::Get(k, got) => (state.get(k) == got.as_ref()).then(|| state.clone()),
        Call::Scan(got) => (got == state).then(|| state.clone()),
    }
}

/// Wing & Gong's search: is there an order of the events, consistent with
/// real time (an event returned before another was invoked comes first),
/// in which every call is legal from `initial`? Memoizes (done set, state).
fn linearizable(history: &[Event], initial: &State) -> bool {
    assert!(history.len() <= 128, "the search keeps a 128-bit done set");
    let mut seen = HashSet::new();
    search(history, 0u128, initial, &mut seen)
}

fn search(history: &[Event], done: u128, state: &State, seen: &mut HashSet<(u128, State)>) -> bool {
    if done.count_ones() as usize == history.len() {
        return true;
    }
    if !seen.insert((done, state.clone())) {
        return false;
    }
    let pending = || (0..history.len()).filter(|i| done & (1 << i) == 0);
    // Only an event invoked before every pending event returned can come
    // next.
    let first_return = pending().map(|i| history[i].returned).min().unwrap_or(0);
    for i in pending() {
        if history[i].invoked > first_return {
            continue;
        }
        if let Some(next) = step(state, &history[i].call) {
            if search(history, done | (1 << i), &next, seen) {
                return true;
            }
        }
    }
    false
}

const TRACKED: u8 = 6;

fn tracked_key(k: u8) -> Vec<u8> {
    format!("k{k:02}").into_bytes()
}

/// A value unique to its writer and write, long enough that a few make a
/// chunk split.
fn unique_value(thread: usize, n: usize) -> Vec<u8> {
    let mut v = format!("t{thread}-{n}-").into_bytes();
    v.resize(300, b'.');
    v
}

/// One round: `threads` threads run `ops` random puts, gets and scans on
/// the tracked keys while a filler thread writes untracked keys between
/// them (making chunks split); returns the history.
fn round(db: &Db, seed: u64, threads: usize, ops: usize) -> Vec<Event> {
    let clock = Arc::new(AtomicU64::new(0));
    let filler = {
        let db = db.clone();
        thread::spawn(move || {
            // Enough new keys between the tracked ones to split a few
            // chunks in every round.
            for n in 0..60u64 {
                let k = format!("k{:02}-filler-{seed:04}-{n:04}", n % u64::from(TRACKED));
                db.put(k, [b'f'; 300]).unwrap();
            }
        })
    };
    let workers: Vec<_> = (0..threads)
        .map(|t| {
            let (db, clock) = (db.clone(), clock.clone());
            thread::spawn(move || {
                let mut rng = StdRng::seed_from_u64(seed ^ (t as u64) << 32);
                let mut history = Vec::with_capacity(ops);
                for n in 0..ops {
                    let k = rng.random_range(0..TRACKED);
                    let invoked = clock.fetch_add(1, Ordering::SeqCst);
                    let call = match rng.random_range(0..10) {
                        0..4 => {
                            // Every other put is a batch of two keys.
                            let keys = match n % 2 {
                                0 => vec![k],
                                _ => vec![k, (k + 1 + rng.random_range(0..TRACKED - 1)) % TRACKED],
                            };
                            let v = unique_value(t, n);
                            let mut batch = WriteBatch::new();
                            for &k in &keys {
                                batch.put(tracked_key(k), &v).unwrap();
                            }
                            db.write(batch).unwrap();
                            Call::Put(keys.into_iter().map(|k| (k, v.clone())).collect())
                        }
                        4..8 => Call::Get(k, db.get(tracked_key(k)).unwrap()),
                        _ => {
                            // A snapshot reads the same twice: no write
                            // numbered below it lands after it was taken.
                            let snapshot = db.snapshot();
                            let first = scan_tracked(&db, Some(&snapshot));
                            thread::yield_now();
                            assert_eq!(first, scan_tracked(&db, Some(&snapshot)));
                            Call::Scan(first)
                        }
                    };
                    let returned = clock.fetch_add(1, Ordering::SeqCst);
                    history.push(Event {
                        call,
                        invoked,
                        returned,
                    });
                }
                history
            })
        })
        .collect();
    let history: Vec<Event> = workers
        .into_iter()
        .flat_map(|w| w.join().unwrap())
        .collect();
    filler.join().unwrap();
    history
}

/// The tracked keys of one scan over all of them (and the fillers), at
/// `snapshot` or now.
fn scan_tracked(db: &Db, snapshot: Option<&Snapshot>) -> State {
    let opts = ReadOptions {
        lower_bound: Some(tracked_key(0)),
        upper_bound: Some(tracked_key(TRACKED)),
        snapshot: snapshot.cloned(),
        ..ReadOptions::default()
    };
    let mut it = db.iter(opts).unwrap();
    it.seek_to_first();
    let mut state = State::new();
    while it.valid() {
        let key = it.key();
        if key.len() == 3 {
            let k = std::str::from_utf8(&key[1..]).unwrap().parse().unwrap();
            state.insert(k, it.value().to_vec());
        }
        it.next();
    }
    it.status().unwrap();
    state
}

#[test]
fn concurrent_puts_gets_and_scans_are_linearizable_across_splits() {
    // The last: writers build funk rebalances themselves (no build thread).
    for (caches, array_list, builders) in [
        (false, false, 1),
        (true, false, 1),
        (true, true, 1),
        (true, false, 0),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let mut options = tiny(caches);
        options.munk_array_list = array_list;
        options.chunk_rebalance_threads = builders;
        let db = Db::open(dir.path(), options).unwrap();
        for r in 0..25u64 {
            // A known starting state: every tracked key written.
            let mut initial = State::new();
            for k in 0..TRACKED {
                let v = unique_value(99, r as usize * 100 + usize::from(k));
                db.put(tracked_key(k), &v).unwrap();
                initial.insert(k, v);
            }
            let history = round(&db, r, 4, 20);
            assert!(
                linearizable(&history, &initial),
                "caches {caches}, array-list munks {array_list}, build threads {builders}, \
                 round {r}: not linearizable: {history:#?}"
            );
        }
        let stats = db.stats();
        assert!(stats.chunk_splits > 20, "{stats:?}");
        if caches {
            assert!(stats.chunk_munk_loads > 0 && stats.chunk_gets_from_munk > 0);
        }
        if caches && !array_list {
            assert!(stats.chunk_gets_from_row_cache > 0);
        }
    }
}

/// The checker rejects what it must: a get that sees a put invoked after
/// it returned, and a scan that sees a later put but not an earlier one.
#[test]
fn the_checker_rejects_non_linearizable_histories() {
    let v = |s: &str| s.as_bytes().to_vec();
    let initial: State = [(0, v("a0")), (1, v("b0"))].into();
    let event = |call, invoked, returned| Event {
        call,
        invoked,
        returned,
    };
    let from_the_future = [
        event(Call::Get(0, Some(v("a1"))), 0, 1),
        event(Call::Put(vec![(0, v("a1"))]), 2, 3),
    ];
    assert!(!linearizable(&from_the_future, &initial));
    let torn_scan = [
        event(Call::Put(vec![(0, v("a1"))]), 0, 1),
        event(Call::Put(vec![(1, v("b1"))]), 2, 3),
        event(Call::Scan([(0, v("a0")), (1, v("b1"))].into()), 4, 5),
    ];
    assert!(!linearizable(&torn_scan, &initial));
    let torn_batch = [
        event(Call::Put(vec![(0, v("a1")), (1, v("b1"))]), 0, 3),
        event(Call::Scan([(0, v("a1")), (1, v("b0"))].into()), 1, 2),
    ];
    assert!(!linearizable(&torn_batch, &initial));
    // Overlapping calls may take either order.
    let concurrent = [
        event(Call::Put(vec![(0, v("a1"))]), 0, 3),
        event(Call::Get(0, Some(v("a0"))), 1, 2),
        event(Call::Get(0, Some(v("a1"))), 4, 5),
    ];
    assert!(linearizable(&concurrent, &initial));
}

#[test]
fn concurrent_puts_across_splits_lose_nothing() {
    for (caches, builders) in [(false, 1), (true, 1), (true, 0)] {
        let dir = tempfile::tempdir().unwrap();
        let mut options = tiny(caches);
        options.chunk_rebalance_threads = builders;
        let db = Db::open(dir.path(), options).unwrap();
        let writers: Vec<_> = (0..4u64)
            .map(|t| {
                let db = db.clone();
                thread::spawn(move || {
                    for n in 0..1500u64 {
                        // Interleaved key ranges: every writer splits
                        // chunks the others write to.
                        let key = format!("key{:08}", n * 4 + t);
                        db.put(&key, format!("{key}-value")).unwrap();
                    }
                })
            })
            .collect();
        for w in writers {
            w.join().unwrap();
        }
        // Puts go on while a chunk's new funks are built, so one split
        // may cut a chunk into many, and how many depends on the timing:
        // ask only that the data was split well past one chunk.
        let stats = db.stats();
        assert!(stats.chunk_splits > 0 && stats.chunks > 10, "{stats:?}");
        let mut it = db.iter(ReadOptions::default()).unwrap();
        it.seek_to_first();
        let mut n = 0u64;
        while it.valid() {
            let key = format!("key{n:08}");
            assert_eq!(it.key(), key.as_bytes());
            assert_eq!(it.value(), format!("{key}-value").as_bytes());
            n += 1;
            it.next();
        }
        it.status().unwrap();
        assert_eq!(n, 6000, "caches {caches}, build threads {builders}");
        for n in (0..6000u64).step_by(7) {
            let key = format!("key{n:08}");
            assert_eq!(
                db.get(&key).unwrap(),
                Some(format!("{key}-value").into_bytes())
            );
        }
    }
}
