//! LSbM-tree's compaction buffer (Teng et al., ICDE 2017): what a leveled
//! compaction adds to and takes from the buffer runs of its levels, trim,
//! and freezing. Each function extends or builds a `VersionEdit`; the
//! buffer itself lives in the version (`version::buffer`).
//!
//! - **Buffered merge** (Algorithm 1): the level-n tables a task takes
//!   into level n+1 (merged or moved) are appended unchanged to the
//!   newest buffer run of n+1, or to a new run when they do not follow its
//!   last table in key order (a new merge round). L0's tables join L1's
//!   buffer (B₁) too, older L0 runs first: L0 runs overlap one another, so
//!   a newer one's tables go to a newer buffer run. Under dynamic level
//!   sizing L0 compacts into the base level, the levels above it empty:
//!   its buffer is the one L0's tables join (the paper's B₁ is the buffer
//!   of the first level holding data), and the freeze accounting and the
//!   drain count the task from the level its tables leave. The levels it
//!   passes by are empty, but one the base level moved below keeps its
//!   buffer: its copies of the arrivals' keys are removed (`pass_by`).
//! - **Drain** (lines 18–20): as level n's victims leave it, the entries
//!   of n's older buffer runs (all but the newest) that end inside the
//!   victims' key range are removed, so the buffer empties in key order at
//!   the pace the level does.
//! - **Bound**: past `lsbm_max_buffer_bytes`, the oldest runs' tables are
//!   removed first.
//! - **Trim** (Algorithm 2): tables whose share of cached blocks is under
//!   `lsbm_trim_threshold` are removed, except those appended since the
//!   previous trim. The paper spares each level's newest run, B⁰ᵢ, whose
//!   blocks are "still actively being loaded": here a run stays newest
//!   for a whole merge round of the level above, which for the last level
//!   (never drained, since nothing leaves it) spans the run, so sparing it
//!   kept ~150 tables of B₃ (76 MB) that no read used; sparing what
//!   arrived within one trim interval keeps the paper's reason.
//! - **Freeze**: when a merge round of level n+1 shows repeated data
//!   (§IV-A: the data this round brought in exceed what the level holds of
//!   them, by over a quarter of its size), arrivals become removed entries
//!   until a whole level's worth has left it; then the level unfreezes.
//!   As in the paper, a round starts empty: what an arrival supersedes of
//!   the data the level held when the round began is not repeated (see
//!   `account`).
//!
//! A removed entry keeps its key range to stop lookups (see
//! `version::buffer`); one that no older present table overlaps guards
//! nothing and is dropped.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::task::CompactionTask;
use crate::format::{KeyOrder, NUM_LEVELS};
use crate::options::Options;
use crate::version::lsbm_buffer::{BufferRecording, BufferRound};
use crate::version::{Level, TableMeta, Version, VersionEdit};

/// Repeated data above this share of a level's bytes freeze its buffer.
/// Uniform writes over a key space twice a level's size repeat themselves
/// within one of its rounds by up to 1 - (1 - e^-0.5) / 0.5 = 21% of what
/// arrives (the paper's 20 GB of data over a 10 GB level 2, whose buffer
/// it shows serving, Figure 8d): with a tenth, the scaled experiment's
/// level 2 froze half-way through its rounds, and the merges into it
/// invalidated its cached blocks as they do without the buffer (lookups
/// stopped by its removed entries ~7,600 times a second, 2026-11-28). The
/// last level, where all data repeat, still freezes.
const FREEZE_REPEATED_DIVISOR: u64 = 4;

/// Removed entries a level keeps only for range reads (see `clean_up`),
/// at least; more when the level holds more tables.
const MIN_KEPT_FOR_RANGE_READS: usize = 64;

/// The compaction buffer's settings and the time of the last trim; its
/// state (runs, frozen flags, freeze accounting) lives in the version.
#[derive(Debug)]
pub struct CompactionBuffer {
    max_bytes: u64,
    trim_interval: Duration,
    trim_threshold: f64,
    last_trim: Mutex<Instant>,
    /// Tables appended since the last trim began, and those appended in
    /// the interval before it (which that trim spared).
    appended: Mutex<Appended>,
}

/// The buffer tables too new to trim (see the module's doc).
#[derive(Debug, Default)]
struct Appended {
    since_last_trim: HashSet<u64>,
    spared: HashSet<u64>,
}

/// What an edit did to the buffer, for the statistics: per level.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BufferChange {
    /// Tables removed (trim, drain, bound, or arrivals while frozen).
    pub removed: [u64; NUM_LEVELS],
    /// Whether the edit froze the level's buffer (0 or 1).
    pub froze: [u64; NUM_LEVELS],
}

