//! `Version`: an immutable picture of every live table, shared by readers
//! through an `Arc`. Applying a `VersionEdit` yields the next version.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use super::buffer_range::{self, LevelPlan};
use super::edit::{MergeJournal, VersionEdit};
use super::lsbm_buffer::{BufferEntry, BufferRecording, BufferRound, BufferRun};
use super::meta::{Level, Run, TableMeta};
use super::table_cache::TableCache;
use crate::format::KeyOrder;
use crate::io::{Backing, Backings, Extent};

/// Levels in every version: L0 holds one run per flush, deeper levels hold
/// the runs compaction builds.
pub use crate::format::NUM_LEVELS;

pub struct Version {
    pub levels: Vec<Level>,
    /// A journaled merge in progress (SifrDB early cleaning), if any.
    pub merge_journal: Option<MergeJournal>,
    /// Each level's range-read plan (LSbM Algorithm 4), made on first use.
    range_plans: OnceLock<Vec<Option<LevelPlan>>>,
    /// Per level and buffer run, the present buffer tables holding range
    /// tombstones, found on first use (`buffer_tombstone_tables`).
    buffer_tombstones: OnceLock<Vec<Vec<Vec<Arc<TableMeta>>>>>,
    /// Set once the version is installed: its tables and their files stay
    /// referenced until it drops (see `io::backing`).
    pins: Option<Arc<Backings>>,
    /// The store's key order, which orders the tables of a run.
    pub order: KeyOrder,
}

/// An empty version of a store in the built-in byte order.
impl Default for Version {
    fn default() -> Version {
        Version::empty(KeyOrder::Bytewise)
    }
}

/// A clone is a new, not yet installed version: it holds no references.
impl Clone for Version {
    fn clone(&self) -> Version {
        Version {
            levels: self.levels.clone(),
            merge_journal: self.merge_journal.clone(),
            range_plans: OnceLock::new(),
            buffer_tombstones: OnceLock::new(),
            pins: None,
            order: self.order.clone(),
        }
    }
}

/// Versions are equal when they hold the same tables, installed or not.
impl PartialEq for Version {
    fn eq(&self, other: &Version) -> bool {
        self.levels == other.levels && self.merge_journal == other.merge_journal
    }
}

impl Eq for Version {}

impl std::fmt::Debug for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Version")
            .field("levels", &self.levels)
            .field("merge_journal", &self.merge_journal)
            .field("installed", &self.pins.is_some())
            .finish()
    }
}

impl Drop for Version {
    fn drop(&mut self) {
        if let Some(backings) = self.pins.take() {
            let extents: Vec<Extent> = self.tables().map(|t| t.extent()).collect();
            backings.unpin_extents(&extents);
            backings.unpin_files(self.referenced_logs());
        }
    }
}

impl Version {
    /// A version without tables, of a store whose keys sort by `order`.
    pub fn empty(order: KeyOrder) -> Version {
        Version {
            levels: vec![Level::default(); NUM_LEVELS],
            merge_journal: None,
            range_plans: OnceLock::new(),
            buffer_tombstones: OnceLock::new(),
            pins: None,
            order,
        }
    }

    /// Applies an edit: deletions first, then additions. Errors describe an
    /// edit that does not fit this version (a corrupt MANIFEST).
    pub fn apply(&self, edit: &VersionEdit) -> Result<Version, String> {
        let mut next = self.clone();
        for d in &edit.deleted_tables {
            let level = &mut next.levels[d.level];
            let run = level
                .runs
                .iter_mut()
                .find(|r| r.id == d.run)
                .ok_or_else(|| format!("deleted table {} names missing run {}", d.table, d.run))?;
            let before = run.tables.len();
            run.tables.retain(|t| t.id != d.table);
            if run.tables.len() == before {
                return Err(format!(
                    "deleted table {} is not in run {} of L{}",
                    d.table, d.run, d.level
                ));
            }
        }
        let mut touched: Vec<(usize, u64)> = Vec::new();
        for n in &edit.new_tables {
            let level = &mut next.levels[n.level];
            let run = match level.runs.iter_mut().position(|r| r.id == n.run) {
                Some(i) => &mut level.runs[i],
                None => {
                    level.runs.push(Run {
                        id: n.run,
                        tables: Vec::new(),
                    });
                    level.runs.last_mut().expect("just pushed")
                }
            };
            run.tables.push(n.meta.clone());
            touched.push((n.level, n.run));
        }
        for level in &mut next.levels {
            level.runs.retain(|r| !r.tables.is_empty());
            level.runs.sort_by_key(|r| std::cmp::Reverse(r.id));
        }
        next.apply_buffer(edit)?;
        for (level, key) in &edit.compact_pointers {
            next.levels[*level].compact_pointer.clone_from(key);
        }
        if edit.merge_done {
            next.merge_journal = None;
        }
        if let Some(j) = &edit.merge_journal {
            next.merge_journal = Some(j.clone());
        }
        touched.sort_unstable();
        touched.dedup();
        for (level, run_id) in touched {
            let run = next.levels[level]
                .runs
                .iter_mut()
                .find(|r| r.id == run_id)
                .expect("touched run exists");
            let order = &next.order;
            run.tables
                .sort_by(|a, b| order.internal(&a.smallest, &b.smallest));
            for pair in run.tables.windows(2) {
                if !order.lt(pair[0].largest_user_key(), pair[1].smallest_user_key()) {
                    return Err(format!(
                        "tables {} and {} overlap in run {} of L{}",
                        pair[0].id, pair[1].id, run_id, level
                    ));
                }
            }
        }
        Ok(next)
    }

