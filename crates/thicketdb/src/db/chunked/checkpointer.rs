//! The asynchronous mode's checkpoints (YoDB §3.5, `durability=async`):
//! writes complete in memory and the page cache; every
//! `checkpoint_interval` a background thread takes the last number handed
//! out as the checkpoint's point (a scan's way: every write up to it is
//! waited for), syncs every chunk log holding unsynced appends and records
//! the point in `CHECKPOINT` (`checkpoint_mark.rs`). A crash returns the
//! store to its last checkpoint (`open/last_run.rs`, `incarnations.rs`). `flush`,
//! a write with `WriteOptions::sync` and `close` take one at once.
//!
//! No append lock is held: the writes numbered past the point that reach
//! the disk with it are ignored after a crash. The batch log is not
//! synced: a cross-chunk batch up to the point is whole in its chunk logs
//! (published writes are), and recovery from a checkpoint completes none.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::Mutex;

use super::checkpoint_mark::CheckpointMark;
use super::ChunkStore;
use crate::error::{Error, Result};
use crate::stats::Counters;

/// The background checkpointer of a store in the asynchronous mode.
#[derive(Default)]
pub(super) struct Checkpointer {
    /// Set to stop the thread.
    stopping: Mutex<bool>,
    thread: Mutex<Option<JoinHandle<()>>>,
    /// Held while a checkpoint is taken: one at a time.
    taking: Mutex<()>,
}

impl Checkpointer {
    /// Starts the thread checkpointing `store` every `interval`.
    pub fn start(&self, store: &Arc<ChunkStore>, interval: Duration) -> Result<()> {
        let weak = Arc::downgrade(store);
        let thread = std::thread::Builder::new()
            .name("thicket-checkpointer".into())
            .spawn(move || run(&weak, interval))
            .map_err(|e| Error::io(e, "spawning the checkpointer thread"))?;
        *self.thread.lock() = Some(thread);
        Ok(())
    }

    /// Stops and joins the thread (a no-op without one).
    pub fn stop(&self) {
        *self.stopping.lock() = true;
        let thread = self.thread.lock().take();
        if let Some(thread) = thread {
            // Not from the thread itself: its last `Arc` may drop the store.
            if thread.thread().id() != std::thread::current().id() {
                let _ = thread.join();
            }
        }
    }
}

/// How often the thread looks at the clock and for `stop` (it holds no
/// reference to the store while it sleeps).
const TICK: Duration = Duration::from_millis(20);

/// The thread: a checkpoint every `interval` while the store lives.
fn run(store: &Weak<ChunkStore>, interval: Duration) {
    loop {
        std::thread::sleep(TICK.min(interval));
        let Some(store) = store.upgrade() else {
            return;
        };
        if *store.checkpointer.stopping.lock() {
            return;
        }
        if store.due_for_checkpoint(interval) {
            if let Err(e) = store.take_checkpoint() {
                store.fail(&e);
                return;
            }
        }
    }
}

impl ChunkStore {
    /// Whether `interval` passed since the last checkpoint began.
    fn due_for_checkpoint(&self, interval: Duration) -> bool {
        self.last_checkpoint_at.lock().elapsed() >= interval
    }

    /// Takes a checkpoint: returns once every write numbered up to the last
    /// one handed out when it began is durable and `CHECKPOINT` says so.
    pub(super) fn take_checkpoint(&self) -> Result<u64> {
        let _one = self.checkpointer.taking.lock();
        *self.last_checkpoint_at.lock() = std::time::Instant::now();
        let point = self.last_sequence.load(Ordering::SeqCst);
        if point <= self.checkpointed.load(Ordering::Acquire) {
            return Ok(point);
        }
        // The chunks after the point: a write numbered up to it went to
        // one of them (or to a chunk whose replacement holds it, copied
        // at the switch, which waits for the put).
        let mut syncs = 0;
        for chunk in self.every_chunk() {
            chunk.settle(point);
            syncs += u64::from(chunk.log.sync_if_dirty()?);
        }
        Counters::add(&self.counters.fsyncs_log, syncs);
        CheckpointMark {
            incarnation: self.incarnation,
            sequence: point,
        }
        .write(self.fs.as_ref(), &self.dir)?;
        Counters::add(&self.counters.fsyncs_manifest, 2);
        Counters::add(&self.counters.chunk_checkpoints, 1);
        self.checkpointed.fetch_max(point, Ordering::AcqRel);
        self.durable_sequence.fetch_max(point, Ordering::AcqRel);
        Ok(point)
    }

    /// After a clean close synced every log: the mark covers every write
    /// (so a damaged `LOGS_CLOSED` loses nothing).
    pub(super) fn mark_clean_close(&self) -> Result<()> {
        if !self.is_async() {
            return Ok(());
        }
        CheckpointMark {
            incarnation: self.incarnation,
            sequence: self.last_sequence.load(Ordering::Acquire),
        }
        .write(self.fs.as_ref(), &self.dir)
    }

    /// Returns once a checkpoint covers the write numbered `sequence`
    /// (taking one if none does yet).
    pub(super) fn wait_checkpointed(&self, sequence: u64) -> Result<()> {
        if self.checkpointed.load(Ordering::Acquire) >= sequence {
            return Ok(());
        }
        self.take_checkpoint().map(|_| ())
    }
}
