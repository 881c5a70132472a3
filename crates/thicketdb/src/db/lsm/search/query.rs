//! The query object of SifrDB's parallel search: COUNTER (candidates
//! taken), LOCALR (each candidate's answer) and GLOBALR (the final answer,
//! set as soon as it is decided).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use parking_lot::{Condvar, Mutex};

use super::pool::Job;
use crate::db::probe::{probe_table, Probe};
use crate::error::Result;
use crate::stats::Counters;
use crate::table::{blocks_read_on_this_thread, Table};

struct State {
    /// COUNTER: candidates taken so far, newest first.
    taken: usize,
    /// LOCALR: each candidate's answer once it has one.
    answers: Vec<Option<Result<Probe>>>,
    /// GLOBALR: the lookup's result once decided.
    result: Option<Result<Option<Vec<u8>>>>,
    /// The candidate whose answer decided it (none when all were absent).
    decided_by: Option<usize>,
}

/// A point lookup shared by the caller and the search threads. Holding it
/// keeps the candidates' tables open; the caller's super version, which it
/// also holds, keeps their files from being released while probes run.
pub(crate) struct Query {
    lookup: Vec<u8>,
    fill_cache: bool,
    /// Newest first.
    candidates: Vec<Arc<Table>>,
    /// Keeps the version the candidates came from (and its files) alive
    /// until the last probe ends, on whichever thread.
    _pin: Arc<dyn Send + Sync>,
    state: Mutex<State>,
    decided: AtomicBool,
    decided_cv: Condvar,
    /// Tests delay chosen probes to finish them out of order.
    #[cfg(test)]
    pub probe_delays: Vec<std::time::Duration>,
}

impl Query {
    pub fn new(
        lookup: Vec<u8>,
        fill_cache: bool,
        candidates: Vec<Arc<Table>>,
        pin: Arc<dyn Send + Sync>,
    ) -> Query {
        let n = candidates.len();
        Query {
            lookup,
            fill_cache,
            candidates,
            _pin: pin,
            state: Mutex::new(State {
                taken: 0,
                answers: vec![None; n],
                result: if n == 0 { Some(Ok(None)) } else { None },
                decided_by: None,
            }),
            decided: AtomicBool::new(n == 0),
            decided_cv: Condvar::new(),
            #[cfg(test)]
            probe_delays: Vec::new(),
        }
    }

    /// Step (i): the newest candidate nobody took yet, unless the result is
    /// decided.
    pub fn take(&self) -> Option<usize> {
        let mut state = self.state.lock();
        if state.result.is_some() || state.taken == self.candidates.len() {
            return None;
        }
        state.taken += 1;
        Some(state.taken - 1)
    }

    /// Whether a search thread could still take a candidate.
    pub fn has_work(&self) -> bool {
        let state = self.state.lock();
        state.result.is_none() && state.taken < self.candidates.len()
    }

    /// Step (ii): probes candidate `i`.
    pub fn probe(&self, i: usize) -> Result<Probe> {
        #[cfg(test)]
        if let Some(delay) = self.probe_delays.get(i) {
            std::thread::sleep(*delay);
        }
        probe_table(
            &self.candidates[i],
            &self.lookup,
            self.fill_cache,
            <[u8]>::to_vec,
        )
    }

    /// Step (iii): records candidate `i`'s answer and decides the result
    /// when it can. Returns false when the result was already decided and
    /// the answer is discarded.
    pub fn answer(&self, i: usize, answer: Result<Probe>) -> bool {
        let mut state = self.state.lock();
        if state.result.is_some() {
            return false;
        }
        state.answers[i] = Some(answer);
        if let Some((result, by)) = decide(&state.answers) {
            state.result = Some(result);
            state.decided_by = by;
            self.decided.store(true, Ordering::Release);
            self.decided_cv.notify_all();
        }
        true
    }

    /// The candidate whose answer decided the result, once decided.
    pub fn decided_by(&self) -> Option<usize> {
        self.state.lock().decided_by
    }

    /// The result, waiting for it: spinning first (the answer is usually
    /// microseconds away and a context switch costs more), then parked.
    pub fn wait(&self) -> Result<Option<Vec<u8>>> {
        for _ in 0..SPINS {
            if self.decided.load(Ordering::Acquire) {
                break;
            }
            std::hint::spin_loop();
        }
        let mut state = self.state.lock();
        loop {
            if let Some(result) = &state.result {
                return result.clone();
            }
            self.decided_cv.wait(&mut state);
        }
    }
}

impl Job for Query {
    fn run_one(&self, counters: &Counters, on_search_thread: bool) -> bool {
        let Some(i) = self.take() else {
            return false;
        };
        let before = blocks_read_on_this_thread();
        let answer = self.probe(i);
        // A lookup's reads are its read amplification, on whichever thread.
        if on_search_thread {
            Counters::add(
                &counters.get_blocks_read,
                blocks_read_on_this_thread() - before,
            );
        }
        let kept = self.answer(i, answer);
        Counters::add(&counters.search_probes, 1);
        if !kept {
            Counters::add(&counters.search_probes_discarded, 1);
        }
        true
    }