    /// The compaction-buffer part of an edit: dropped entries, appended
    /// tables, removals, then frozen flags.
    fn apply_buffer(&mut self, edit: &VersionEdit) -> Result<(), String> {
        for d in &edit.buffer_dropped {
            let run = buffer_run(&mut self.levels[d.level], d.run, d.table)?;
            run.entries.retain(|e| e.meta.id != d.table);
        }
        let mut touched: Vec<(usize, u64)> = Vec::new();
        for n in &edit.buffer_tables {
            let level = &mut self.levels[n.level];
            let run = match level.buffer.iter().position(|r| r.id == n.run) {
                Some(i) => &mut level.buffer[i],
                None => {
                    level.buffer.push(BufferRun {
                        id: n.run,
                        entries: Vec::new(),
                    });
                    level.buffer.last_mut().expect("just pushed")
                }
            };
            run.entries.push(BufferEntry {
                meta: n.meta.clone(),
                removed: false,
            });
            touched.push((n.level, n.run));
        }
        for d in &edit.buffer_removed {
            let run = buffer_run(&mut self.levels[d.level], d.run, d.table)?;
            for e in run.entries.iter_mut().filter(|e| e.meta.id == d.table) {
                e.removed = true;
            }
        }
        for &(level, frozen) in &edit.buffer_frozen {
            self.levels[level].frozen = frozen;
        }
        for &(level, round) in &edit.buffer_rounds {
            self.levels[level].round = round;
        }
        for &(level, recording) in &edit.buffer_recording {
            self.levels[level].recording = recording;
        }
        for level in &mut self.levels {
            level.buffer.retain(|r| !r.entries.is_empty());
            level.buffer.sort_by_key(|r| std::cmp::Reverse(r.id));
        }
        touched.sort_unstable();
        touched.dedup();
        for (level, run_id) in touched {
            let run = self.levels[level]
                .buffer
                .iter_mut()
                .find(|r| r.id == run_id)
                .expect("touched run exists");
            let order = &self.order;
            run.entries
                .sort_by(|a, b| order.internal(&a.meta.smallest, &b.meta.smallest));
            for pair in run.entries.windows(2) {
                if !order.lt(
                    pair[0].meta.largest_user_key(),
                    pair[1].meta.smallest_user_key(),
                ) {
                    return Err(format!(
                        "tables {} and {} overlap in buffer run {} of L{}",
                        pair[0].meta.id, pair[1].meta.id, run_id, level
                    ));
                }
            }
        }
        Ok(())
    }

    /// References every table of this version and its file in `backings`
    /// until the version drops. Called once, when the version is installed.
    pub fn pin(&mut self, backings: Arc<Backings>) {
        debug_assert!(self.pins.is_none(), "a version is installed once");
        let extents: Vec<Extent> = self.tables().map(|t| t.extent()).collect();
        backings.pin_extents(&extents);
        // A log table's log lives as long as a version holding the table.
        backings.pin_files(self.referenced_logs());
        self.pins = Some(backings);
    }

