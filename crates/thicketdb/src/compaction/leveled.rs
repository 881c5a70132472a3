//! The `leveled` policy: LevelDB's leveling with BoLT's group and settled
//! compaction as options.
//!
//! - L0 is due when it holds `l0_compaction_trigger` runs. With one victim
//!   per compaction (`group_compaction_bytes` 0) and LevelDB's L0 of one
//!   table per flush (`flush_one_table`) it is picked as LevelDB does: the L0 tables connected to the table after L0's compact pointer
//!   and the L1 tables under them (`leveldb_l0_task`); otherwise every L0
//!   run is merged with the L1 tables it overlaps.
//! - Ln (n ≥ 1) is due when its bytes exceed `max_bytes_for_level_base ×
//!   level_size_multiplier^(n-1)`; the level with the highest score goes
//!   first, the shallower on a tie (LevelDB's `VersionSet::Finalize` keeps
//!   the first level whose score is strictly higher).
//! - Victims: one table, taken round-robin after the previous victim
//!   (LevelDB's compact pointer), or with `group_compaction_bytes > 0` a
//!   group of that many bytes (BoLT group compaction, a fixed group size as
//!   in the paper), or of `group_compaction_level_share` of the level's
//!   target when that is smaller (a group that scales with the store). With `lsbm_superfile_tables > 1` the unit is a
//!   super-file instead of a table: a victim brings the tables after it
//!   stored in the same segment, up to that many (LSbM §IV-C). With `settled_compaction` victims are the tables with
//!   the least overlap in the next level, contiguous or not, and those with
//!   none are promoted by metadata only (BoLT settled compaction). Without
//!   it a victim is moved only when it is the task's lone victim,
//!   overlaps nothing and overlaps the level below that by at most the
//!   grandparent limit (LevelDB's trivial move); other free victims are
//!   rewritten.
//! - With several compaction threads, a victim whose task would conflict
//!   with a running one (`busy`) is passed over, and a level with nothing
//!   admissible leaves its turn to the next due level. L0 is compacted
//!   whole, so one L0 task runs at a time.
//! - With `triad_disk`, a due L0 compaction may be deferred while its key
//!   overlap is low (`leveled/triad_disk.rs`).
//! - With `dynamic_level_bytes`, targets follow the largest level and L0
//!   compacts into the base level, which may be below L1
//!   (`leveled/targets.rs`).

use std::sync::Arc;

use parking_lot::Mutex;

use super::busy::{Busy, Claim};
use super::components::split_components;
use super::lsbm_buffer_edits::CompactionBuffer;
use super::task::{CompactionTask, TaskInput};
use crate::format::KeyOrder;
use crate::options::Options;
use crate::version::{Run, TableMeta, Version, NUM_LEVELS};
pub use targets::LevelTargets;
use triad_disk::TriadDisk;

/// Picks leveled compactions; remembers each level's compact pointer.
#[derive(Debug)]
pub struct LeveledPolicy {
    options: Options,
    /// Largest internal key of the last victim per level (round-robin).
    compact_pointers: Mutex<Vec<Vec<u8>>>,
    /// LSbM's compaction buffer, when `lsbm_buffer` is on (boxed: the
    /// policy is one variant of `Policy`).
    pub buffer: Option<Box<CompactionBuffer>>,
    /// TRIAD-DISK's deferral rule, when on (boxed: most stores run without).
    triad_disk: Option<Box<TriadDisk>>,
}

impl LeveledPolicy {
    /// Resumes the round robin where the recovered `version` says the
    /// last compactions of each level stopped.
    pub fn restore_pointers(&self, version: &Version) {
        let mut pointers = self.compact_pointers.lock();
        for (pointer, level) in pointers.iter_mut().zip(&version.levels) {
            pointer.clone_from(&level.compact_pointer);
        }
    }