impl BufferChange {
    /// Tables removed at every level.
    pub fn removed_total(&self) -> u64 {
        self.removed.iter().sum()
    }

    /// Levels frozen.
    pub fn froze_total(&self) -> u64 {
        self.froze.iter().sum()
    }
}

impl CompactionBuffer {
    /// The buffer of a store whose options turn it on.
    pub fn new(options: &Options) -> Option<CompactionBuffer> {
        options.lsbm_buffer.then(|| CompactionBuffer {
            max_bytes: options.lsbm_max_buffer_bytes,
            trim_interval: Duration::from_millis(options.lsbm_trim_interval),
            trim_threshold: options.lsbm_trim_threshold,
            last_trim: Mutex::new(Instant::now()),
            appended: Mutex::new(Appended::default()),
        })
    }

    pub fn trim_threshold(&self) -> f64 {
        self.trim_threshold
    }

    /// A zero `lsbm_trim_interval`: trim after every compaction.
    pub fn trims_after_every_compaction(&self) -> bool {
        self.trim_interval.is_zero()
    }

    /// How long until the next trim is due (zero: now).
    pub fn until_trim(&self) -> Duration {
        self.trim_interval
            .saturating_sub(self.last_trim.lock().elapsed())
    }

    /// Records that a trim runs now: the tables appended since the last
    /// one are spared by it (`trim_edit`), later ones by the next.
    pub fn trimmed(&self) {
        *self.last_trim.lock() = Instant::now();
        let mut appended = self.appended.lock();
        appended.spared = std::mem::take(&mut appended.since_last_trim);
    }

    /// Records that table `id` joined the buffer (the next trim spares it).
    pub fn note_appended(&self, id: u64) {
        self.appended.lock().since_last_trim.insert(id);
    }

    /// Whether a trim may judge table `id` (not appended since the trim
    /// before it).
    pub fn trimmable(&self, id: u64) -> bool {
        let appended = self.appended.lock();
        !appended.spared.contains(&id) && !appended.since_last_trim.contains(&id)
    }

    /// Adds to `edit`, the edit completing `task` against `version`, the
    /// buffer's part: appends (or, frozen, removed entries), drain, freeze
    /// and unfreeze, the space bound and the clean-up of removed entries.
    /// `new_run` numbers a new buffer run.
    pub fn extend_task_edit(
        &self,
        version: &Version,
        task: &CompactionTask,
        edit: &mut VersionEdit,
        mut new_run: impl FnMut() -> u64,
    ) -> Result<BufferChange, String> {
        let output = task.output_level;
        // The level the task's tables leave: the one above `output`, or L0
        // when L0 compacts into a dynamic base level below L1 (the levels
        // between are empty: the base level is never below a level holding
        // data). A task takes tables from one level above its output.
        let input = task
            .merge_inputs()
            .chain(task.moves.iter())
            .map(|i| i.level)
            .filter(|&l| l < output)
            .min()
            .unwrap_or(output.saturating_sub(1));
        // The tables coming from the level above, older L0 runs first (run
        // ids grow with age) and each run in key order: an L0 table lands
        // in an older buffer run than a newer L0 table overlapping it, so
        // the newest buffer entry covering a key stays its newest version.
        // Every table bringing data into `output` joins its buffer, so no
        // version reaches the level past it.
        let arrivals: Vec<_> = {
            let mut tables: Vec<_> = task
                .merge_inputs()
                .chain(task.moves.iter())
                .filter(|i| i.level == input && output >= 1)
                .flat_map(|i| i.tables.iter().map(move |t| (i.run, t.clone())))
                .collect();
            tables.sort_by(|(ra, a), (rb, b)| {
                ra.cmp(rb)
                    .then_with(|| version.order.internal(&a.smallest, &b.smallest))
            });
            tables.into_iter().map(|(_, t)| t).collect()
        };
        let departed: u64 = arrivals.iter().map(|t| t.length).sum();
        let mut change = BufferChange::default();
        let after = version.apply(edit)?;
        let frozen = Self::account(version, &after, (input, output), departed, edit, &mut change);
        if !arrivals.is_empty() {
            let newest = version.levels[output].buffer.first();
            let mut run = newest.map(|r| r.id);
            let mut last_key: Option<Vec<u8>> = newest
                .and_then(|r| r.entries.last())
                .map(|e| e.meta.largest_user_key().to_vec());
            for t in &arrivals {
                let follows = last_key
                    .as_deref()
                    .is_none_or(|last| version.order.lt(last, t.smallest_user_key()));
                let id = match run {
                    Some(id) if follows => id,
                    _ => {
                        let id = new_run();
                        run = Some(id);
                        id
                    }
                };
                edit.add_buffer_table(output, id, t.clone());
                if frozen {
                    edit.remove_buffer_table(output, id, t.id);
                    change.removed[output] += 1;
                } else {
                    self.note_appended(t.id);
                }
                last_key = Some(t.largest_user_key().to_vec());
            }
            // The victims left `input`: drain its older buffer runs to the
            // same key. A level they leave empty drains whole, its newest
            // run too: Algorithm 1 (lines 18-20) empties B′ᵢ as C′ᵢ empties.
            // Its copies are of data now below it, which no lookup asks
            // this level for, and they held their space until a trim (B₄'s
            // tables after the dynamic base level moved below it, session
            // 24).
            let (lo, hi) = (
                arrivals[0].smallest_user_key(),
                arrivals[arrivals.len() - 1].largest_user_key(),
            );
            let emptied = input >= 1 && after.levels[input].table_count() == 0;
            let drained = usize::from(!emptied);
            for run in version.levels[input].buffer.iter().skip(drained) {
                for e in run.entries.iter().filter(|e| !e.removed) {
                    let end = e.meta.largest_user_key();
                    if emptied || (version.order.le(lo, end) && version.order.le(end, hi)) {
                        edit.remove_buffer_table(input, run.id, e.meta.id);
                        change.removed[input] += 1;
                    }
                }
            }
            Self::pass_by(version, &arrivals, input + 1..output, edit, &mut change);
        }
        let after = version.apply(edit)?;
        bound(&after, self.max_bytes, edit, &mut change);
        clean_up(&version.apply(edit)?, edit);
        Ok(change)
    }

