//! The dedicated background threads of YoDB §3.4 ("a rebalance can be
//! invoked by a thread attempting to access the chunk or a dedicated
//! background thread"): `chunk_rebalance_threads` threads
//! (`thicket-rebalance-N`) build the funk rebalances (and splits) of the
//! chunks writers queue, so a put that finds its chunk's log past its
//! limit returns at once instead of building the new funk itself.
//!
//! A chunk is queued once: its `build_queued` flag stays set while it
//! waits and while it is built (a replaced chunk is never queued again;
//! one whose build did not replace it is cleared for the next writer).
//! A chunk a switch made counts its log from the tail copied into it (the
//! puts that came during its build), so a chunk written as fast as it is
//! built is not rebuilt for that tail alone. Backpressure: a writer that
//! finds the log grown past `BACKLOG_FACTOR` times its limit waits for the
//! build under way (or runs it itself), so logs stay bounded when the
//! threads fall behind (`ChunkStore::rebalance_past_limit`).
//!
//! The threads hold the store only through a `Weak` while idle, so they
//! never keep it alive; `close` (and dropping the store) stops them and
//! waits for the build under way, which `close` makes abandon: it finds
//! the store closed before its next piece or at its switch, and deletes
//! what it wrote (a file left by a crash is swept by the next open). A
//! build that fails fails the store as a failed write does
//! (`ChunkStore::fail`).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;

use parking_lot::{Condvar, Mutex};

use super::chunk::Chunk;
use super::rebalance::{self, IfBuilding};
use super::{ChunkSpace, ChunkStore};
use crate::error::{Error, Result};
use crate::stats::Counters;

/// A log grown this many times its limit past the tail its switch left
/// makes its writer wait for the chunk's build: twice leaves a build under
/// way the time of a whole log's worth of puts to finish before anyone
/// waits, and bounds a log (and a get's search of it) to about three
/// limits (a build merges at least the limit past the old tail, so a new
/// tail is at most about one limit).
pub(super) const BACKLOG_FACTOR: u64 = 2;

/// A chunk waiting for its build, and its keyspace.
struct Job {
    space: Arc<ChunkSpace>,
    chunk: Arc<Chunk>,
}

#[derive(Default)]
struct State {
    pending: VecDeque<Job>,
    /// The keyspace ids of the jobs the threads hold (one entry each).
    building: Vec<u32>,
    stopping: bool,
}

/// The queue the writers fill and the threads drain.
#[derive(Default)]
struct Queue {
    state: Mutex<State>,
    /// A job was queued, or the threads are stopping.
    ready: Condvar,
    /// A thread let go of its job.
    done: Condvar,
}

/// The background build threads of a store (none in a read-only store
/// or with `chunk_rebalance_threads = 0`).
#[derive(Default)]
pub(super) struct BuildQueue {
    queue: Arc<Queue>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    /// Set while threads run (read by every write past a log limit).
    running: AtomicBool,
}

impl BuildQueue {
    /// Starts `count` threads building for `store`.
    pub fn start(&self, store: &Arc<ChunkStore>, count: usize) -> Result<()> {
        let mut threads = self.threads.lock();
        for i in 0..count {
            let (queue, store) = (self.queue.clone(), Arc::downgrade(store));
            let thread = std::thread::Builder::new()
                .name(format!("thicket-rebalance-{i}"))
                .spawn(move || run(&queue, &store))
                .map_err(|e| Error::io(e, "spawning a rebalance thread"))?;
            threads.push(thread);
            self.running.store(true, Ordering::Release);
        }
        Ok(())
    }

    /// Whether builds go to the threads (else writers build themselves).
    pub fn is_running(&self) -> bool {
        self.running.load(Ordering::Acquire)
    }