    /// Records that `task` (from `pick`) was taken to run: the round robin
    /// of its level continues after its last victim. Picking alone moves
    /// nothing, so that asking whether a compaction is due (as
    /// `Db::wait_for_compactions` does) never changes which tables the
    /// next compaction takes.
    pub fn take(&self, task: &CompactionTask) {
        if let Some((level, key)) = &task.compact_pointer {
            self.compact_pointers.lock()[*level].clone_from(key);
        }
    }

    pub fn new(options: &Options) -> LeveledPolicy {
        LeveledPolicy {
            options: options.clone(),
            compact_pointers: Mutex::new(vec![Vec::new(); NUM_LEVELS]),
            buffer: CompactionBuffer::new(options).map(Box::new),
            triad_disk: TriadDisk::new(options).map(Box::new),
        }
    }

    /// TRIAD-DISK's rule and counters, when on.
    pub fn triad_disk(&self) -> Option<&TriadDisk> {
        self.triad_disk.as_deref()
    }

    /// Whether L0 holds enough runs to compact and TRIAD-DISK (if on) does
    /// not defer it.
    fn l0_due(&self, version: &Version, base: usize) -> bool {
        version.levels[0].runs.len() >= self.options.l0_compaction_trigger
            && !self
                .triad_disk
                .as_ref()
                .is_some_and(|t| t.decide(version, base).defer)
    }

    /// Each level's byte target and the level L0 compacts into.
    pub fn targets(&self, version: &Version) -> LevelTargets {
        LevelTargets::of(&self.options, version)
    }

    /// Each level's score; a level with score ≥ 1 needs compaction. The last
    /// level has nowhere to go and scores 0, as do the empty levels above a
    /// dynamic tree's base level.
    pub fn scores(&self, version: &Version) -> Vec<f64> {
        let targets = self.targets(version);
        (0..NUM_LEVELS)
            .map(|level| {
                if level + 1 == NUM_LEVELS {
                    0.0
                } else if level == 0 {
                    if self.l0_due(version, targets.base) {
                        version.levels[0].runs.len() as f64
                            / self.options.l0_compaction_trigger.max(1) as f64
                    } else {
                        0.0
                    }
                } else if targets.has_target(level) {
                    version.levels[level].bytes() as f64 / targets.bytes[level] as f64
                } else {
                    0.0
                }
            })
            .collect()
    }

    /// L0's bytes once it is due (a deferred L0 owes nothing yet, so it
    /// never stalls writes), plus every deeper level's excess over its
    /// target.
    pub fn pending_bytes(&self, version: &Version) -> u64 {
        let targets = self.targets(version);
        let l0 = &version.levels[0];
        let mut pending = if self.l0_due(version, targets.base) {
            l0.bytes()
        } else {
            0
        };
        for level in 1..NUM_LEVELS - 1 {
            pending += version.levels[level]
                .bytes()
                .saturating_sub(targets.bytes[level]);
        }
        pending
    }

    /// The most urgent task that `busy` admits, if any level needs one:
    /// due levels are tried by descending score, so a level blocked by
    /// running tasks leaves its turn to the next.
    pub fn pick(&self, version: &Version, busy: &Busy) -> Option<CompactionTask> {
        let base = self.targets(version).base;
        if let Some(triad) = &self.triad_disk {
            if version.levels[0].runs.len() >= self.options.l0_compaction_trigger {
                triad.record(version, triad.decide(version, base));
            }
        }
        let mut due: Vec<(usize, f64)> = self
            .scores(version)
            .into_iter()
            .enumerate()
            .filter(|&(_, score)| score >= 1.0)
            .collect();
        // Highest score first; on a tie the shallower level, as LevelDB's
        // strict `score > best_score` scan from L0 down.
        due.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        due.into_iter().find_map(|(level, score)| {
            let reason = format!("L{level} score {score:.2}");
            if level == 0 {
                let leveldb_l0 =
                    self.options.group_compaction_bytes == 0 && self.options.flush_one_table;
                let task = match leveldb_l0 {
                    true => self.leveldb_l0_task(version, base, reason),
                    false => l0_task(version, base, reason),
                };
                Some(task).filter(|t| busy.admits(&Self::claim(t, busy.order())))
            } else {
                self.level_task(version, level, reason, busy)
            }
        })
    }