    /// The logs the version's log tables reference, once per table that
    /// references them (TRIAD-LOG).
    pub fn referenced_logs(&self) -> impl Iterator<Item = Backing> + '_ {
        self.tables()
            .flat_map(|t| t.logs.iter().map(|&log| Backing::log(log)))
    }

    /// Every live table, the buffer's present tables included (a table
    /// moved by metadata may be both in a level and in its buffer).
    pub fn tables(&self) -> impl Iterator<Item = &Arc<TableMeta>> {
        self.levels.iter().flat_map(|l| {
            l.runs
                .iter()
                .flat_map(|r| r.tables.iter())
                .chain(l.buffer_tables())
        })
    }

    pub fn table_count(&self) -> usize {
        self.levels.iter().map(Level::table_count).sum()
    }

    /// Live tables per segment.
    pub fn segment_table_counts(&self) -> HashMap<u64, usize> {
        let mut counts = HashMap::new();
        for t in self.tables() {
            *counts.entry(t.segment).or_insert(0) += 1;
        }
        counts
    }

    /// The edit that recreates this version from nothing (the first record
    /// of a fresh MANIFEST).
    pub fn snapshot_edit(&self) -> VersionEdit {
        let mut edit = VersionEdit {
            merge_journal: self.merge_journal.clone(),
            ..VersionEdit::default()
        };
        for (i, level) in self.levels.iter().enumerate() {
            for run in &level.runs {
                for t in &run.tables {
                    edit.add_table(i, run.id, t.clone());
                }
            }
            for run in &level.buffer {
                for e in &run.entries {
                    edit.add_buffer_table(i, run.id, e.meta.clone());
                    if e.removed {
                        edit.remove_buffer_table(i, run.id, e.meta.id);
                    }
                }
            }
            if level.frozen {
                edit.buffer_frozen.push((i, true));
            }
            if level.round != BufferRound::default() {
                edit.buffer_rounds.push((i, level.round));
            }
            if level.recording != BufferRecording::Off {
                edit.buffer_recording.push((i, level.recording));
            }
            if !level.compact_pointer.is_empty() {
                edit.compact_pointers
                    .push((i, level.compact_pointer.clone()));
            }
        }
        edit
    }

    /// How range reads read `level` piece by piece, when its compaction
    /// buffer serves some of them (`version::buffer_range`).
    pub fn range_plan(&self, level: usize) -> Option<&LevelPlan> {
        self.range_plans
            .get_or_init(|| {
                (0..self.levels.len())
                    .map(|l| buffer_range::plan(self, l))
                    .collect()
            })
            .get(level)?
            .as_ref()
    }

    /// Per buffer run of `level` (newest first), its present tables that
    /// hold range tombstones, opened through `cache` once per version: an
    /// iterator's range-deletion view asks every run it is given about
    /// every key it yields, and most buffer tables hold none (`lsbm`'s
    /// range reads spent a third of their time asking them, 2026-11-28).
    pub fn buffer_tombstone_tables(
        &self,
        level: usize,
        cache: &TableCache,
    ) -> crate::error::Result<&[Vec<Arc<TableMeta>>]> {
        if let Some(found) = self.buffer_tombstones.get() {
            return Ok(&found[level]);
        }
        let mut found = Vec::with_capacity(self.levels.len());
        for l in &self.levels {
            let mut runs = Vec::with_capacity(l.buffer.len());
            for run in &l.buffer {
                let mut tables = Vec::new();
                for t in run.present() {
                    if !cache.table(t)?.range_deletions().is_empty() {
                        tables.push(t.clone());
                    }
                }
                runs.push(tables);
            }
            found.push(runs);
        }
        Ok(&self.buffer_tombstones.get_or_init(|| found)[level])
    }

    /// Bytes of every level's compaction buffer (present tables).
    pub fn buffer_bytes(&self) -> u64 {
        self.levels.iter().map(Level::buffer_bytes).sum()
    }

    /// The user key up to which the merge inputs in run `run` of `level`
    /// are superseded: a journaled merge's inputs, whose keys up to the
    /// last checkpoint live on in the interim run. Readers must skip those
    /// keys: an input left in place by a checkpoint (it straddles the key)
    /// may still hold a version whose deletion the merge dropped. Tables of
    /// the run wholly at or below the key are the task's moves (a checkpoint
    /// releases merge inputs there), untouched until the merge ends: see
    /// `Version::superseded_in`.
    pub fn superseded_through(&self, level: usize, run: u64) -> Option<&[u8]> {
        let j = self.merge_journal.as_ref()?;
        (j.level == level && !j.resume_after.is_empty() && j.input_runs.contains(&run))
            .then_some(j.resume_after.as_slice())
    }

    /// Whether `user_key` of table `meta` in run `run` of `level` is
    /// superseded (see `superseded_through`): only a table straddling the
    /// checkpoint key is a merge input still in place.
    pub fn superseded_in(&self, level: usize, run: u64, meta: &TableMeta, user_key: &[u8]) -> bool {
        self.superseded_through(level, run).is_some_and(|through| {
            self.order.le(user_key, through) && self.order.lt(through, meta.largest_user_key())
        })
    }

    /// Index of the deepest level holding any table, if any.
    pub fn deepest_nonempty_level(&self) -> Option<usize> {
        self.levels.iter().rposition(|l| !l.runs.is_empty())
    }
}

