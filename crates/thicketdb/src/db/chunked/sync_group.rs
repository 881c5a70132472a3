//! Group commit across chunks for syncing writers (`WriteOptions.sync`).
//! A writer that appended asks for a sync that *starts* after its append;
//! the first to ask becomes the leader and syncs every dirty log (the
//! batch log first, then every chunk log: one sync per log for the whole
//! group), the others wait for it. Writers arriving during a sync form the
//! next group, whose leader syncs once for all of them.

use parking_lot::{Condvar, Mutex};

use crate::error::{Error, Result};

#[derive(Default)]
struct Rounds {
    /// Syncs started.
    started: u64,
    /// Syncs finished (successfully or not).
    finished: u64,
    /// The error of the last finished sync, if it failed.
    failed: Option<Error>,
    /// Writers waiting for a round to finish.
    waiting: usize,
}

/// Sync rounds: who leads, who waits.
#[derive(Default)]
pub(super) struct SyncGroup {
    rounds: Mutex<Rounds>,
    done: Condvar,
}

impl SyncGroup {
    /// Returns once a sync run by `sync_all` started after this call and
    /// finished: every append made before the call is then durable. Runs
    /// `sync_all` itself when no sync is under way.
    pub fn sync(&self, sync_all: impl Fn() -> Result<()>) -> Result<()> {
        let mut rounds = self.rounds.lock();
        // A sync under way may have missed this writer's append: wait for
        // the one after it.
        let needed = rounds.started + 1;
        while rounds.finished < needed {
            if rounds.started == rounds.finished {
                // No sync under way: lead one.
                rounds.started += 1;
                drop(rounds);
                let result = sync_all();
                rounds = self.rounds.lock();
                rounds.finished += 1;
                rounds.failed = result.err();
                self.done.notify_all();
                continue;
            }
            rounds.waiting += 1;
            self.done.wait(&mut rounds);
            rounds.waiting -= 1;
        }
        match &rounds.failed {
            Some(e) => Err(Error::Background(Box::new(e.clone()))),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
impl SyncGroup {
    /// Writers waiting for a round to finish.
    pub fn waiting(&self) -> usize {
        self.rounds.lock().waiting
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::{Arc, Barrier};

    /// Writers that ask while a sync is under way share the next one.
    #[test]
    fn writers_asking_during_a_sync_share_the_next_one() {
        let group = Arc::new(SyncGroup::default());
        let syncs = Arc::new(AtomicU64::new(0));
        let leader_in_sync = Arc::new(Barrier::new(2));
        let release = Arc::new(Barrier::new(2));
        let leader = {
            let (group, syncs) = (group.clone(), syncs.clone());
            let (in_sync, release) = (leader_in_sync.clone(), release.clone());
            std::thread::spawn(move || {
                group.sync(|| {
                    syncs.fetch_add(1, Ordering::SeqCst);
                    in_sync.wait();
                    release.wait();
                    Ok(())
                })
            })
        };
        leader_in_sync.wait();
        // Three writers ask while the leader syncs: one of them leads the
        // next round, the others are covered by it.
        let followers: Vec<_> = (0..3)
            .map(|_| {
                let (group, syncs) = (group.clone(), syncs.clone());
                std::thread::spawn(move || {
                    group.sync(|| {
                        syncs.fetch_add(1, Ordering::SeqCst);
                        Ok(())
                    })
                })
            })
            .collect();
        // Let the leader finish only once all three wait for a round.
        while group.waiting() < 3 {
            std::thread::yield_now();
        }
        release.wait();
        leader.join().unwrap().unwrap();
        for f in followers {
            f.join().unwrap().unwrap();
        }
        assert_eq!(syncs.load(Ordering::SeqCst), 2, "one sync per round");
    }
}
