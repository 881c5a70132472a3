//! What running compactions hold, so that concurrent tasks stay disjoint.
//!
//! A task claims the tables it takes (its inputs), the key ranges it reads
//! from each level and the key ranges it writes into its output level. A
//! candidate is admitted only when it conflicts with no running claim:
//!
//! - it takes a table another task takes;
//! - it writes a level's key range another task writes (two tasks adding to
//!   one run would overlap each other; two new runs of one level would get
//!   run ids, hence read precedence, in commit order, not data age);
//! - it reads a run in a key range another task writes into that run, or
//!   writes into a run in a range another task reads from it (the reader
//!   would miss or duplicate the writer's tables);
//! - it reads a level's key range another task reads (in a leveled tree such
//!   tasks share a table anyway; in a tiered one it keeps one merge per
//!   level, which also guards a journaled merge's interim run).
//!
//! Writes that start a new run cannot disturb a reader of the level's other
//! runs. Data only moves down, one level per task, so a task that claims
//! its output range also keeps deeper levels from changing under the keys
//! its bottommost check looked at.

use std::collections::HashSet;

use super::task::CompactionTask;
use crate::format::KeyOrder;

/// An inclusive range of user keys; `None` is the whole key space.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyRange(Option<(Vec<u8>, Vec<u8>)>);

impl KeyRange {
    pub fn new(smallest: &[u8], largest: &[u8]) -> KeyRange {
        KeyRange(Some((smallest.to_vec(), largest.to_vec())))
    }

    pub fn everything() -> KeyRange {
        KeyRange(None)
    }

    pub fn overlaps(&self, other: &KeyRange, order: &KeyOrder) -> bool {
        match (&self.0, &other.0) {
            (Some((a_lo, a_hi)), Some((b_lo, b_hi))) => {
                order.le(a_lo, b_hi) && order.le(b_lo, a_hi)
            }
            _ => true,
        }
    }
}

/// A key range of one level; `run` names the run, or `None` for every run
/// of the level (a read) or a run yet to be created (a write).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Span {
    pub level: usize,
    pub run: Option<u64>,
    pub keys: KeyRange,
}

impl Span {
    fn overlaps(&self, other: &Span, order: &KeyOrder) -> bool {
        self.level == other.level && self.keys.overlaps(&other.keys, order)
    }
}

/// What one task holds while it runs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Claim {
    pub tables: HashSet<u64>,
    pub reads: Vec<Span>,
    pub writes: Vec<Span>,
    /// The task is a journaled merge (the MANIFEST holds one journal).
    pub journaled: bool,
}

impl Claim {
    /// The claim of `task`: a read span per input table, a write span per
    /// merge group and per moved table, or the whole output level when the
    /// outputs start a new run there and `new_run_takes_level`.
    pub fn of(task: &CompactionTask, new_run_takes_level: bool, order: &KeyOrder) -> Claim {
        let mut claim = Claim::default();
        for input in task.merge_inputs().chain(task.moves.iter()) {
            for t in &input.tables {
                claim.tables.insert(t.id);
                claim.reads.push(Span {
                    level: input.level,
                    run: Some(input.run),
                    keys: KeyRange::new(t.smallest_user_key(), t.largest_user_key()),
                });
            }
        }
        let write = |keys| Span {
            level: task.output_level,
            run: task.output_run,
            keys,
        };
        if task.output_run.is_none() && new_run_takes_level {
            claim.writes.push(write(KeyRange::everything()));
            return claim;
        }
        for group in &task.merges {
            let tables = || group.iter().flat_map(|i| i.tables.iter());
            let smallest = tables()
                .map(|t| t.smallest_user_key())
                .reduce(|a, b| order.min(a, b));
            let largest = tables()
                .map(|t| t.largest_user_key())
                .reduce(|a, b| order.max(a, b));
            if let (Some(lo), Some(hi)) = (smallest, largest) {
                claim.writes.push(write(KeyRange::new(lo, hi)));
            }
        }
        for t in task.moves.iter().flat_map(|m| m.tables.iter()) {
            claim.writes.push(write(KeyRange::new(
                t.smallest_user_key(),
                t.largest_user_key(),
            )));
        }
        claim
    }

    /// What a flushed run placed in `level` below L0 would hold: writes
    /// into `[smallest, largest]` of every level from L1 to it (`runs`:
    /// each level's run id), so that no running task moves data into that
    /// range above it or reads the run it joins.
    pub fn flush_placement(runs: &[u64], smallest: &[u8], largest: &[u8]) -> Claim {
        let writes = runs
            .iter()
            .enumerate()
            .map(|(i, &run)| Span {
                level: i + 1,
                run: Some(run),
                keys: KeyRange::new(smallest, largest),
            })
            .collect();
        Claim {
            writes,
            ..Claim::default()
        }
    }

    /// The claim of a journaled merge: it also parks outputs in an interim
    /// run of its input level, so it reads that whole level.
    pub fn journaled(mut self, level: usize) -> Claim {
        self.journaled = true;
        self.reads.push(Span {
            level,
            run: None,
            keys: KeyRange::everything(),
        });
        self
    }

    fn conflicts(&self, other: &Claim, order: &KeyOrder) -> bool {
        let reads_written = |reader: &Claim, writer: &Claim| {
            reader.reads.iter().any(|r| {
                writer.writes.iter().any(|w| {
                    w.run.is_some() && (r.run.is_none() || r.run == w.run) && r.overlaps(w, order)
                })
            })
        };
        let any_overlap =
            |a: &[Span], b: &[Span]| a.iter().any(|x| b.iter().any(|y| x.overlaps(y, order)));
        !self.tables.is_disjoint(&other.tables)
            || (self.journaled && other.journaled)
            || any_overlap(&self.writes, &other.writes)
            || any_overlap(&self.reads, &other.reads)
            || reads_written(self, other)
            || reads_written(other, self)
    }
}