    fn has_work(&self) -> bool {
        Query::has_work(self)
    }
}

/// Spins before parking in `Query::wait`.
const SPINS: usize = 4_000;

/// The result the answers so far decide, and the candidate that decided
/// it: the newest candidate's answer once every newer candidate answered
/// `Absent` (an error counts as an answer), or `None` when all answered
/// `Absent`.
type Decided = (Result<Option<Vec<u8>>>, Option<usize>);

fn decide(answers: &[Option<Result<Probe>>]) -> Option<Decided> {
    for (i, answer) in answers.iter().enumerate() {
        let result = match answer {
            None => return None,
            Some(Ok(Probe::Absent)) => continue,
            Some(Ok(Probe::Found(v))) => Ok(Some(v.clone())),
            Some(Ok(Probe::Deleted)) => Ok(None),
            Some(Err(e)) => Err(e.clone()),
        };
        return Some((result, Some(i)));
    }
    Some((Ok(None), None))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::error::Error;
    use crate::format::internal_key::{InternalKey, ValueKind};
    use crate::table::testutil::{build_table, lookup_key, open_table};
    use crate::table::TableOptions;

    /// A table holding `key` at `seq` as `kind` with `value` (or nothing
    /// for an empty `key`, a table of one other key).
    fn table(key: &str, seq: u64, kind: ValueKind, value: &str) -> Arc<Table> {
        let entry = if key.is_empty() {
            (
                InternalKey::new(b"other", seq, ValueKind::Value).into_vec(),
                Vec::new(),
            )
        } else {
            (
                InternalKey::new(key.as_bytes(), seq, kind).into_vec(),
                value.as_bytes().to_vec(),
            )
        };
        let (file, summary) = build_table(&[entry], &TableOptions::DEFAULT);
        open_table(file, &summary, None).unwrap()
    }

    /// Newest first: nothing, a deletion, a value, an older value.
    pub(crate) fn versions_of_k() -> Vec<Arc<Table>> {
        vec![
            table("", 40, ValueKind::Value, ""),
            table("k", 30, ValueKind::Deletion, ""),
            table("k", 20, ValueKind::Value, "v20"),
            table("k", 10, ValueKind::Value, "v10"),
        ]
    }

    pub(crate) fn query(tables: Vec<Arc<Table>>) -> Query {
        Query::new(lookup_key(b"k"), true, tables, Arc::new(()))
    }

    #[test]
    fn answers_in_any_order_decide_the_newest_version() {
        // Every order of the four answers.
        let orders = [[0, 1, 2, 3], [3, 2, 1, 0], [2, 0, 3, 1], [1, 3, 0, 2]];
        for order in orders {
            let q = query(versions_of_k());
            let taken: Vec<usize> = std::iter::from_fn(|| q.take()).collect();
            assert_eq!(taken, [0, 1, 2, 3], "newest first");
            let mut kept = Vec::new();
            for i in order {
                kept.push(q.answer(i, q.probe(i)));
            }
            assert_eq!(q.wait(), Ok(None), "the deletion at 30 wins ({order:?})");
            // An answer after both 0 and 1 is discarded.
            let decided_at = order
                .iter()
                .position(|&i| i == 0)
                .max(order.iter().position(|&i| i == 1));
            for (n, kept) in kept.iter().enumerate() {
                assert_eq!(*kept, n <= decided_at.unwrap(), "{order:?}");
            }
        }
        let q = query(versions_of_k().split_off(2));
        assert_eq!((q.take(), q.take()), (Some(0), Some(1)));
        assert!(q.answer(1, q.probe(1)));
        assert!(!q.has_work() && !q.decided.load(Ordering::Acquire));
        assert!(q.answer(0, q.probe(0)));
        assert_eq!(q.wait(), Ok(Some(b"v20".to_vec())));
        assert_eq!(q.take(), None);
    }

    fn found(v: &str) -> Option<Result<Probe>> {
        Some(Ok(Probe::Found(v.as_bytes().to_vec())))
    }

    #[test]
    fn the_newest_answer_decides_once_every_newer_one_is_absent() {
        let absent = Some(Ok(Probe::Absent));
        assert_eq!(decide(&[None, found("old")]), None, "newest unanswered");
        assert_eq!(
            decide(&[absent.clone(), found("old"), None]),
            Some((Ok(Some(b"old".to_vec())), Some(1))),
            "an older candidate's answer is not needed"
        );
        assert_eq!(
            decide(&[Some(Ok(Probe::Deleted)), found("old")]),
            Some((Ok(None), Some(0)))
        );
        assert_eq!(
            decide(&[absent.clone(), absent.clone()]),
            Some((Ok(None), None))
        );
        let err = Error::corruption("t", 7, "bad");
        assert!(matches!(
            decide(&[absent.clone(), Some(Err(err)), found("old")]),
            Some((Err(_), Some(1)))
        ));
    }
}