/// The buffer run `run` of `level`, which must hold entry `table`.
fn buffer_run(level: &mut Level, run: u64, table: u64) -> Result<&mut BufferRun, String> {
    level
        .buffer
        .iter_mut()
        .find(|r| r.id == run && r.entries.iter().any(|e| e.meta.id == table))
        .ok_or_else(|| format!("buffer entry {table} is not in buffer run {run}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::version::meta::tests::table;

    #[test]
    fn an_installed_version_pins_its_buffer_runs_tables_too() {
        let backings = Arc::new(crate::io::Backings::default());
        let t = table(7, "a", "b");
        let mut e = VersionEdit::default();
        e.add_buffer_table(1, 5, t.clone());
        let mut v = Version::default().apply(&e).unwrap();
        v.pin(backings.clone());
        assert!(backings.is_referenced(t.backing()));
        drop(v);
        let released = backings.take_released();
        assert_eq!(released.extents, vec![t.extent()]);
        assert_eq!(released.files, vec![t.backing()]);
    }

    #[test]
    fn apply_adds_orders_and_deletes() {
        let mut e = VersionEdit::default();
        e.add_table(0, 5, table(10, "a", "f"));
        e.add_table(0, 6, table(11, "b", "g"));
        e.add_table(1, 2, table(13, "m", "z"));
        e.add_table(1, 2, table(12, "a", "k"));
        let v = Version::default().apply(&e).unwrap();
        let l0: Vec<u64> = v.levels[0].runs.iter().map(|r| r.id).collect();
        assert_eq!(l0, vec![6, 5], "newest run first");
        let l1: Vec<u64> = v.levels[1].runs[0].tables.iter().map(|t| t.id).collect();
        assert_eq!(l1, vec![12, 13], "tables sorted by key");
        assert_eq!(v.table_count(), 4);

        let mut d = VersionEdit::default();
        d.delete_table(0, 5, 10);
        let v2 = v.apply(&d).unwrap();
        assert_eq!(v2.levels[0].runs.len(), 1, "empty run dropped");
        assert_eq!(Version::default().apply(&v2.snapshot_edit()).unwrap(), v2);
    }

    #[test]
    fn buffer_runs_apply_and_snapshot() {
        let mut e = VersionEdit::default();
        e.add_buffer_table(2, 7, table(1, "m", "p"));
        e.add_buffer_table(2, 7, table(2, "a", "c"));
        e.add_buffer_table(2, 9, table(3, "b", "n"));
        e.buffer_frozen.push((3, true));
        let round = crate::version::lsbm_buffer::BufferRound {
            start_bytes: 500,
            arrived: 300,
            departed: 20,
        };
        e.buffer_rounds.push((3, round));
        e.buffer_recording.push((2, BufferRecording::Since(77)));
        let v = Version::default().apply(&e).unwrap();
        assert_eq!(v.levels[3].round, round);
        assert_eq!(v.levels[2].recording, BufferRecording::Since(77));
        let runs: Vec<u64> = v.levels[2].buffer.iter().map(|r| r.id).collect();
        assert_eq!(runs, vec![9, 7], "newest buffer run first");
        let ids: Vec<u64> = v.levels[2].buffer[1]
            .entries
            .iter()
            .map(|e| e.meta.id)
            .collect();
        assert_eq!(ids, vec![2, 1], "entries in key order");
        assert!(v.levels[3].frozen);
        assert_eq!(v.tables().count(), 3);

        let mut r = VersionEdit::default();
        r.remove_buffer_table(2, 7, 1);
        let v2 = v.apply(&r).unwrap();
        assert_eq!(v2.tables().count(), 2, "a removed entry pins nothing");
        assert!(v2.levels[2].buffer[1].entries[1].removed);
        assert_eq!(Version::default().apply(&v2.snapshot_edit()).unwrap(), v2);

        let mut d = VersionEdit::default();
        d.drop_buffer_entry(2, 9, 3);
        let v3 = v2.apply(&d).unwrap();
        assert_eq!(v3.levels[2].buffer.len(), 1, "an empty buffer run goes");
        assert!(
            v3.apply(&d).is_err(),
            "dropping a missing entry is corruption"
        );

        let mut overlap = VersionEdit::default();
        overlap.add_buffer_table(2, 7, table(4, "b", "d"));
        assert!(v.apply(&overlap).unwrap_err().contains("overlap"));
    }

    #[test]
    fn apply_rejects_overlap_and_missing() {
        let mut e = VersionEdit::default();
        e.add_table(1, 1, table(1, "a", "f"));
        e.add_table(1, 1, table(2, "e", "g"));
        assert!(Version::default()
            .apply(&e)
            .unwrap_err()
            .contains("overlap"));
        let mut d = VersionEdit::default();
        d.delete_table(1, 1, 3);
        assert!(Version::default().apply(&d).is_err());
    }
}
