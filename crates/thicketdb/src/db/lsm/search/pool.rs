//! The search threads: a FIFO of jobs (point lookups' query objects,
//! parallel seeks); each thread takes one piece of the first job that still
//! has one: for a lookup, the newest untaken candidate, probed and its
//! answer recorded (SifrDB's selection, search and update steps). A job
//! with nothing left to take leaves the queue; probes still running for a
//! decided lookup are discarded when they end.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use parking_lot::{Condvar, Mutex};

use super::query::Query;
use super::seek::ParallelSeek;
use crate::error::{Error, Result};
use crate::iterator::InternalIterator;
use crate::stats::Counters;

/// Work the search threads share with the caller that submitted it.
pub(crate) trait Job: Send + Sync {
    /// Runs one piece; false when none was left to take. A job counting
    /// the blocks its pieces read counts those of a search thread (the
    /// caller counts its own) before publishing the piece's answer, so
    /// that a caller reading the statistics after its result sees them.
    fn run_one(&self, counters: &Counters, on_search_thread: bool) -> bool;
    /// Whether a piece is left to take.
    fn has_work(&self) -> bool;
}

struct Shared {
    queue: Mutex<VecDeque<Arc<dyn Job>>>,
    work: Condvar,
    stop: AtomicBool,
    counters: Arc<Counters>,
}

pub(crate) struct SearchPool {
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
}

impl SearchPool {
    /// Starts `threads` search threads.
    pub fn start(threads: usize, counters: Arc<Counters>) -> Result<SearchPool> {
        let shared = Arc::new(Shared {
            queue: Mutex::new(VecDeque::new()),
            work: Condvar::new(),
            stop: AtomicBool::new(false),
            counters,
        });
        let threads = (0..threads)
            .map(|n| {
                let shared = shared.clone();
                std::thread::Builder::new()
                    .name(format!("thicket-search-{n}"))
                    .spawn(move || search_loop(&shared))
                    .map_err(|e| Error::io(e, "starting a search thread"))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(SearchPool { shared, threads })
    }

    /// Runs `query` on the search threads and on the caller's, and returns
    /// its result and the candidate that decided it.
    pub fn search(&self, query: Query) -> (Result<Option<Vec<u8>>>, Option<usize>) {
        let query = Arc::new(query);
        self.run(query.clone());
        (query.wait(), query.decided_by())
    }

    /// Queues `job` and works on it on the caller's thread too: on a
    /// machine with few cores the caller would otherwise only wait.
    fn run(&self, job: Arc<dyn Job>) {
        self.shared.queue.lock().push_back(job.clone());
        self.shared.work.notify_all();
        while job.run_one(&self.shared.counters, false) {}
    }
}

impl crate::db::iter::ParallelSeek for SearchPool {
    /// Seeks `children` to `target` on the search threads and the caller's.
    fn seek(
        &self,
        children: Vec<Box<dyn InternalIterator>>,
        target: &[u8],
    ) -> Vec<Box<dyn InternalIterator>> {
        let seek = Arc::new(ParallelSeek::new(children, target));
        self.run(seek.clone());
        seek.wait()
    }
}

impl Drop for SearchPool {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        {
            let _queue = self.shared.queue.lock();
            self.shared.work.notify_all();
        }
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

fn search_loop(shared: &Shared) {
    loop {
        let job = {
            let mut queue = shared.queue.lock();
            loop {
                if shared.stop.load(Ordering::Acquire) {
                    return;
                }
                // FIFO: jobs that have nothing left to take leave.
                while queue.front().is_some_and(|j| !j.has_work()) {
                    queue.pop_front();
                }
                match queue.front() {
                    Some(job) => break job.clone(),
                    None => shared.work.wait(&mut queue),
                }
            }
        };
        job.run_one(&shared.counters, true);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::db::iter::ParallelSeek as _;
    use crate::db::lsm::search::query::tests::{query, versions_of_k};

    #[test]
    fn the_newest_version_wins_when_its_probe_finishes_last() {
        let counters = Arc::new(Counters::default());
        let pool = SearchPool::start(3, counters.clone()).unwrap();
        for slow in 0..4 {
            let mut q = query(versions_of_k());
            q.probe_delays = vec![Duration::ZERO; 4];
            q.probe_delays[slow] = Duration::from_millis(30);
            assert_eq!(pool.search(q), (Ok(None), Some(1)), "probe {slow} delayed");
        }
        let mut q = query(versions_of_k().split_off(2));
        q.probe_delays = vec![Duration::from_millis(30), Duration::ZERO];
        assert_eq!(pool.search(q), (Ok(Some(b"v20".to_vec())), Some(0)));
        assert!(Counters::get(&counters.search_probes) >= 10);
    }

    #[test]
    fn a_parallel_seek_positions_every_source_and_keeps_their_order() {
        use crate::format::internal_key::{user_key, InternalKey, ValueKind, MAX_SEQUENCE};
        use crate::iterator::VecIterator;
        let pool = SearchPool::start(3, Arc::new(Counters::default())).unwrap();
        let source = |keys: &[&str]| -> Box<dyn InternalIterator> {
            Box::new(VecIterator::new(
                keys.iter()
                    .map(|k| {
                        (
                            InternalKey::new(k.as_bytes(), 1, ValueKind::Value).into_vec(),
                            Vec::new(),
                        )
                    })
                    .collect(),
                crate::format::KeyOrder::Bytewise,
            ))
        };
        let children = vec![
            source(&["a", "d"]),
            source(&["b", "e"]),
            source(&["c"]),
            source(&["f", "g"]),
            source(&[]),
        ];
        let target = InternalKey::new(b"c", MAX_SEQUENCE, ValueKind::SEEK).into_vec();
        let sought = pool.seek(children, &target);
        let at: Vec<Option<&[u8]>> = sought
            .iter()
            .map(|c| c.valid().then(|| user_key(c.key())))
            .collect();
        let expected: [Option<&[u8]>; 5] = [Some(b"d"), Some(b"e"), Some(b"c"), Some(b"f"), None];
        assert_eq!(at, expected);
    }

    #[test]
    fn a_pool_stops_its_threads_when_dropped() {
        let counters = Arc::new(Counters::default());
        let pool = SearchPool::start(2, counters.clone()).unwrap();
        assert_eq!(Arc::strong_count(&counters), 2, "the pool's shared state");
        drop(pool);
        // The threads held the shared state: joined, they released it.
        assert_eq!(Arc::strong_count(&counters), 1);
    }
}
