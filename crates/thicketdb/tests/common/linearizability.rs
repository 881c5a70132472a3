//! Wing & Gong's linearizability check of concurrent puts, gets and scans
//! on a few tracked keys, and the rounds that record such histories while
//! a background thread keeps the store busy (chunk splits, flushes,
//! compactions: whatever the caller's `background` does).

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use thicketdb::{Db, ReadOptions, Snapshot, WriteBatch};

/// The tracked keys' values.
pub type State = BTreeMap<u8, Vec<u8>>;

#[derive(Debug, Clone)]
pub enum Call {
    /// One batch: a put, or puts of several keys (in several chunks or
    /// tables) that a scan sees all or none of.
    Put(Vec<(u8, Vec<u8>)>),
    Get(u8, Option<Vec<u8>>),
    /// The tracked keys a scan returned, with their values.
    Scan(State),
}

/// One operation: what it did and when it was invoked and returned, on
/// one logical clock.
#[derive(Debug, Clone)]
pub struct Event {
    pub call: Call,
    pub invoked: u64,
    pub returned: u64,
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
pub fn linearizable(history: &[Event], initial: &State) -> bool {
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

pub const TRACKED: u8 = 6;

pub fn tracked_key(k: u8) -> Vec<u8> {
    format!("k{k:02}").into_bytes()
}

/// An untracked key between tracked ones (`n` picks which), unique to
/// `seed` and `n`: writing them splits chunks and fills memtables around
/// the tracked keys.
pub fn filler_key(seed: u64, n: u64) -> Vec<u8> {
    format!("k{:02}-filler-{seed:04}-{n:04}", n % u64::from(TRACKED)).into_bytes()
}

/// A value unique to its writer and write, long enough that a few make a
/// chunk split.
pub fn unique_value(thread: usize, n: usize) -> Vec<u8> {
    let mut v = format!("t{thread}-{n}-").into_bytes();
    v.resize(300, b'.');
    v
}

/// Writes every tracked key with a value unique to `round`: the known
/// state a round starts from.
pub fn write_initial(db: &Db, round: u64) -> State {
    let mut initial = State::new();
    for k in 0..TRACKED {
        let v = unique_value(99, round as usize * 100 + usize::from(k));
        db.put(tracked_key(k), &v).unwrap();
        initial.insert(k, v);
    }
    initial
}

/// Operations a worker runs per step of the background thread: a
/// worker's `n`th operation waits until the background thread has begun
/// step `n / OPS_PER_STEP`, so every history spans all its steps however
/// the threads are scheduled.
const OPS_PER_STEP: usize = 5;

/// One round: `threads` threads run `ops` random puts, gets and scans on
/// the tracked keys while a background thread runs `background(db, step)`
/// for steps 0, 1, ... (one per `OPS_PER_STEP` operations of a worker);
/// returns the history.
pub fn round(
    db: &Db,
    seed: u64,
    threads: usize,
    ops: usize,
    background: impl Fn(&Db, u64) + Send + 'static,
) -> Vec<Event> {
    let clock = Arc::new(AtomicU64::new(0));
    let steps_begun = Arc::new(AtomicU64::new(0));
    let busy = {
        let (db, steps_begun) = (db.clone(), steps_begun.clone());
        thread::spawn(move || {
            for step in 0..ops.div_ceil(OPS_PER_STEP) as u64 {
                steps_begun.store(step + 1, Ordering::SeqCst);
                background(&db, step);
            }
        })
    };
    let workers: Vec<_> = (0..threads)
        .map(|t| {
            let (db, clock, steps_begun) = (db.clone(), clock.clone(), steps_begun.clone());
            thread::spawn(move || {
                let mut rng = StdRng::seed_from_u64(seed ^ (t as u64) << 32);
                let mut history = Vec::with_capacity(ops);
                for n in 0..ops {
                    while steps_begun.load(Ordering::SeqCst) <= (n / OPS_PER_STEP) as u64 {
                        thread::yield_now();
                    }
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
    busy.join().unwrap();
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