    /// The arrivals of an L0 compaction into a dynamic base level pass by
    /// the levels above it (`skipped`): those are empty, but a level the
    /// base level moved below (its data all merged down) keeps its buffer,
    /// copies of data older than the arrivals that no later arrival of its
    /// own would shadow. Its present entries overlapping an arrival are
    /// removed, so neither a lookup nor a range read (which would meet the
    /// copy once the level holds data again, or through its empty run)
    /// answers with a version the arrivals superseded; a tombstone among
    /// them dropped at the last level would otherwise leave the copy's
    /// version live (`model_lsbm_buffer_on_dynamic_level_sizing`, seed
    /// 505).
    fn pass_by(
        version: &Version,
        arrivals: &[Arc<TableMeta>],
        skipped: std::ops::Range<usize>,
        edit: &mut VersionEdit,
        change: &mut BufferChange,
    ) {
        let order = &version.order;
        for level in skipped {
            for run in &version.levels[level].buffer {
                for e in run.entries.iter().filter(|e| !e.removed) {
                    let superseded = arrivals.iter().any(|t| {
                        e.meta.overlaps(
                            Some(t.smallest_user_key()),
                            Some(t.largest_user_key()),
                            order,
                        )
                    });
                    if superseded {
                        edit.remove_buffer_table(level, run.id, e.meta.id);
                        change.removed[level] += 1;
                    }
                }
            }
        }
    }

