//! YoDB's pending-operations array (§3.2-3.3, Algorithm 1), kept per chunk
//! as the paper's implementation does: a put announces itself in each
//! chunk it writes before it takes its sequence numbers and withdraws once
//! its updates are in the chunk's log, munk and row cache. It waits for
//! no other put: numbers come from one atomic add (`last_sequence`), and
//! nothing is published in order. A reader at sequence `s` (a get, a
//! scan's view of a chunk, a funk build, a checkpoint) waits only for a
//! put announced in the chunk it reads with a number that may be at or
//! below `s`: every write up to `s` is then complete in that chunk.
//!
//! One slot per chunk suffices: a put announces and withdraws under the
//! chunk's `append_lock`, so at most one put is pending in a chunk. The
//! slot holds a lower bound of the put's first number (the last number
//! handed out, plus one, read before the put takes its own): no other
//! write to the chunk takes a number between the bound and the put's
//! first, so a reader below the bound has nothing to wait for there.
//! A reader that must wait takes the chunk's `append_lock`, which the put
//! holds until it withdrew (`docs/architecture.md`, *Chunked layout*,
//! gives the argument that scans and gets stay linearizable).

use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

/// Times a reader re-reads the slot before it blocks on the append lock:
/// a put's window is a log append and a few cache inserts.
const SPINS: u32 = 32;

/// A chunk's slot in the pending-operations array.
#[derive(Default)]
pub(super) struct Pending {
    /// A lower bound of the first number of the put pending in the chunk;
    /// 0 when none is.
    from: AtomicU64,
}

impl Pending {
    /// Whether every write to the chunk numbered up to `sequence` is
    /// complete (no pending put may hold such a number).
    pub fn settled_through(&self, sequence: u64) -> bool {
        let from = self.from.load(Ordering::SeqCst);
        from == 0 || from > sequence
    }

    /// Returns once every write to the chunk numbered up to `sequence`
    /// (handed out already) is complete. `append_lock` is the chunk's.
    /// REQUIRES: the caller holds no `append_lock`.
    pub fn settle(&self, sequence: u64, append_lock: &Mutex<()>) {
        for _ in 0..SPINS {
            if self.settled_through(sequence) {
                return;
            }
            std::thread::yield_now();
        }
        if !self.settled_through(sequence) {
            // The pending put withdraws before it releases the lock.
            drop(append_lock.lock());
        }
    }
}

/// The announcement of one put in the chunks it writes; withdrawn when
/// dropped (also when the put fails half-way: its readers go on).
pub(super) struct Announced<'a> {
    slots: Vec<&'a Pending>,
}

impl<'a> Announced<'a> {
    /// Announces a put in `slots` whose numbers will be above `last`
    /// (the last number handed out, read now).
    /// REQUIRES: the `append_lock` of every chunk of `slots`, held until
    /// the announcement is dropped.
    pub fn new(slots: Vec<&'a Pending>, last: u64) -> Announced<'a> {
        for slot in &slots {
            slot.from.store(last + 1, Ordering::SeqCst);
        }
        Announced { slots }
    }
}

impl Drop for Announced<'_> {
    fn drop(&mut self) {
        for slot in &self.slots {
            slot.from.store(0, Ordering::SeqCst);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn a_reader_waits_only_for_a_put_that_may_be_below_its_sequence() {
        let slot = Pending::default();
        assert!(slot.settled_through(u64::MAX));
        let announced = Announced::new(vec![&slot], 10);
        // The put's numbers are 11 or more: a reader at 10 goes on.
        assert!(slot.settled_through(10));
        assert!(!slot.settled_through(11));
        drop(announced);
        assert!(slot.settled_through(11));
    }

    #[test]
    fn settle_returns_once_the_put_withdraws() {
        let chunk = Arc::new((Pending::default(), Mutex::new(())));
        let appending = chunk.1.lock();
        let announced = Announced::new(vec![&chunk.0], 4);
        let reader = {
            let chunk = chunk.clone();
            std::thread::spawn(move || {
                chunk.0.settle(7, &chunk.1);
                chunk.0.settled_through(7)
            })
        };
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert!(!reader.is_finished(), "the reader waits for the put");
        drop(announced);
        drop(appending);
        assert!(reader.join().unwrap(), "the put withdrew first");
    }
}