    /// What a leveled task holds while it runs. A task that starts the
    /// output level's run holds the whole level: a second new run there
    /// would break "one run per level".
    pub fn claim(task: &CompactionTask, order: &KeyOrder) -> Claim {
        Claim::of(task, true, order)
    }

    fn level_task(
        &self,
        version: &Version,
        level: usize,
        reason: String,
        busy: &Busy,
    ) -> Option<CompactionTask> {
        let run = version.levels[level].runs.first()?;
        let next = version.levels[level + 1].runs.first();
        let budget = self.group_budget(version, level);
        let candidates = if self.options.settled_compaction {
            settled_order(&version.order, run, next)
        } else {
            round_robin_order(&version.order, run, &self.compact_pointers.lock()[level])
        };
        // A task's claim is the union of its victims' own claims (a merge
        // group's write range is the union of its victims' ranges, which
        // chain through the tables they share below), so a candidate that
        // conflicts with no running task alone conflicts with none beside
        // the victims already taken: each is checked once, by itself.
        let mut victims: Vec<Arc<TableMeta>> = Vec::new();
        let mut units_taken = 0;
        let mut bytes = 0;
        for (i, t) in candidates.tables.iter().enumerate() {
            if bytes >= budget || (i == candidates.wrap && !victims.is_empty()) {
                break;
            }
            let unit: Vec<Arc<TableMeta>> =
                superfile(&version.order, run, t, self.options.lsbm_superfile_tables)
                    .into_iter()
                    .filter(|u| victims.iter().all(|v| v.id != u.id))
                    .collect();
            let admitted = busy.is_empty()
                || unit
                    .iter()
                    .all(|u| busy.admits(&victim_claim(&version.order, level, run, next, u)));
            if admitted {
                bytes += unit.iter().map(|u| u.length).sum::<u64>();
                victims.extend(unit);
                units_taken += 1;
            }
        }
        let last_taken = victims.last()?;
        let advanced =
            (!self.options.settled_compaction).then(|| (level, last_taken.largest.clone()));
        victims.sort_by(|a, b| version.order.internal(&a.smallest, &b.smallest));
        let settled = self.options.settled_compaction;
        // LevelDB moves a lone victim only within the grandparent limit
        // (`IsTrivialMove`); BoLT's settled promotion has no such check.
        let lone_movable = settled
            || victims.len() != 1
            || self.within_grandparents(version, level + 1, &victims[0]);
        let mut task = build_task(&version.order, level, run, next, victims, settled, reason);
        if !lone_movable {
            task = CompactionTask {
                merges: task.moves.into_iter().map(|m| vec![m]).collect(),
                moves: Vec::new(),
                ..task
            };
        }
        Some(CompactionTask {
            compact_pointer: advanced,
            grouped: units_taken > 1,
            ..task
        })
    }

    /// The victim bytes one task of `level` takes: the fixed group, cut to
    /// `group_compaction_level_share` of the level's target when that is set.
    fn group_budget(&self, version: &Version, level: usize) -> u64 {
        let group = self.options.group_compaction_bytes;
        let share = self.options.group_compaction_level_share;
        let target = self.targets(version).bytes[level];
        let cut = match share > 0.0 && group > 0 && target != u64::MAX {
            true => group.min((target as f64 * share) as u64),
            false => group,
        };
        cut.max(1)
    }