/// Identifies a registered claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClaimId(u64);

/// The claims of the running tasks.
#[derive(Debug, Default)]
pub struct Busy {
    claims: Vec<(ClaimId, Claim)>,
    next_id: u64,
    /// The store's key order, which claims' key ranges are compared by.
    order: KeyOrder,
}

impl Busy {
    /// No task running in a store whose keys sort by `order`.
    pub fn new(order: KeyOrder) -> Busy {
        Busy {
            order,
            ..Busy::default()
        }
    }

    /// The order claims are compared by.
    pub fn order(&self) -> &KeyOrder {
        &self.order
    }

    /// Whether a task with `claim` may start now.
    pub fn admits(&self, claim: &Claim) -> bool {
        self.claims
            .iter()
            .all(|(_, c)| !c.conflicts(claim, &self.order))
    }

    /// Whether a journaled merge is running.
    pub fn journaling(&self) -> bool {
        self.claims.iter().any(|(_, c)| c.journaled)
    }

    /// Registers a started task.
    pub fn insert(&mut self, claim: Claim) -> ClaimId {
        let id = ClaimId(self.next_id);
        self.next_id += 1;
        self.claims.push((id, claim));
        id
    }

    /// Forgets a finished task.
    pub fn remove(&mut self, id: ClaimId) {
        self.claims.retain(|(c, _)| *c != id);
    }

    /// Tasks running.
    pub fn len(&self) -> usize {
        self.claims.len()
    }

    pub fn is_empty(&self) -> bool {
        self.claims.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(level: usize, run: Option<u64>, lo: &str, hi: &str) -> Span {
        Span {
            level,
            run,
            keys: KeyRange::new(lo.as_bytes(), hi.as_bytes()),
        }
    }

    fn claim(tables: &[u64], reads: Vec<Span>, writes: Vec<Span>) -> Claim {
        Claim {
            tables: tables.iter().copied().collect(),
            reads,
            writes,
            journaled: false,
        }
    }

    fn busy_with(c: Claim) -> Busy {
        let mut busy = Busy::default();
        busy.insert(c);
        busy
    }

    #[test]
    fn disjoint_tasks_are_admitted_and_shared_tables_are_not() {
        let busy = busy_with(claim(
            &[1, 2],
            vec![span(1, Some(10), "a", "c"), span(2, Some(20), "a", "d")],
            vec![span(2, Some(20), "a", "d")],
        ));
        let elsewhere = claim(
            &[3, 4],
            vec![span(1, Some(10), "m", "p"), span(2, Some(20), "m", "q")],
            vec![span(2, Some(20), "m", "q")],
        );
        assert!(busy.admits(&elsewhere));
        let sharing = claim(&[2], vec![span(1, Some(10), "x", "y")], vec![]);
        assert!(!busy.admits(&sharing));
    }

    #[test]
    fn writing_a_run_another_task_reads_conflicts_but_a_new_run_does_not() {
        // Running: L1 [a,c] into L2's run 20.
        let busy = busy_with(claim(
            &[1],
            vec![span(1, Some(10), "a", "c")],
            vec![span(2, Some(20), "a", "c")],
        ));
        let into_l1 = |run| {
            claim(
                &[5],
                vec![span(0, Some(30), "b", "b")],
                vec![span(1, run, "b", "b")],
            )
        };
        assert!(
            !busy.admits(&into_l1(Some(10))),
            "writes run 10 where it is read"
        );
        assert!(
            busy.admits(&into_l1(None)),
            "a new L1 run leaves run 10 alone"
        );
    }

    #[test]
    fn overlapping_writes_to_one_level_conflict() {
        let busy = busy_with(claim(&[1], vec![], vec![span(3, None, "a", "f")]));
        assert!(!busy.admits(&claim(&[2], vec![], vec![span(3, None, "e", "g")])));
        assert!(busy.admits(&claim(&[2], vec![], vec![span(3, None, "g", "h")])));
        assert!(busy.admits(&claim(&[2], vec![], vec![span(4, None, "a", "f")])));
    }

    #[test]
    fn a_new_run_that_takes_the_level_excludes_every_writer_there() {
        let whole = Claim {
            writes: vec![Span {
                level: 2,
                run: None,
                keys: KeyRange::everything(),
            }],
            ..Claim::default()
        };
        let busy = busy_with(whole);
        assert!(!busy.admits(&claim(&[9], vec![], vec![span(2, None, "x", "z")])));
    }

    #[test]
    fn one_journaled_merge_at_a_time_and_its_level_stays_closed() {
        let mut busy = Busy::default();
        let id = busy.insert(claim(&[1], vec![span(1, Some(10), "a", "c")], vec![]).journaled(1));
        assert!(busy.journaling());
        let other_level = claim(&[2], vec![span(3, Some(30), "a", "c")], vec![]);
        assert!(!busy.admits(&other_level.clone().journaled(3)));
        assert!(busy.admits(&other_level));
        let same_level = claim(&[4], vec![span(1, Some(11), "x", "z")], vec![]);
        assert!(!busy.admits(&same_level), "the interim run lives in L1");
        busy.remove(id);
        assert!(busy.is_empty() && busy.admits(&same_level));
    }
}
