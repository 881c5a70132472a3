//! The order in which `DbInner`'s mutexes are taken, checked in debug
//! builds and unit tests (`docs/architecture.md`, "Locks").
//!
//! A thread may take a lock only while every lock it holds ranks lower.
//! `Rank` lists them in that order; `Ranked` is a mutex that knows its rank
//! and, where checks are compiled in, asserts the order on every `lock`.
//! Release builds compile the checks out: a `Ranked` is then a plain mutex.

use std::ops::{Deref, DerefMut};

use parking_lot::{Mutex, MutexGuard};

/// `DbInner`'s mutexes, lowest (taken first) to highest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Rank {
    /// The writer queue (`DbInner::write`).
    Write,
    /// The current log (`DbInner::log`).
    Log,
    /// The version set and MANIFEST (`DbInner::versions`).
    Versions,
    /// Background coordination (`DbInner::background`).
    Background,
    /// The store's file lock (`DbInner::lock`).
    FileLock,
}

/// A mutex with a place in the lock order.
pub(crate) struct Ranked<T> {
    rank: Rank,
    mutex: Mutex<T>,
}

impl<T> Ranked<T> {
    pub fn new(rank: Rank, value: T) -> Ranked<T> {
        Ranked {
            rank,
            mutex: Mutex::new(value),
        }
    }

    pub fn lock(&self) -> RankedGuard<'_, T> {
        held::acquire(self.rank);
        RankedGuard {
            rank: self.rank,
            guard: self.mutex.lock(),
        }
    }
}

/// A held `Ranked` mutex.
pub(crate) struct RankedGuard<'a, T> {
    rank: Rank,
    guard: MutexGuard<'a, T>,
}

impl<'a, T> RankedGuard<'a, T> {
    /// The underlying guard, for condition variables and
    /// `MutexGuard::unlocked`. The lock counts as held throughout: while
    /// it is released inside, the thread must take no lower-ranked lock.
    pub fn raw(&mut self) -> &mut MutexGuard<'a, T> {
        &mut self.guard
    }
}

impl<T> Deref for RankedGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.guard
    }
}

impl<T> DerefMut for RankedGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.guard
    }
}

impl<T> Drop for RankedGuard<'_, T> {
    fn drop(&mut self) {
        held::release(self.rank);
    }
}

#[cfg(any(debug_assertions, test))]
mod held {
    use std::cell::RefCell;

    use super::Rank;

    thread_local! {
        static HELD: RefCell<Vec<Rank>> = const { RefCell::new(Vec::new()) };
    }

    pub fn acquire(rank: Rank) {
        HELD.with(|held| {
            let mut held = held.borrow_mut();
            if let Some(top) = held.iter().max() {
                if *top >= rank {
                    violated(rank, &held);
                }
            }
            held.push(rank);
        });
    }

    /// A violation panics in unit tests (which expect the panic). In any
    /// other debug build it aborts the process: a panic on a background
    /// thread would be caught there and leave the store's waiters hanging,
    /// so a test run under debug assertions (`.ci/debug.sh`) would hang
    /// instead of failing.
    fn violated(rank: Rank, held: &[Rank]) {
        let message = format!("lock order violated: taking {rank:?} while holding {held:?}");
        if cfg!(test) {
            panic!("{message}");
        }
        eprintln!("{message}\n{}", std::backtrace::Backtrace::force_capture());
        std::process::abort();
    }

    pub fn release(rank: Rank) {
        HELD.with(|held| {
            let mut held = held.borrow_mut();
            if let Some(i) = held.iter().rposition(|r| *r == rank) {
                held.remove(i);
            }
        });
    }
}

#[cfg(not(any(debug_assertions, test)))]
mod held {
    use super::Rank;

    #[inline(always)]
    pub fn acquire(_: Rank) {}

    #[inline(always)]
    pub fn release(_: Rank) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locks_in_rank_order_are_accepted() {
        let (write, versions) = (Ranked::new(Rank::Write, 1), Ranked::new(Rank::Versions, 2));
        let w = write.lock();
        let v = versions.lock();
        assert_eq!(*w + *v, 3);
        drop(v);
        drop(w);
        // Released in any order, then taken again.
        let _v = versions.lock();
    }

    #[test]
    #[should_panic(expected = "lock order violated")]
    fn a_lock_taken_below_a_held_one_is_caught() {
        let (write, background) = (
            Ranked::new(Rank::Write, ()),
            Ranked::new(Rank::Background, ()),
        );
        let _bg = background.lock();
        let _w = write.lock();
    }
}
