//! When a reply may go out: `appendfsync always` waits for a log sync that
//! covers the command's write, `everysec` syncs once a second, `no` leaves
//! syncing to the engine (writes still survive a crash of the process).
//!
//! Group commit: a connection commits its writes without syncing, then
//! registers for the next sync round. One thread runs the rounds: it takes
//! every registration made so far, syncs the log once (`Db::sync_log`,
//! which covers every write committed before it and, unlike a synced
//! write, holds no writer up while the device syncs) and wakes them all.
//! While one round syncs, the next round's commits go on and its waiters
//! gather, so many clients share each `fdatasync`.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};
use thicketdb::Db;
use tokio::sync::watch;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FsyncPolicy {
    Always,
    EverySec,
    No,
}

impl FsyncPolicy {
    pub fn name(self) -> &'static str {
        match self {
            FsyncPolicy::Always => "always",
            FsyncPolicy::EverySec => "everysec",
            FsyncPolicy::No => "no",
        }
    }

    pub fn parse(name: &str) -> Option<FsyncPolicy> {
        [FsyncPolicy::Always, FsyncPolicy::EverySec, FsyncPolicy::No]
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(name))
    }

    fn from_u8(n: u8) -> FsyncPolicy {
        match n {
            0 => FsyncPolicy::Always,
            1 => FsyncPolicy::EverySec,
            _ => FsyncPolicy::No,
        }
    }

    fn to_u8(self) -> u8 {
        match self {
            FsyncPolicy::Always => 0,
            FsyncPolicy::EverySec => 1,
            FsyncPolicy::No => 2,
        }
    }
}

#[derive(Debug, Default)]
struct RoundState {
    next_round: u64,
    waiters: u64,
    stop: bool,
}

#[derive(Debug, Clone, Default)]
struct RoundDone {
    round: u64,
    error: Option<Arc<str>>,
}

struct Shared {
    db: Db,
    policy: AtomicU8,
    state: Mutex<RoundState>,
    wake: Condvar,
    /// A write since the last sync (for `everysec`).
    unsynced: AtomicBool,
    done: watch::Sender<RoundDone>,
    rounds: AtomicU64,
    synced_waiters: AtomicU64,
}

pub struct Durability {
    shared: Arc<Shared>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

/// Counters of the group commit, for metrics.
#[derive(Debug, Clone, Copy, Default)]
pub struct SyncCounters {
    /// Log syncs made for waiting replies (and `everysec` ticks).
    pub rounds: u64,
    /// Replies that waited for a sync.
    pub waiters: u64,
}

impl Durability {
    pub fn start(db: Db, policy: FsyncPolicy) -> std::io::Result<Durability> {
        let shared = Arc::new(Shared {
            db,
            policy: AtomicU8::new(policy.to_u8()),
            state: Mutex::new(RoundState {
                next_round: 1,
                ..RoundState::default()
            }),
            wake: Condvar::new(),
            unsynced: AtomicBool::new(false),
            done: watch::Sender::new(RoundDone::default()),
            rounds: AtomicU64::new(0),
            synced_waiters: AtomicU64::new(0),
        });
        let worker = shared.clone();
        let thread = std::thread::Builder::new()
            .name("thicket-sync".into())
            .spawn(move || run_rounds(&worker))?;
        Ok(Durability {
            shared,
            thread: Mutex::new(Some(thread)),
        })
    }

    pub fn policy(&self) -> FsyncPolicy {
        FsyncPolicy::from_u8(self.shared.policy.load(Ordering::Relaxed))
    }

    pub fn set_policy(&self, policy: FsyncPolicy) {
        self.shared.policy.store(policy.to_u8(), Ordering::Relaxed);
        self.shared.wake.notify_one();
    }

    /// Called after every committed write.
    pub fn note_write(&self) {
        self.shared.unsynced.store(true, Ordering::Relaxed);
    }

    /// Whether a reply after a write must wait for `wait_synced`.
    pub fn replies_wait(&self) -> bool {
        self.policy() == FsyncPolicy::Always
    }

    /// Waits until the log is synced past every write committed before
    /// this call.
    pub async fn wait_synced(&self) -> Result<(), String> {
        let mut done = self.shared.done.subscribe();
        let target = {
            let mut state = self.shared.state.lock();
            state.waiters += 1;
            self.shared.wake.notify_one();
            state.next_round
        };
        let finished = done
            .wait_for(|d| d.round >= target)
            .await
            .map_err(|_| "the sync thread stopped".to_string())?;
        match &finished.error {
            Some(e) => Err(e.to_string()),
            None => Ok(()),
        }
    }

    pub fn counters(&self) -> SyncCounters {
        SyncCounters {
            rounds: self.shared.rounds.load(Ordering::Relaxed),
            waiters: self.shared.synced_waiters.load(Ordering::Relaxed),
        }
    }

    /// Serves the registered waiters, then stops the sync thread.
    pub fn stop(&self) {
        self.shared.state.lock().stop = true;
        self.shared.wake.notify_one();
        if let Some(thread) = self.thread.lock().take() {
            // The thread only returns; a panic in it has been reported.
            let _ = thread.join();
        }
    }
}

impl Drop for Durability {
    fn drop(&mut self) {
        self.stop();
    }
}

fn run_rounds(shared: &Shared) {
    loop {
        let (round, waiters) = {
            let mut state = shared.state.lock();
            loop {
                if state.waiters > 0 {
                    break;
                }
                if state.stop {
                    return;
                }
                let policy = FsyncPolicy::from_u8(shared.policy.load(Ordering::Relaxed));
                if policy == FsyncPolicy::EverySec {
                    let timed_out = shared
                        .wake
                        .wait_for(&mut state, Duration::from_secs(1))
                        .timed_out();
                    if timed_out && shared.unsynced.load(Ordering::Relaxed) {
                        break;
                    }
                } else {
                    shared.wake.wait(&mut state);
                }
            }
            let round = state.next_round;
            state.next_round += 1;
            (round, std::mem::take(&mut state.waiters))
        };
        shared.unsynced.store(false, Ordering::Relaxed);
        let result = shared.db.sync_log();
        shared.rounds.fetch_add(1, Ordering::Relaxed);
        shared.synced_waiters.fetch_add(waiters, Ordering::Relaxed);
        shared.done.send_replace(RoundDone {
            round,
            error: result.err().map(|e| Arc::from(e.to_string())),
        });
    }
}