    /// Freeze accounting for a task from `input` into `output` whose
    /// `arrived` bytes left `input`: returns whether `output` is frozen
    /// after the edit, adding to it a freeze or unfreeze and the levels'
    /// new rounds. Also counts what left `input` (its victims going down
    /// into `output`).
    fn account(
        before: &Version,
        after: &Version,
        (input, output): (usize, usize),
        arrived: u64,
        edit: &mut VersionEdit,
        change: &mut BufferChange,
    ) -> bool {
        if input >= 1 {
            let left = before.levels[input]
                .bytes()
                .saturating_sub(after.levels[input].bytes());
            let mut round = before.levels[input].round;
            round.departed += left;
            if round.departed >= round.start_bytes {
                // A whole level's worth went down: the round ends.
                round = BufferRound {
                    start_bytes: after.levels[input].bytes(),
                    ..BufferRound::default()
                };
                if before.levels[input].frozen {
                    edit.buffer_frozen.push((input, false));
                }
            }
            if round != before.levels[input].round {
                edit.buffer_rounds.push((input, round));
            }
        }
        let mut frozen = before.levels[output].frozen;
        if output >= 1 && arrived > 0 {
            let (was, size) = (before.levels[output].bytes(), after.levels[output].bytes());
            let mut round = before.levels[output].round;
            if round.arrived == 0 && round.departed == 0 {
                round.start_bytes = was;
            }
            round.arrived += arrived;
            // The paper's C_{i+1} starts each round empty, the level's
            // older data waiting apart in C'_{i+1}: an arrival can repeat
            // only this round's arrivals. Here both share one run, so what
            // a merge dropped as superseded is split between the two parts
            // by their shares of the level, and the older part's share
            // counts as having left it (as if merged down).
            // The last level (nothing below it holds data) has no C'ₖ: its
            // data never leave, so all it drops repeats data it holds (the
            // paper's level 3, whose buffer freezes). Split as above, it
            // froze only once most of its older data had been superseded
            // (not within the scaled experiment's 100 s), and its buffer
            // grew with copies no read used (the store 1.44x `leveldb`'s,
            // 2026-11-28).
            let dropped = arrived.saturating_sub(size.saturating_sub(was));
            let older = round.start_bytes.saturating_sub(round.departed);
            let last = after.levels[output + 1..]
                .iter()
                .all(|l| l.table_count() == 0);
            if was > 0 && !last {
                let share = (older.min(was) as f64 / was as f64).min(1.0);
                round.departed += (dropped as f64 * share).round() as u64;
            }
            edit.buffer_rounds.push((output, round));
            let expected = (round.start_bytes + round.arrived).saturating_sub(round.departed);
            let repeated = expected.saturating_sub(size);
            // The last level's round never ends, and a store that filled
            // it with unique data first (a load) needed a quarter of the
            // level's size repeated after it: ~50 MB of the scaled
            // experiment's 200 MB, more than its 60-100 s write, so its
            // buffer kept a copy of the level and served range reads by
            // merging its runs (0.31x `default`, 2026-11-29). The paper's
            // test itself: a merge that leaves the level smaller than what
            // it brought in (here: most of it superseded data already
            // there) shows repeated data.
            let repeats_here = last && dropped > arrived / 2;
            if !frozen
                && size > 0
                && (repeated > size / FREEZE_REPEATED_DIVISOR || repeats_here)
            {
                frozen = true;
                edit.buffer_frozen.push((output, true));
                change.froze[output] += 1;
            }
        }
        frozen
    }

    /// The edit of one trim of `version`: present tables (but those
    /// appended since the previous trim, `trimmable`, unless their level is
    /// frozen) whose cached-block share (`cached_ratio`, by table id;
    /// tables without one are kept) is under the threshold are removed. A
    /// frozen level takes no arrivals and its buffer holds data the level
    /// is superseding, so the reason to spare fresh tables (reads still
    /// loading their blocks) does not hold there: a last level frozen
    /// after a load kept the load's copy, as much as the level itself
    /// (413 tables, 200 MB), for a second trim interval.
    pub fn trim_edit(
        &self,
        version: &Version,
        cached_ratio: &HashMap<u64, f64>,
    ) -> Result<(VersionEdit, BufferChange), String> {
        let mut edit = VersionEdit::default();
        let mut change = BufferChange::default();
        for (level, l) in version.levels.iter().enumerate() {
            for run in &l.buffer {
                for e in run.entries.iter().filter(|e| !e.removed) {
                    if (l.frozen || self.trimmable(e.meta.id))
                        && cached_ratio
                            .get(&e.meta.id)
                            .is_some_and(|&r| r < self.trim_threshold)
                    {
                        edit.remove_buffer_table(level, run.id, e.meta.id);
                        change.removed[level] += 1;
                    }
                }
            }
        }
        clean_up(&version.apply(&edit)?, &mut edit);
        Ok((edit, change))
    }
}

/// What an open adds to its first edit for the compaction buffer. With
/// `lsbm_buffer`, a store that did not record arrivals starts now (range
/// reads trust the buffer only for newer data). Without it the buffer is
/// dropped: compactions would no longer append to it, so its tables could
/// answer lookups with versions later writes superseded.
pub fn open_edit(version: &Version, lsbm_buffer: bool, last_sequence: u64, edit: &mut VersionEdit) {
    for (i, level) in version.levels.iter().enumerate() {
        let recording = match (lsbm_buffer, level.recording) {
            (true, BufferRecording::Off) => BufferRecording::Since(last_sequence),
            (true, since) => since,
            (false, _) => BufferRecording::Off,
        };
        if recording != level.recording {
            edit.buffer_recording.push((i, recording));
        }
        if lsbm_buffer {
            continue;
        }
        for run in &level.buffer {
            for e in &run.entries {
                edit.drop_buffer_entry(i, run.id, e.meta.id);
            }
        }
        if level.frozen {
            edit.buffer_frozen.push((i, false));
        }
        if level.round != BufferRound::default() {
            edit.buffer_rounds.push((i, BufferRound::default()));
        }
    }
}