    /// LevelDB's L0 pick (`VersionSet::PickCompaction` and
    /// `SetupOtherInputs`), taken with one victim per compaction
    /// (`group_compaction_bytes` 0) and one table per flush: the first L0 table by smallest key
    /// whose largest key is past L0's compact pointer (wrapping around),
    /// widened to every L0 table its range reaches (L0 tables overlap),
    /// with the `base` tables under them; then widened once more to the L0
    /// tables under the whole range when that takes no further `base`
    /// table and stays under 25 tables' worth of bytes. A lone L0 table
    /// with nothing under it is moved when its grandparent overlap is
    /// within the limit (`IsTrivialMove`). The task carries the largest
    /// key taken as L0's next pointer (`take` moves the pointer there).
    fn leveldb_l0_task(&self, version: &Version, base: usize, reason: String) -> CompactionTask {
        let order = &version.order;
        let mut l0: Vec<(u64, Arc<TableMeta>)> = version.levels[0]
            .runs
            .iter()
            .flat_map(|r| r.tables.iter().map(move |t| (r.id, t.clone())))
            .collect();
        l0.sort_by(|a, b| {
            order
                .internal(&a.1.smallest, &b.1.smallest)
                .then(a.1.id.cmp(&b.1.id))
        });
        let pointer = self.compact_pointers.lock()[0].clone();
        let first = l0
            .iter()
            .find(|(_, t)| {
                pointer.is_empty()
                    || order.internal(&t.largest, &pointer) == std::cmp::Ordering::Greater
            })
            .or(l0.first())
            .map(|(_, t)| t.clone());
        let below = version.levels[base].runs.first();
        let Some(first) = first else {
            return l0_task(version, base, reason);
        };
        let range = |tables: &[(u64, Arc<TableMeta>)]| {
            let lo = tables
                .iter()
                .map(|(_, t)| t.smallest_user_key())
                .min_by(|a, b| order.user(a, b))
                .unwrap_or_default()
                .to_vec();
            let hi = tables
                .iter()
                .map(|(_, t)| t.largest_user_key())
                .max_by(|a, b| order.user(a, b))
                .unwrap_or_default()
                .to_vec();
            (lo, hi)
        };
        let l0_within = |lo: &[u8], hi: &[u8]| -> Vec<(u64, Arc<TableMeta>)> {
            // LevelDB's `GetOverlappingInputs` for L0: a table reaching past
            // the range widens it and the search starts over.
            let (mut lo, mut hi) = (lo.to_vec(), hi.to_vec());
            loop {
                let taken: Vec<(u64, Arc<TableMeta>)> = l0
                    .iter()
                    .filter(|(_, t)| t.overlaps(Some(&lo), Some(&hi), order))
                    .cloned()
                    .collect();
                let (l, h) = range(&taken);
                let wider = order.lt(&l, &lo) || order.lt(&hi, &h);
                if !wider {
                    return taken;
                }
                (lo, hi) = (l, h);
            }
        };
        let under = |lo: &[u8], hi: &[u8]| {
            below.map_or_else(Vec::new, |r| r.overlapping(Some(lo), Some(hi), order))
        };
        let mut inputs = l0_within(first.smallest_user_key(), first.largest_user_key());
        let (lo, hi) = range(&inputs);
        let mut lower = under(&lo, &hi);
        if !lower.is_empty() {
            let (mut all_lo, mut all_hi) = (lo.clone(), hi.clone());
            for t in &lower {
                if order.lt(t.smallest_user_key(), &all_lo) {
                    all_lo = t.smallest_user_key().to_vec();
                }
                if order.lt(&all_hi, t.largest_user_key()) {
                    all_hi = t.largest_user_key().to_vec();
                }
            }
            let expanded = l0_within(&all_lo, &all_hi);
            let (elo, ehi) = range(&expanded);
            let limit = 25 * self.options.target_table_size;
            let bytes: u64 = expanded.iter().map(|(_, t)| t.length).sum::<u64>()
                + lower.iter().map(|t| t.length).sum::<u64>();
            if expanded.len() > inputs.len()
                && bytes < limit
                && under(&elo, &ehi).len() == lower.len()
            {
                inputs = expanded;
                lower = under(&elo, &ehi);
            }
        }
        let largest = inputs
            .iter()
            .map(|(_, t)| &t.largest)
            .max_by(|a, b| order.internal(a, b))
            .cloned()
            .unwrap_or_default();
        let compact_pointer = Some((0, largest));
        let output_run = below.map(|r| r.id);
        if let [(run, table)] = inputs.as_slice() {
            if lower.is_empty()
                && !table.is_log_table()
                && self.within_grandparents(version, base, table)
            {
                return CompactionTask {
                    merges: Vec::new(),
                    moves: vec![TaskInput {
                        level: 0,
                        run: *run,
                        tables: vec![table.clone()],
                    }],
                    output_level: base,
                    output_run,
                    reason,
                    compact_pointer,
                    grouped: false,
                };
            }
        }
        let mut merge: Vec<TaskInput> = Vec::new();
        for (run, table) in inputs {
            match merge.iter_mut().find(|i| i.run == run) {
                Some(input) => input.tables.push(table),
                None => merge.push(TaskInput {
                    level: 0,
                    run,
                    tables: vec![table],
                }),
            }
        }
        // Newest run first, as every merge group.
        merge.sort_by_key(|input| std::cmp::Reverse(input.run));
        if let (Some(run), false) = (below, lower.is_empty()) {
            merge.push(TaskInput {
                level: base,
                run: run.id,
                tables: lower,
            });
        }
        CompactionTask {
            merges: vec![merge],
            moves: Vec::new(),
            output_level: base,
            output_run,
            reason,
            compact_pointer,
            grouped: false,
        }
    }

