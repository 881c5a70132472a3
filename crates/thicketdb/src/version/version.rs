//! `Version`: an immutable picture of every live table, shared by readers
//! through an `Arc`. Applying a `VersionEdit` yields the next version.

use std::collections::HashMap;
use std::sync::Arc;

use super::edit::{MergeJournal, VersionEdit};
use super::meta::{Level, Run, TableMeta};
use crate::io::{Backings, Extent};

/// Levels in every version: L0 holds one run per flush, deeper levels hold
/// the runs compaction builds.
pub use crate::format::NUM_LEVELS;

pub struct Version {
    pub levels: Vec<Level>,
    /// A journaled merge in progress (SifrDB early cleaning), if any.
    pub merge_journal: Option<MergeJournal>,
    /// Set once the version is installed: its tables and their files stay
    /// referenced until it drops (see `io::backing`).
    pins: Option<Arc<Backings>>,
}

impl Default for Version {
    fn default() -> Version {
        Version {
            levels: vec![Level::default(); NUM_LEVELS],
            merge_journal: None,
            pins: None,
        }
    }
}

/// A clone is a new, not yet installed version: it holds no references.
impl Clone for Version {
    fn clone(&self) -> Version {
        Version {
            levels: self.levels.clone(),
            merge_journal: self.merge_journal.clone(),
            pins: None,
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
        }
    }
}

impl Version {
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
            run.tables
                .sort_by(|a, b| crate::format::internal_key::compare(&a.smallest, &b.smallest));
            for pair in run.tables.windows(2) {
                if pair[0].largest_user_key() >= pair[1].smallest_user_key() {
                    return Err(format!(
                        "tables {} and {} overlap in run {} of L{}",
                        pair[0].id, pair[1].id, run_id, level
                    ));
                }
            }
        }
        Ok(next)
    }

    /// References every table of this version and its file in `backings`
    /// until the version drops. Called once, when the version is installed.
    pub fn pin(&mut self, backings: Arc<Backings>) {
        debug_assert!(self.pins.is_none(), "a version is installed once");
        let extents: Vec<Extent> = self.tables().map(|t| t.extent()).collect();
        backings.pin_extents(&extents);
        self.pins = Some(backings);
    }

    /// Every live table, buffer runs' included.
    pub fn tables(&self) -> impl Iterator<Item = &Arc<TableMeta>> {
        self.levels
            .iter()
            .flat_map(|l| l.runs.iter().chain(l.buffer.iter()))
            .flat_map(|r| r.tables.iter())
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
        }
        edit
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
        self.superseded_through(level, run)
            .is_some_and(|through| user_key <= through && meta.largest_user_key() > through)
    }

    /// Index of the deepest level holding any table, if any.
    pub fn deepest_nonempty_level(&self) -> Option<usize> {
        self.levels.iter().rposition(|l| !l.runs.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::version::meta::tests::table;

    #[test]
    fn an_installed_version_pins_its_buffer_runs_tables_too() {
        let backings = Arc::new(crate::io::Backings::default());
        let t = table(7, "a", "b");
        let mut v = Version::default();
        v.levels[1].buffer.push(Run {
            id: 5,
            tables: vec![t.clone()],
        });
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
