//! One global sequence for concurrent writers: numbers are allocated
//! (`allocate`) under the append locks of every chunk a write touches,
//! and published (`publish`) strictly in allocation order, each write
//! only once it is in every chunk log (and munk, row cache) it touches.
//! A reader at the published sequence `s` therefore finds every write up
//! to `s` complete and filters out every later one: a scan sees a prefix
//! of the writes, the same in every chunk (`mod.rs` gives the argument).

use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::{Condvar, Mutex};

use crate::error::{Error, Result};

/// Allocation and in-order publication of sequence numbers.
pub(super) struct Sequencer {
    /// The last sequence number handed out.
    allocated: AtomicU64,
    /// Held to publish, and to wait for the turn to.
    gate: Mutex<()>,
    turn: Condvar,
}

impl Sequencer {
    /// A sequencer whose next number follows `last`.
    pub fn new(last: u64) -> Sequencer {
        Sequencer {
            allocated: AtomicU64::new(last),
            gate: Mutex::new(()),
            turn: Condvar::new(),
        }
    }

    /// Moves the sequence back to `last`: a read-only open hides an
    /// unfinished batch below its first number, and a checkpoint or close
    /// waits only for numbers handed out after that.
    /// REQUIRES: no number handed out yet (the store is being opened).
    pub fn restart_at(&self, last: u64) {
        self.allocated.store(last, Ordering::Release);
    }

    /// The last number handed out.
    pub fn last_allocated(&self) -> u64 {
        self.allocated.load(Ordering::Acquire)
    }

    /// Hands out `count` consecutive numbers; returns the first.
    /// REQUIRES: the `append_lock` of every chunk the numbers go to, so
    /// each chunk log receives its numbers in order.
    pub fn allocate(&self, count: u64) -> u64 {
        self.allocated.fetch_add(count, Ordering::AcqRel) + 1
    }

    /// Publishes `first..=last` in `published` once every earlier number
    /// is. `failed` is asked while waiting: a write that failed after its
    /// allocation never publishes, and the store refuses writes from then
    /// on, so the writers after it give up with that error.
    pub fn publish(
        &self,
        published: &AtomicU64,
        first: u64,
        last: u64,
        failed: impl Fn() -> Option<Error>,
    ) -> Result<()> {
        let mut gate = self.gate.lock();
        while published.load(Ordering::Acquire) != first - 1 {
            if let Some(e) = failed() {
                return Err(Error::Background(Box::new(e)));
            }
            self.turn.wait(&mut gate);
        }
        published.store(last, Ordering::Release);
        self.turn.notify_all();
        Ok(())
    }

    /// Returns once every number handed out is published.
    /// REQUIRES: every chunk's `append_lock` (no number is handed out
    /// meanwhile); no other lock a writer takes after appending.
    pub fn wait_all_published(
        &self,
        published: &AtomicU64,
        failed: impl Fn() -> Option<Error>,
    ) -> Result<()> {
        self.wait_published_through(published, self.last_allocated(), failed)
    }

    /// Returns once every number up to `target` (handed out) is published.
    /// REQUIRES: no lock a writer takes after appending.
    pub fn wait_published_through(
        &self,
        published: &AtomicU64,
        target: u64,
        failed: impl Fn() -> Option<Error>,
    ) -> Result<()> {
        let mut gate = self.gate.lock();
        while published.load(Ordering::Acquire) < target {
            if let Some(e) = failed() {
                return Err(Error::Background(Box::new(e)));
            }
            self.turn.wait(&mut gate);
        }
        Ok(())
    }

    /// Wakes every writer waiting for its turn (after a failure).
    pub fn wake_all(&self) {
        let _gate = self.gate.lock();
        self.turn.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// A later write waits for an earlier one: the published number
    /// never skips an unpublished write.
    #[test]
    fn publication_follows_allocation_order() {
        let sequencer = Arc::new(Sequencer::new(0));
        let published = Arc::new(AtomicU64::new(0));
        let first = sequencer.allocate(2);
        let second = sequencer.allocate(1);
        assert_eq!((first, second), (1, 3));
        let later = {
            let (s, p) = (sequencer.clone(), published.clone());
            std::thread::spawn(move || s.publish(&p, second, second, || None))
        };
        // The later write cannot publish before the earlier one.
        assert_eq!(published.load(Ordering::Acquire), 0);
        sequencer.publish(&published, first, 2, || None).unwrap();
        later.join().unwrap().unwrap();
        assert_eq!(published.load(Ordering::Acquire), 3);
    }

    /// A checkpoint's wait ends only when the last number handed out is
    /// published, whatever the order the writers finish in.
    #[test]
    fn waiting_for_every_publication() {
        let sequencer = Arc::new(Sequencer::new(0));
        let published = Arc::new(AtomicU64::new(0));
        let (first, second) = (sequencer.allocate(1), sequencer.allocate(1));
        let waiter = {
            let (s, p) = (sequencer.clone(), published.clone());
            std::thread::spawn(move || {
                s.wait_all_published(&p, || None).unwrap();
                p.load(Ordering::Acquire)
            })
        };
        let later = {
            let (s, p) = (sequencer.clone(), published.clone());
            std::thread::spawn(move || s.publish(&p, second, second, || None))
        };
        sequencer
            .publish(&published, first, first, || None)
            .unwrap();
        later.join().unwrap().unwrap();
        assert_eq!(waiter.join().unwrap(), 2);
    }

    #[test]
    fn writers_behind_a_failed_one_give_up() {
        let sequencer = Sequencer::new(0);
        let published = AtomicU64::new(0);
        let _failed_write = sequencer.allocate(1);
        let next = sequencer.allocate(1);
        let err = sequencer
            .publish(&published, next, next, || Some(Error::Closed))
            .unwrap_err();
        assert!(matches!(err, Error::Background(_)), "{err:?}");
        assert_eq!(published.load(Ordering::Acquire), 0);
    }
}