    /// Whether moving `table` into `level` keeps its overlap with the
    /// level below within the grandparent limit (LevelDB's
    /// `IsTrivialMove`; always, without a limit).
    fn within_grandparents(&self, version: &Version, level: usize, table: &TableMeta) -> bool {
        let limit = self.grandparent_limit();
        limit == 0
            || overlap_bytes(
                &version.order,
                table,
                version.levels.get(level + 1).and_then(|l| l.runs.first()),
            ) <= limit
    }

    /// Bytes of the level below a task's output an output table may
    /// overlap (LevelDB's `MaxGrandParentOverlapBytes`); 0: no limit.
    fn grandparent_limit(&self) -> u64 {
        self.options
            .grandparent_overlap_factor
            .saturating_mul(self.options.target_table_size)
    }

    /// The tables that cut `task`'s output tables and the limit.
    pub fn grandparents(
        &self,
        version: &Version,
        task: &CompactionTask,
    ) -> (Vec<Arc<TableMeta>>, u64) {
        let limit = self.grandparent_limit();
        let below = version
            .levels
            .get(task.output_level + 1)
            .and_then(|l| l.runs.first());
        match below {
            Some(run) if limit > 0 => (run.tables.clone(), limit),
            _ => (Vec::new(), 0),
        }
    }

    /// LevelDB's `PickLevelForMemTableOutput`: a flushed run overlapping
    /// nothing in L0 goes down while the next level holds nothing it
    /// overlaps and the level after that overlaps it by at most the
    /// grandparent limit, up to `max_mem_compact_level`. It joins that
    /// level's run. `None`: a new L0 run.
    pub fn flush_target(
        &self,
        version: &Version,
        smallest: &[u8],
        largest: &[u8],
    ) -> Option<(usize, u64)> {
        let overlaps = |level: usize| {
            version.levels[level].runs.iter().any(|r| {
                !r.overlapping(Some(smallest), Some(largest), &version.order)
                    .is_empty()
            })
        };
        let max = self.options.max_mem_compact_level.min(NUM_LEVELS - 1);
        if max == 0 || overlaps(0) {
            return None;
        }
        let limit = self.grandparent_limit();
        let mut level = 0;
        while level < max && !overlaps(level + 1) {
            if let Some(grandparent) = version.levels.get(level + 2).and_then(|l| l.runs.first()) {
                let bytes: u64 = grandparent
                    .overlapping(Some(smallest), Some(largest), &version.order)
                    .iter()
                    .map(|t| t.length)
                    .sum();
                if limit > 0 && bytes > limit {
                    break;
                }
            }
            level += 1;
        }
        if level == 0 {
            return None;
        }
        // A leveled level has at most one run; an empty one gets a new run
        // numbered by the caller.
        Some((
            level,
            version.levels[level].runs.first().map_or(0, |r| r.id),
        ))
    }