    /// Queues `chunk` of `space` for a build unless it is queued or
    /// being built already.
    pub fn push(&self, space: &Arc<ChunkSpace>, chunk: &Arc<Chunk>, counters: &Counters) {
        if chunk.build_queued.swap(true, Ordering::AcqRel) {
            return;
        }
        let mut state = self.queue.state.lock();
        if state.stopping {
            return;
        }
        state.pending.push_back(Job {
            space: space.clone(),
            chunk: chunk.clone(),
        });
        Counters::add(&counters.chunk_funk_builds_queued, 1);
        self.queue.ready.notify_one();
    }

    /// Lets go of keyspace `id`'s chunks (it was dropped): its queued
    /// builds are dropped, and a build of it under way finishes (its
    /// switch finds the keyspace gone) and lets go first, so that its
    /// files go now (a retired chunk's go with its last holder).
    /// REQUIRES: no lock a build takes (the metadata lock, chunk locks).
    pub fn forget(&self, id: u32) {
        let mut state = self.queue.state.lock();
        let (forgotten, kept): (VecDeque<Job>, _) = std::mem::take(&mut state.pending)
            .into_iter()
            .partition(|job| job.space.id == id);
        state.pending = kept;
        while state.building.contains(&id) {
            self.queue.done.wait(&mut state);
        }
        drop(state);
        // Outside the lock: a retired chunk deletes its files on drop.
        drop(forgotten);
    }

    /// Returns once no build is queued or under way (tests: with no
    /// writes meanwhile, the store is settled).
    #[cfg(test)]
    pub fn wait_idle(&self) {
        let mut state = self.queue.state.lock();
        while !state.pending.is_empty() || !state.building.is_empty() {
            self.queue.done.wait(&mut state);
        }
    }

    /// Stops the threads: the queued builds are dropped, the one under
    /// way finishes (or abandons, once the store is closed) first.
    pub fn stop(&self) {
        self.running.store(false, Ordering::Release);
        let dropped = {
            let mut state = self.queue.state.lock();
            state.stopping = true;
            self.queue.ready.notify_all();
            std::mem::take(&mut state.pending)
        };
        // Outside the lock: a retired chunk deletes its files on drop.
        drop(dropped);
        let threads = std::mem::take(&mut *self.threads.lock());
        let me = std::thread::current().id();
        for thread in threads {
            // The store's last handle may go in a build thread itself; it
            // exits on its own once its build returns.
            if thread.thread().id() != me {
                // A panicked thread has nothing left to stop.
                let _ = thread.join();
            }
        }
    }
}

/// A build thread: takes the next job, builds it with the store held for
/// the build's length only.
fn run(queue: &Queue, store: &Weak<ChunkStore>) {
    loop {
        let job = {
            let mut state = queue.state.lock();
            loop {
                if state.stopping {
                    return;
                }
                if let Some(job) = state.pending.pop_front() {
                    state.building.push(job.space.id);
                    break job;
                }
                queue.ready.wait(&mut state);
            }
        };
        let id = job.space.id;
        if let Some(store) = store.upgrade() {
            run_job(&store, &job);
        }
        // The job (and with it a chunk) goes before `forget` learns so.
        drop(job);
        let mut state = queue.state.lock();
        if let Some(at) = state.building.iter().position(|&b| b == id) {
            state.building.swap_remove(at);
        }
        queue.done.notify_all();
    }
}

/// Runs one queued build; a failure fails the store.
fn run_job(store: &ChunkStore, job: &Job) {
    // A failed store's logs may end in a partial record: nothing more is
    // built until it is reopened.
    if store.closed.load(Ordering::Acquire) || store.failed.lock().is_some() {
        return;
    }
    let result = rebalance::rebalance(store, &job.space, &job.chunk, IfBuilding::Skip);
    // Not replaced (skipped, or failed): the next writer past the limit
    // queues it again.
    job.chunk.build_queued.store(false, Ordering::Release);
    match result {
        Ok(_) | Err(Error::Closed) => {}
        Err(e) => store.fail(&e),
    }
}
