//! The compaction policy a store runs with, chosen by `compaction_policy`.

use super::busy::{Busy, Claim};
use super::leveled::triad_disk::TriadDisk;
use super::leveled::LeveledPolicy;
use super::lsbm_buffer_edits::CompactionBuffer;
use super::task::CompactionTask;
use super::tiered::TieredPolicy;
use std::sync::Arc;

use crate::options::{Options, PolicyKind};
use crate::version::{TableMeta, Version};

/// A policy looks at a version and the running tasks and returns the task
/// to run, if any.
#[derive(Debug)]
pub enum Policy {
    /// Boxed: it holds the store's `Options`.
    Leveled(Box<LeveledPolicy>),
    Tiered(TieredPolicy),
}

impl Policy {
    /// The policy of a store whose tree is `version` (a leveled policy
    /// resumes its round robin at the recorded compaction pointers).
    pub fn new(options: &Options, version: &Version) -> Policy {
        match options.compaction_policy {
            PolicyKind::Leveled => {
                let policy = LeveledPolicy::new(options);
                policy.restore_pointers(version);
                Policy::Leveled(Box::new(policy))
            }
            PolicyKind::Tiered => Policy::Tiered(TieredPolicy::new(options)),
        }
    }

    /// The most urgent task that can run beside the running ones (`busy`),
    /// if the tree needs one.
    pub fn pick(&self, version: &Version, busy: &Busy) -> Option<CompactionTask> {
        match self {
            Policy::Leveled(p) => p.pick(version, busy),
            Policy::Tiered(p) => p.pick(version, busy),
        }
    }

    /// Records that `task`, from `pick`, was taken to run (a leveled
    /// level's round robin continues after it); `pick` itself changes
    /// nothing.
    pub fn take(&self, task: &CompactionTask) {
        match self {
            Policy::Leveled(p) => p.take(task),
            Policy::Tiered(_) => {}
        }
    }

    /// What `task` holds while it runs beside `busy` (the claim `pick`
    /// admitted); a claim marked journaled runs as a journaled merge.
    pub fn claim(&self, task: &CompactionTask, busy: &Busy) -> Claim {
        match self {
            Policy::Leveled(_) => LeveledPolicy::claim(task, busy.order()),
            Policy::Tiered(p) => p.claim(task, busy),
        }
    }

    /// Whether `task` runs as a journaled merge (SifrDB early cleaning).
    pub fn journals(&self, task: &CompactionTask) -> bool {
        match self {
            Policy::Leveled(_) => false,
            Policy::Tiered(p) => p.journals(task),
        }
    }

    /// The levels a full manual compaction walks: those above this one.
    /// Leveled stops above the deepest level holding data, as LevelDB
    /// does; tiered also merges the deepest level when it holds several
    /// runs, so its deletions meet nothing older and are dropped.
    pub fn manual_end(&self, version: &Version) -> usize {
        let Some(deepest) = version.deepest_nonempty_level() else {
            return 0;
        };
        match self {
            Policy::Tiered(_) if version.levels[deepest].runs.len() > 1 => deepest + 1,
            _ => deepest.max(1),
        }
    }

    /// The tables of the level below `task`'s output that cut its output
    /// tables (leveled, with `grandparent_overlap_factor`), and the overlap
    /// limit in bytes.
    pub fn grandparents(
        &self,
        version: &Version,
        task: &CompactionTask,
    ) -> (Vec<Arc<TableMeta>>, u64) {
        match self {
            Policy::Leveled(p) => p.grandparents(version, task),
            Policy::Tiered(_) => (Vec::new(), 0),
        }
    }

    /// The level a flushed run covering `[smallest, largest]` goes to, and
    /// the run it joins there (`None`: a new L0 run).
    pub fn flush_target(
        &self,
        version: &Version,
        smallest: &[u8],
        largest: &[u8],
    ) -> Option<(usize, u64)> {
        match self {
            Policy::Leveled(p) => p.flush_target(version, smallest, largest),
            Policy::Tiered(_) => None,
        }
    }

    /// A manual compaction of one level within `[start, end]`.
    pub fn manual(
        &self,
        version: &Version,
        level: usize,
        start: Option<&[u8]>,
        end: Option<&[u8]>,
    ) -> Option<CompactionTask> {
        match self {
            Policy::Leveled(p) => p.manual(version, level, start, end),
            Policy::Tiered(p) => p.manual(version, level),
        }
    }

    /// LSbM's compaction buffer, when the store runs one.
    pub fn buffer(&self) -> Option<&CompactionBuffer> {
        match self {
            Policy::Leveled(p) => p.buffer.as_deref(),
            Policy::Tiered(_) => None,
        }
    }

    /// Bytes compaction owes the tree: what it must rewrite before every
    /// level is within its limit (RocksDB's pending compaction bytes).
    pub fn pending_bytes(&self, version: &Version) -> u64 {
        match self {
            Policy::Leveled(p) => p.pending_bytes(version),
            Policy::Tiered(p) => p.pending_bytes(version),
        }
    }

    /// The levels whose tables' key sketches TRIAD-DISK reads (leveled
    /// only): L0 and the base level L0 compacts into.
    pub fn triad_disk_levels(options: &Options, version: &Version) -> [usize; 2] {
        [0, super::leveled::LevelTargets::of(options, version).base]
    }

    /// TRIAD-DISK's deferral rule and counters, when the policy runs it.
    pub fn triad_disk(&self) -> Option<&TriadDisk> {
        match self {
            Policy::Leveled(p) => p.triad_disk(),
            Policy::Tiered(_) => None,
        }
    }
}