/// Removes the oldest runs' tables (across levels) while the buffer holds
/// more than `max_bytes`, counting them in `change`.
fn bound(version: &Version, max_bytes: u64, edit: &mut VersionEdit, change: &mut BufferChange) {
    let mut bytes = version.buffer_bytes();
    if bytes <= max_bytes {
        return;
    }
    let mut runs: Vec<(u64, usize)> = version
        .levels
        .iter()
        .enumerate()
        .flat_map(|(level, l)| l.buffer.iter().map(move |r| (r.id, level)))
        .collect();
    runs.sort_unstable();
    for (run_id, level) in runs {
        let run = version.levels[level]
            .buffer
            .iter()
            .find(|r| r.id == run_id)
            .expect("listed run exists");
        for t in run.present() {
            if bytes <= max_bytes {
                return;
            }
            edit.remove_buffer_table(level, run_id, t.id);
            bytes -= t.length;
            change.removed[level] += 1;
        }
    }
}

/// Drops the removed entries of `version` (the state after `edit`) that
/// guard nothing: no present table in an older run of their level
/// overlaps them. One whose data the level's own run may still hold is
/// kept, to tell range reads that the buffer lacks data the run has; past
/// `MIN_KEPT_FOR_RANGE_READS` or the level's table count such entries go
/// too, oldest data first, and the level's recording moves past their
/// sequence numbers instead (range reads then avoid the run's tables that
/// may hold them). An entry the edit itself adds or removes is taken out
/// of those parts of the edit instead (drops apply before either).
fn clean_up(version: &Version, edit: &mut VersionEdit) {
    for (level, l) in version.levels.iter().enumerate() {
        // (max sequence, run, table) of entries kept for range reads.
        let mut kept: Vec<(u64, u64, u64)> = Vec::new();
        for (i, run) in l.buffer.iter().enumerate() {
            for e in run.entries.iter().filter(|e| e.removed) {
                let lo = Some(e.meta.smallest_user_key());
                let hi = Some(e.meta.largest_user_key());
                let guards = l.buffer[i + 1..]
                    .iter()
                    .flat_map(|older| older.present())
                    .any(|t| t.overlaps(lo, hi, &version.order));
                if guards {
                    continue;
                }
                if may_hold_data_of(l, &e.meta, &version.order) {
                    kept.push((e.meta.max_seq, run.id, e.meta.id));
                } else {
                    drop_entry(edit, level, run.id, e.meta.id);
                }
            }
        }
        let limit = l.table_count().max(MIN_KEPT_FOR_RANGE_READS);
        if kept.len() > limit {
            kept.sort_unstable();
            let excess = &kept[..kept.len() - limit];
            for &(_, run, table) in excess {
                drop_entry(edit, level, run, table);
            }
            let newest = excess.last().map_or(0, |&(seq, _, _)| seq);
            let since = match l.recording {
                BufferRecording::Since(since) => BufferRecording::Since(since.max(newest)),
                BufferRecording::Off => BufferRecording::Off,
            };
            edit.buffer_recording.retain(|&(at, _)| at != level);
            edit.buffer_recording.push((level, since));
        }
    }
}

/// Takes removed entry `table` out of buffer run `run` of `level`.
fn drop_entry(edit: &mut VersionEdit, level: usize, run: u64, table: u64) {
    edit.buffer_removed
        .retain(|d| (d.level, d.run, d.table) != (level, run, table));
    let added = edit
        .buffer_tables
        .iter()
        .position(|n| (n.level, n.run, n.meta.id) == (level, run, table));
    match added {
        Some(i) => {
            edit.buffer_tables.remove(i);
        }
        None => edit.drop_buffer_entry(level, run, table),
    }
}

/// Whether `level`'s own runs may still hold data of `t`: a table there
/// overlaps it in user keys and in sequence numbers.
fn may_hold_data_of(level: &Level, t: &TableMeta, order: &KeyOrder) -> bool {
    let (lo, hi) = (Some(t.smallest_user_key()), Some(t.largest_user_key()));
    level.runs.iter().any(|r| {
        r.overlapping(lo, hi, order)
            .iter()
            .any(|u| u.min_seq <= t.max_seq && t.min_seq <= u.max_seq)
    })
}

#[cfg(test)]
mod tests;