    /// A manual compaction of level `level` within `[start, end]` into the
    /// next level, or `None` when the level has nothing in range.
    pub fn manual(
        &self,
        version: &Version,
        level: usize,
        start: Option<&[u8]>,
        end: Option<&[u8]>,
    ) -> Option<CompactionTask> {
        if level + 1 >= NUM_LEVELS {
            return None;
        }
        let reason = format!("manual compaction of L{level}");
        if level == 0 {
            let task = l0_task(version, self.targets(version).base, reason);
            return (!task.merges.is_empty() || !task.moves.is_empty()).then_some(task);
        }
        let run = version.levels[level].runs.first()?;
        let victims = run.overlapping(start, end, &version.order);
        if victims.is_empty() {
            return None;
        }
        let next = version.levels[level + 1].runs.first();
        let settled = self.options.settled_compaction;
        Some(build_task(
            &version.order,
            level,
            run,
            next,
            victims,
            settled,
            reason,
        ))
    }
}

/// The super-file `t` starts (LSbM §IV-C): `t` and the tables after it in
/// `run` stored in the same segment, up to `tables` of them.
fn superfile(
    order: &KeyOrder,
    run: &Run,
    t: &Arc<TableMeta>,
    tables: usize,
) -> Vec<Arc<TableMeta>> {
    let at = run
        .tables
        .partition_point(|x| order.internal(&x.smallest, &t.smallest) == std::cmp::Ordering::Less);
    run.tables[at..]
        .iter()
        .take(tables)
        .take_while(|x| x.segment == t.segment)
        .cloned()
        .collect()
}

/// What a task compacting `victim` alone would claim.
fn victim_claim(
    order: &KeyOrder,
    level: usize,
    run: &Run,
    next: Option<&Run>,
    victim: &Arc<TableMeta>,
) -> Claim {
    let task = build_task(
        order,
        level,
        run,
        next,
        vec![victim.clone()],
        true,
        String::new(),
    );
    LeveledPolicy::claim(&task, order)
}

/// Bytes of the tables of `next` overlapping `t`.
fn overlap_bytes(order: &KeyOrder, t: &TableMeta, next: Option<&Run>) -> u64 {
    next.map_or(0, |r| {
        r.overlapping(
            Some(t.smallest_user_key()),
            Some(t.largest_user_key()),
            order,
        )
        .iter()
        .map(|o| o.length)
        .sum()
    })
}

/// Victim candidates in the order a policy prefers them. From `wrap` on
/// they are the tables before the compact pointer, taken only when none
/// after it could be.
struct Candidates {
    tables: Vec<Arc<TableMeta>>,
    wrap: usize,
}

/// The tables after the compact pointer in key order, then the others
/// (LevelDB's round robin).
fn round_robin_order(order: &KeyOrder, run: &Run, pointer: &[u8]) -> Candidates {
    let start = if pointer.is_empty() {
        0
    } else {
        run.tables
            .partition_point(|t| order.internal(&t.largest, pointer) != std::cmp::Ordering::Greater)
    };
    let start = if start >= run.tables.len() { 0 } else { start };
    let mut tables = run.tables[start..].to_vec();
    let wrap = tables.len();
    tables.extend_from_slice(&run.tables[..start]);
    Candidates { tables, wrap }
}

