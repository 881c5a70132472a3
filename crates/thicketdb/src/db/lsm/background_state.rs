//! What writers, the background threads, manual compaction and `close`
//! coordinate through: the background error, running tasks' claims and
//! shutdown, under the `background` mutex.

use std::sync::atomic::Ordering;

use super::tree::Tree;
use super::DbInner;
use crate::error::Error;

/// Coordination between writers, the background threads, manual
/// compaction and `close`.
pub(crate) struct BackgroundState {
    /// A failed flush or compaction; writes are refused until reopen.
    pub error: Option<Error>,
    pub shutting_down: bool,
    /// What the running background compactions hold, per keyspace id.
    pub busy: std::collections::BTreeMap<u32, crate::compaction::Busy>,
    /// A manual compaction runs or waits: no background compaction starts.
    pub manual_compaction: bool,
    /// Where the next round-robin pick over keyspaces starts.
    pub next_tree: usize,
}

impl BackgroundState {
    /// The claims of running tasks in `tree`.
    pub fn busy_in(&mut self, tree: &Tree) -> &mut crate::compaction::Busy {
        self.busy
            .entry(tree.id)
            .or_insert_with(|| crate::compaction::Busy::new(tree.options.comparator.clone()))
    }

    /// Whether no background compaction runs in any keyspace.
    pub fn idle(&self) -> bool {
        self.busy.values().all(|b| b.is_empty())
    }
}

/// Takes `background`; callers may hold `write` or `log`.
pub(crate) fn set_background_error(inner: &DbInner, e: Error) {
    let mut bg = inner.background.lock();
    if bg.error.is_none() {
        bg.error = Some(e);
    }
    inner.failed.store(true, Ordering::Release);
    inner.background_cv.notify_all();
}

/// Takes `background`; callers may hold `write`.
pub(crate) fn wake_background(inner: &DbInner) {
    let _bg = inner.background.lock();
    inner.background_cv.notify_all();
}
