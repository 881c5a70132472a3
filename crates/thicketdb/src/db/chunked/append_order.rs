//! Puts return in number order: a put returns only once every write
//! numbered below it is in its chunk's log (handed to the operating
//! system). Recovery keeps the writes before the first number no log
//! holds (`durable_prefix.rs`), so without this a process crash while an
//! earlier-numbered put was still appending to another chunk dropped a
//! later put that had already returned: an acknowledged write lost
//! without a power loss (found by `scripts/lib/server_crash.py`, YoDB
//! with several clients). The LSM's single log gets the same order from
//! its write queue. A put waits only for puts that took their numbers
//! before it and are still appending: no lock is held while it waits.

use std::collections::BTreeMap;

use parking_lot::{Condvar, Mutex};

pub(super) struct AppendOrder {
    state: Mutex<State>,
    appended: Condvar,
}

struct State {
    /// Every number up to it is appended.
    through: u64,
    /// Appended ranges above `through + 1` (first to last).
    ahead: BTreeMap<u64, u64>,
    /// Puts in `wait_through`.
    waiting: usize,
}

/// The numbers a put took, recorded as appended when dropped (on success
/// or error: a failed append fails the store, and nothing may wait for it).
pub(super) struct Taken<'a> {
    order: &'a AppendOrder,
    first: u64,
    last: u64,
}

impl AppendOrder {
    /// Numbers up to `last` (the last one recovered) are in the logs.
    pub(super) fn new(last: u64) -> AppendOrder {
        AppendOrder {
            state: Mutex::new(State {
                through: last,
                ahead: BTreeMap::new(),
                waiting: 0,
            }),
            appended: Condvar::new(),
        }
    }

    /// Records `first..=last` as taken by a put now appending them.
    pub(super) fn taken(&self, first: u64, last: u64) -> Taken<'_> {
        Taken {
            order: self,
            first,
            last,
        }
    }

    /// Waits until every number up to `last` is appended.
    pub(super) fn wait_through(&self, last: u64) {
        let mut state = self.state.lock();
        while state.through < last {
            state.waiting += 1;
            self.appended.wait(&mut state);
            state.waiting -= 1;
        }
    }

    /// Holds the record's lock (a test's way to see who takes it).
    #[cfg(test)]
    pub(super) fn hold(&self) -> parking_lot::MutexGuard<'_, impl Sized> {
        self.state.lock()
    }

    /// Puts waiting for earlier numbers now.
    #[cfg(test)]
    pub(super) fn waiting(&self) -> usize {
        self.state.lock().waiting
    }

    fn appended(&self, first: u64, last: u64) {
        let mut state = self.state.lock();
        state.ahead.insert(first, last);
        let before = state.through;
        while let Some((&f, &l)) = state.ahead.first_key_value() {
            if f > state.through + 1 {
                break;
            }
            state.through = state.through.max(l);
            state.ahead.pop_first();
        }
        if state.through > before {
            self.appended.notify_all();
        }
    }
}

impl Drop for Taken<'_> {
    fn drop(&mut self) {
        self.order.appended(self.first, self.last);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::thread;

    use super::AppendOrder;

    #[test]
    fn a_put_waits_for_the_numbers_below_it_only() {
        let order = Arc::new(AppendOrder::new(10));
        let early = order.taken(11, 12);
        drop(order.taken(13, 13));
        order.wait_through(10);
        // 13 is appended, 11 and 12 not yet: a put numbered 13 waits.
        let waiter = {
            let order = Arc::clone(&order);
            thread::spawn(move || order.wait_through(13))
        };
        while order.waiting() == 0 {
            thread::yield_now();
        }
        drop(early);
        waiter.join().unwrap();
        let state = order.state.lock();
        assert_eq!((state.through, state.ahead.len()), (13, 0));
    }
}