/// Every table by ascending overlap ratio (overlap bytes per table byte),
/// ties in key order (BoLT settled compaction).
fn settled_order(order: &KeyOrder, run: &Run, next: Option<&Run>) -> Candidates {
    let mut ranked: Vec<(u64, &Arc<TableMeta>)> = run
        .tables
        .iter()
        .map(|t| (overlap_bytes(order, t, next) * 1024 / t.length.max(1), t))
        .collect();
    ranked.sort_by(|a, b| {
        a.0.cmp(&b.0)
            .then_with(|| order.internal(&a.1.smallest, &b.1.smallest))
    });
    let tables: Vec<Arc<TableMeta>> = ranked.into_iter().map(|(_, t)| t.clone()).collect();
    Candidates {
        wrap: tables.len(),
        tables,
    }
}

/// Every L0 table, with the tables of `base` (L1 unless the tree sizes its
/// levels dynamically) under them, split into groups whose key ranges
/// connect; a group of one L0 table overlapping nothing is moved to `base`
/// by metadata (a sequential load then rewrites nothing).
fn l0_task(version: &Version, base: usize, reason: String) -> CompactionTask {
    let below = version.levels[base].runs.first();
    let mut items: Vec<(usize, u64, Arc<TableMeta>)> = Vec::new();
    for run in &version.levels[0].runs {
        for t in &run.tables {
            items.push((0, run.id, t.clone()));
        }
    }
    if let Some(run) = below {
        for t in &run.tables {
            let under_l0 = version.levels[0].runs.iter().any(|r| {
                r.tables.iter().any(|l0| {
                    t.overlaps(
                        Some(l0.smallest_user_key()),
                        Some(l0.largest_user_key()),
                        &version.order,
                    )
                })
            });
            if under_l0 {
                items.push((base, run.id, t.clone()));
            }
        }
    }
    let (merges, moves) = split_components(items, &version.order, |level, _| level == 0);
    CompactionTask {
        merges,
        moves,
        output_level: base,
        output_run: below.map(|r| r.id),
        reason,
        compact_pointer: None,
        grouped: false,
    }
}

type Tables = Vec<Arc<TableMeta>>;

/// Splits victims of `level` into moves and merge groups (victims sharing
/// an overlapped table merge together). A victim overlapping nothing below
/// is moved when `settled` (BoLT's promotion by metadata) or when it is the
/// lone victim (LevelDB's trivial move); otherwise it is rewritten alone.
fn build_task(
    order: &KeyOrder,
    level: usize,
    run: &Run,
    next: Option<&Run>,
    victims: Vec<Arc<TableMeta>>,
    settled: bool,
    reason: String,
) -> CompactionTask {
    let promote = settled || victims.len() == 1;
    let mut moves = Vec::new();
    // (victims, the next-level tables under them)
    let mut groups: Vec<(Tables, Tables)> = Vec::new();
    for v in victims {
        let under = next.map_or_else(Vec::new, |r| {
            r.overlapping(
                Some(v.smallest_user_key()),
                Some(v.largest_user_key()),
                order,
            )
        });
        if under.is_empty() && promote && !v.is_log_table() {
            moves.push(v);
            continue;
        }
        match groups.last_mut() {
            Some((vs, us))
                if !under.is_empty() && us.last().map(|t| t.id) == under.first().map(|t| t.id) =>
            {
                vs.push(v);
                us.extend(under.into_iter().skip(1));
            }
            _ => groups.push((vec![v], under)),
        }
    }
    let next_id = next.map(|r| r.id);
    CompactionTask {
        merges: groups
            .into_iter()
            .map(|(vs, us)| {
                let victims = TaskInput {
                    level,
                    run: run.id,
                    tables: vs,
                };
                match next_id {
                    Some(next_run) if !us.is_empty() => vec![
                        victims,
                        TaskInput {
                            level: level + 1,
                            run: next_run,
                            tables: us,
                        },
                    ],
                    _ => vec![victims],
                }
            })
            .collect(),
        moves: if moves.is_empty() {
            Vec::new()
        } else {
            vec![TaskInput {
                level,
                run: run.id,
                tables: moves,
            }]
        },
        output_level: level + 1,
        output_run: next_id,
        reason,
        compact_pointer: None,
        grouped: false,
    }
}

mod targets;
#[cfg(test)]
mod tests;
pub mod triad_disk;
