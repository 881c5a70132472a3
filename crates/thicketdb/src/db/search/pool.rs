//! The search threads: a FIFO of query objects; each thread takes the
//! newest untaken candidate of the first query that still has one, probes
//! it, and records the answer (SifrDB's selection, search and update
//! steps). A query whose result is decided leaves the queue; probes still
//! running for it are discarded when they end.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use parking_lot::{Condvar, Mutex};

use super::query::Query;
use crate::error::{Error, Result};
use crate::stats::Counters;

struct Shared {
    queue: Mutex<VecDeque<Arc<Query>>>,
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
    /// its result.
    pub fn search(&self, query: Query) -> Result<Option<Vec<u8>>> {
        let query = Arc::new(query);
        self.shared.queue.lock().push_back(query.clone());
        self.shared.work.notify_all();
        // The caller is one more search thread for its own query: on a
        // machine with few cores it would otherwise only wait.
        while let Some(i) = query.take() {
            let answer = query.probe(i);
            count(&self.shared.counters, query.answer(i, answer));
        }
        query.wait()
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
                // FIFO: queries that have nothing left to take leave.
                while queue.front().is_some_and(|q| !q.has_work()) {
                    queue.pop_front();
                }
                if let Some(q) = queue.front().cloned() {
                    if let Some(i) = q.take() {
                        break (q, i);
                    }
                    continue;
                }
                shared.work.wait(&mut queue);
            }
        };
        let (query, i) = job;
        let answer = query.probe(i);
        count(&shared.counters, query.answer(i, answer));
    }
}

fn count(counters: &Counters, kept: bool) {
    Counters::add(&counters.search_probes, 1);
    if !kept {
        Counters::add(&counters.search_probes_discarded, 1);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::db::search::query::tests::{query, versions_of_k};

    #[test]
    fn the_newest_version_wins_when_its_probe_finishes_last() {
        let counters = Arc::new(Counters::default());
        let pool = SearchPool::start(3, counters.clone()).unwrap();
        for slow in 0..4 {
            let mut q = query(versions_of_k());
            q.probe_delays = vec![Duration::ZERO; 4];
            q.probe_delays[slow] = Duration::from_millis(30);
            assert_eq!(pool.search(q), Ok(None), "probe {slow} delayed");
        }
        let mut q = query(versions_of_k().split_off(2));
        q.probe_delays = vec![Duration::from_millis(30), Duration::ZERO];
        assert_eq!(pool.search(q), Ok(Some(b"v20".to_vec())));
        assert!(Counters::get(&counters.search_probes) >= 10);
    }

    #[test]
    fn a_pool_stops_its_threads_when_dropped() {
        let pool = SearchPool::start(2, Arc::new(Counters::default())).unwrap();
        drop(pool);
    }
}
