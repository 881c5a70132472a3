//! The stress workers: random puts, deletes, range deletes, batches, gets,
//! iterators (both directions, random bounds) and snapshots, every read
//! checked against the shadow (a range delete writes "absent" to every key
//! of its range at once). Each key is read and written in its keyspace
//! (`spaces.rs`): batches span keyspaces, snapshots read several.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use thicketdb::{Db, DbIterator, Options, ReadOptions, Snapshot, WriteBatch, WriteOptions};

use super::spaces::Spaces;

use super::expected::{Expected, Slot, NONE};
use super::keys::{describe, describe_base, key, parse_key, parse_value, value, ABSENT, MAX_BASE};

/// Operation counts, for the summary line.
#[derive(Default)]
pub struct Counts {
    pub writes: AtomicU64,
    pub batches: AtomicU64,
    pub range_deletes: AtomicU64,
    pub gets: AtomicU64,
    pub iterations: AtomicU64,
    pub snapshot_reads: AtomicU64,
    pub flushes: AtomicU64,
    pub compactions: AtomicU64,
    pub checkpoints: AtomicU64,
}

impl Counts {
    pub fn summary(&self) -> String {
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
        format!(
            "{} writes ({} batches, {} range deletes), {} gets, {} iterator checks, {} snapshot reads, {} flushes, {} compactions, {} checkpoints verified",
            g(&self.writes),
            g(&self.batches),
            g(&self.range_deletes),
            g(&self.gets),
            g(&self.iterations),
            g(&self.snapshot_reads),
            g(&self.flushes),
            g(&self.compactions),
            g(&self.checkpoints),
        )
    }
}

/// Checkpoints taken mid-run (`stress --checkpoint-fraction`).
pub struct Checkpoints {
    /// Where they are made, one directory each (removed once verified).
    root: PathBuf,
    /// The options the store was opened with, to open them.
    options: Options,
    fraction: f64,
    taken: AtomicU64,
}

impl Checkpoints {
    pub fn new(root: PathBuf, options: Options, fraction: f64) -> Checkpoints {
        Checkpoints {
            root,
            options,
            fraction: fraction.clamp(0.0, 1.0),
            taken: AtomicU64::new(0),
        }
    }
}

/// What the workers share.
pub struct Shared {
    pub checkpoints: Option<Checkpoints>,
    pub db: Db,
    /// The keyspaces the keys live in.
    pub spaces: Spaces,
    pub expected: Arc<Expected>,
    pub seed: u64,
    pub sync_fraction: f64,
    /// Set to end the run.
    pub stop: AtomicBool,
    /// Set by a simulated crash: errors and mismatches after it are expected.
    pub crashed: AtomicBool,
    pub failures: Mutex<Vec<String>>,
    pub counts: Counts,
}

/// Why a worker stopped early.
enum Stop {
    /// A real failure, already recorded.
    Failed,
    /// The simulated crash made the store unusable.
    Crashed,
}

impl Shared {
    fn fail(&self, what: String) -> Stop {
        if self.crashed.load(Ordering::SeqCst) {
            return Stop::Crashed;
        }
        eprintln!("MISMATCH/ERROR: {what} (seed {})", self.seed);
        self.failures
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(what);
        self.stop.store(true, Ordering::SeqCst);
        Stop::Failed
    }

    pub fn failures(&self) -> Vec<String> {
        self.failures
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

/// A held snapshot and the shadow as of it.
struct HeldSnapshot {
    snapshot: Snapshot,
    slots: Vec<Slot>,
}

struct Worker<'a> {
    s: &'a Shared,
    rng: StdRng,
    keys: u32,
    held: Vec<HeldSnapshot>,
}

pub fn run(shared: &Shared, id: usize) {
    let mut w = Worker {
        s: shared,
        rng: StdRng::seed_from_u64(shared.seed ^ (id as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)),
        keys: shared.expected.keys(),
        held: Vec::new(),
    };
    while !shared.stop.load(Ordering::Relaxed) {
        if w.step().is_err() {
            return;
        }
    }
}

type Step = Result<(), Stop>;

/// Whether a value read back for key `i` is one `slot` allows.
fn check_value(i: u32, got: Option<&[u8]>, slot: &Slot) -> Result<(), String> {
    let base = match got {
        None => ABSENT,
        Some(v) => parse_value(i, v).ok_or_else(|| {
            format!(
                "key {}: expected {}, actual unrecognized value {}",
                describe(&key(i)),
                slot.describe(),
                describe(v)
            )
        })?,
    };
    if slot.allows(base) {
        Ok(())
    } else {
        Err(format!(
            "key {}: expected {}, actual {}",
            describe(&key(i)),
            slot.describe(),
            describe_base(base)
        ))
    }
}

impl Worker<'_> {
    fn step(&mut self) -> Step {
        let s = self.s;
        if let Some(c) = &s.checkpoints {
            if self.rng.random_bool(c.fraction) {
                return self.checkpoint(c);
            }
        }
        match self.rng.random_range(0..1000) {
            0..300 => self.write(1),
            300..380 => self.delete(),
            380..400 => self.delete_range(),
            400..520 => {
                let n = self.rng.random_range(2..=10);
                self.write(n)
            }
            520..770 => self.get(),
            770..930 => self.iterate(),
            930..997 => self.snapshot_op(),
            997..999 => self.flush(),
            _ => self.compact(),
        }
    }

    fn random_key(&mut self) -> u32 {
        // Half the operations go to a hot tenth of the key space.
        if self.rng.random_bool(0.5) {
            self.rng.random_range(0..self.keys.div_ceil(10))
        } else {
            self.rng.random_range(0..self.keys)
        }
    }

    fn distinct_keys(&mut self, n: usize) -> Vec<u32> {
        let mut keys: Vec<u32> = Vec::with_capacity(n);
        while keys.len() < n.min(self.keys as usize) {
            let k = self.random_key();
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
        keys
    }

    fn sync(&mut self) -> bool {
        self.rng.random_bool(self.s.sync_fraction.clamp(0.0, 1.0))
    }

    /// Writes `ops` (as one batch when more than one), checking the result.
    fn apply(&mut self, ops: &[(u32, u32)]) -> Step {
        self.apply_with(ops, None)
    }

    /// Deletes keys `[i, j)` of the keyspace of `i` with one range
    /// tombstone (`key` keeps the key order of the numbers, so the range
    /// holds exactly those keys of that keyspace).
    fn delete_range(&mut self) -> Step {
        let i = self.random_key();
        let j = (i + self.rng.random_range(1..=16)).min(self.keys);
        let spaces = &self.s.spaces;
        let c = i % spaces.count();
        let ops: Vec<(u32, u32)> = (i..j)
            .filter(|&k| spaces.holds(c, k))
            .map(|k| (k, ABSENT))
            .collect();
        if ops.is_empty() {
            return Ok(());
        }
        self.apply_with(&ops, Some((i, j)))?;
        self.s.counts.range_deletes.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// `apply`, or with `range = Some((i, j))` (and `ops` deleting exactly
    /// keys `i..j`) one `delete_range`.
    fn apply_with(&mut self, ops: &[(u32, u32)], range: Option<(u32, u32)>) -> Step {
        let sync = self.sync();
        let (db, spaces) = (&self.s.db, &self.s.spaces);
        let outcome = self.s.expected.write(ops, sync, || {
            let opts = WriteOptions { sync };
            if let Some((i, j)) = range {
                return spaces.of(i).delete_range_opt(key(i), key(j), opts);
            }
            match ops {
                [(i, ABSENT)] => spaces.of(*i).delete_opt(key(*i), opts),
                [(i, base)] => spaces.of(*i).put_opt(key(*i), value(*i, *base), opts),
                _ => {
                    let mut batch = WriteBatch::new();
                    for &(i, base) in ops {
                        if base == ABSENT {
                            batch.delete_in(spaces.of(i), key(i))?;
                        } else {
                            batch.put_in(spaces.of(i), key(i), value(i, base))?;
                        }
                    }
                    db.write_opt(batch, opts)
                }
            }
        });
        match outcome {
            Err(e) => Err(self.s.fail(format!("expected-state file: {e}"))),
            Ok(Err(e)) => Err(self
                .s
                .fail(format!("write of {} keys failed: {e}", ops.len()))),
            Ok(Ok(())) => {
                self.s.counts.writes.fetch_add(1, Ordering::Relaxed);
                if ops.len() > 1 {
                    self.s.counts.batches.fetch_add(1, Ordering::Relaxed);
                }
                Ok(())
            }
        }
    }

    fn write(&mut self, n: usize) -> Step {
        let keys = self.distinct_keys(n);
        let ops: Vec<(u32, u32)> = keys
            .into_iter()
            .map(|i| {
                let base = if n > 1 && self.rng.random_bool(0.2) {
                    ABSENT
                } else {
                    self.rng.random_range(1..=MAX_BASE)
                };
                (i, base)
            })
            .collect();
        self.apply(&ops)
    }

    fn delete(&mut self) -> Step {
        let i = self.random_key();
        self.apply(&[(i, ABSENT)])
    }

    fn get(&mut self) -> Step {
        let i = self.random_key();
        let slot = self.s.expected.lock_key(i);
        let got = self.s.spaces.of(i).get(key(i));
        let checked = match &got {
            Ok(v) => check_value(i, v.as_deref(), &slot),
            Err(e) => Err(format!("get {}: {e}", describe(&key(i)))),
        };
        drop(slot);
        self.s.counts.gets.fetch_add(1, Ordering::Relaxed);
        checked.map_err(|e| self.s.fail(e))
    }

    fn take_snapshot(&self) -> HeldSnapshot {
        let (snapshot, slots) = self.s.expected.capture(|| self.s.db.snapshot());
        HeldSnapshot { snapshot, slots }
    }

    /// A random range check: bounds, a start (first, last or a seek), then
    /// steps in one direction, possibly turning around once.
    fn iterate(&mut self) -> Step {
        let held = self.take_snapshot();
        let r = self.check_range(&held);
        self.s.counts.iterations.fetch_add(1, Ordering::Relaxed);
        r
    }

    /// Checks a random range of one random keyspace.
    fn check_range(&mut self, held: &HeldSnapshot) -> Step {
        let space = self.rng.random_range(0..self.s.spaces.count());
        let lo = self
            .rng
            .random_bool(0.5)
            .then(|| self.rng.random_range(0..self.keys));
        let hi = self
            .rng
            .random_bool(0.5)
            .then(|| self.rng.random_range(lo.unwrap_or(0)..=self.keys));
        let opts = ReadOptions {
            snapshot: Some(held.snapshot.clone()),
            lower_bound: lo.map(key),
            upper_bound: hi.map(key),
            ..ReadOptions::default()
        };
        let mut iter = match self.s.spaces.get(space).iter(opts) {
            Ok(iter) => iter,
            Err(e) => return Err(self.s.fail(format!("iterator: {e}"))),
        };
        let first = lo.unwrap_or(0);
        let end = hi.unwrap_or(self.keys);
        let checker = RangeChecker {
            slots: &held.slots,
            spaces: &self.s.spaces,
            space,
            first,
            end,
        };
        // `pos`: the key the iterator should be on, or None for invalid.
        // What the iterator was asked to do, for reports.
        let mut trace;
        let mut pos = match self.rng.random_range(0..3) {
            0 => {
                iter.seek_to_first();
                trace = "seek_to_first".to_string();
                checker.next_from(first)
            }
            1 => {
                iter.seek_to_last();
                trace = "seek_to_last".to_string();
                checker.prev_before(end)
            }
            _ => {
                let t = self.rng.random_range(0..self.keys);
                iter.seek(&key(t));
                trace = format!("seek({})", describe(&key(t)));
                checker.next_from(t.max(first))
            }
        };
        let steps = self.rng.random_range(1..60);
        let turn_at = self.rng.random_range(0..steps * 2);
        let mut forward = self.rng.random_bool(0.5);
        for step in 0..steps {
            checker.check(&iter, pos).map_err(|e| {
                self.s.fail(format!(
                    "{e} (keyspace {space}, key bounds {lo:?}..{hi:?}, snapshot {}, after {trace})",
                    held.snapshot.sequence()
                ))
            })?;
            let Some(p) = pos else { break };
            if step == turn_at {
                forward = !forward;
            }
            if forward {
                iter.next();
                trace.push_str(", next");
                pos = checker.next_from(p + 1);
            } else {
                iter.prev();
                trace.push_str(", prev");
                pos = checker.prev_before(p);
            }
        }
        Ok(())
    }

    fn snapshot_op(&mut self) -> Step {
        if self.held.len() < 2 && self.rng.random_bool(0.3) {
            let held = self.take_snapshot();
            self.held.push(held);
            return Ok(());
        }
        if self.held.is_empty() {
            return Ok(());
        }
        let n = self.rng.random_range(0..self.held.len());
        let held = self.held.swap_remove(n);
        for _ in 0..self.rng.random_range(1..10) {
            let i = self.random_key();
            let opts = ReadOptions {
                snapshot: Some(held.snapshot.clone()),
                ..ReadOptions::default()
            };
            let checked = match self.s.spaces.of(i).get_opt(key(i), &opts) {
                Ok(v) => check_value(i, v.as_deref(), &held.slots[i as usize]),
                Err(e) => Err(format!("get at snapshot {}: {e}", describe(&key(i)))),
            };
            checked.map_err(|e| self.s.fail(format!("at snapshot: {e}")))?;
            self.s.counts.snapshot_reads.fetch_add(1, Ordering::Relaxed);
        }
        if self.rng.random_bool(0.5) {
            self.check_range(&held)?;
        }
        // Keep it for a later look now and then.
        if self.rng.random_bool(0.5) {
            self.held.push(held);
        }
        Ok(())
    }

    /// Takes a checkpoint while the other workers write, with the shadow
    /// as of that moment (no write is between its shadow and the store
    /// while the shadow is captured), then checks the copy: a full
    /// checksum check, and every key holds a value the shadow allows.
    fn checkpoint(&mut self, c: &Checkpoints) -> Step {
        let n = c.taken.fetch_add(1, Ordering::Relaxed);
        let dir = c.root.join(n.to_string());
        let (made, slots) = self.s.expected.capture(|| self.s.db.checkpoint(&dir));
        made.map_err(|e| self.s.fail(format!("checkpoint {}: {e}", dir.display())))?;
        let problems = verify_checkpoint(&dir, &c.options, &slots, self.s.spaces.count());
        if let Some(first) = problems.first() {
            return Err(self.s.fail(format!(
                "checkpoint {} (kept): {} problem(s); first: {first}",
                dir.display(),
                problems.len()
            )));
        }
        self.s.counts.checkpoints.fetch_add(1, Ordering::Relaxed);
        // `crashtest` counts these lines (a killed run prints no summary).
        println!("stress: checkpoint {} verified", dir.display());
        std::fs::remove_dir_all(&dir)
            .map_err(|e| self.s.fail(format!("removing {}: {e}", dir.display())))
    }

    fn flush(&mut self) -> Step {
        self.s.counts.flushes.fetch_add(1, Ordering::Relaxed);
        self.s
            .db
            .flush()
            .map_err(|e| self.s.fail(format!("flush: {e}")))
    }

    fn compact(&mut self) -> Step {
        let a = self.rng.random_range(0..self.keys);
        let b = self.rng.random_range(a..self.keys);
        let (start, end) = (key(a), key(b));
        let whole = self.rng.random_bool(0.2);
        let space = self
            .s
            .spaces
            .get(self.rng.random_range(0..self.s.spaces.count()));
        self.s.counts.compactions.fetch_add(1, Ordering::Relaxed);
        let r = if whole {
            space.compact_range(None, None)
        } else {
            space.compact_range(Some(&start), Some(&end))
        };
        r.map_err(|e| self.s.fail(format!("compact_range: {e}")))
    }
}

/// Problems of the checkpoint in `dir` against the shadow `slots` taken
/// with it: `check_store`, then each key of each of the `keyspaces`.
fn verify_checkpoint(dir: &Path, options: &Options, slots: &[Slot], keyspaces: u32) -> Vec<String> {
    if let Err(e) = thicketdb::check::check_store(dir) {
        return vec![format!("check: {e}")];
    }
    let db = match Db::open(dir, options.clone()) {
        Ok(db) => db,
        Err(e) => return vec![format!("open: {e}")],
    };
    // The keyspaces exist in the copy: nothing is drawn.
    let mut rng = StdRng::seed_from_u64(0);
    let spaces = match Spaces::open(&db, keyspaces, &[], &mut rng) {
        Ok(spaces) => spaces,
        Err(e) => return vec![format!("keyspaces: {e}")],
    };
    let state = match super::verify::read_state(&spaces, slots.len() as u32) {
        Ok(state) => state,
        Err(problems) => return problems,
    };
    let problems: Vec<String> = state
        .iter()
        .zip(slots)
        .enumerate()
        .filter(|(_, (&got, slot))| !slot.allows(got))
        .map(|(i, (&got, slot))| {
            format!(
                "key {}: expected {}, actual {}",
                describe(&key(i as u32)),
                slot.describe(),
                describe_base(got)
            )
        })
        .collect();
    drop(spaces);
    if let Err(e) = db.close() {
        return vec![format!("close: {e}")];
    }
    problems
}

/// The expected contents of one iterator's range in keyspace `space`, as
/// of its snapshot.
struct RangeChecker<'a> {
    slots: &'a [Slot],
    spaces: &'a Spaces,
    space: u32,
    /// First key index within bounds, and one past the last.
    first: u32,
    end: u32,
}

impl RangeChecker<'_> {
    fn present(&self, i: u32) -> bool {
        let s = &self.slots[i as usize];
        self.spaces.holds(self.space, i)
            && (s.acked != ABSENT || (s.pending != NONE && s.pending != ABSENT))
    }

    fn next_from(&self, from: u32) -> Option<u32> {
        (from.max(self.first)..self.end).find(|&i| self.present(i))
    }

    fn prev_before(&self, before: u32) -> Option<u32> {
        (self.first..before.min(self.end))
            .rev()
            .find(|&i| self.present(i))
    }

    fn check(&self, iter: &DbIterator, pos: Option<u32>) -> Result<(), String> {
        match (pos, iter.valid()) {
            (None, false) => iter.status().map_err(|e| format!("iterator: {e}")),
            (None, true) => Err(format!(
                "iterator: expected the end of the range, actual key {}",
                describe(iter.key())
            )),
            (Some(i), false) => {
                let status = iter
                    .status()
                    .err()
                    .map(|e| format!(" ({e})"))
                    .unwrap_or_default();
                Err(format!(
                    "iterator: expected key {} ({}), actual end of the range{status}",
                    describe(&key(i)),
                    self.slots[i as usize].describe()
                ))
            }
            (Some(i), true) => {
                let slot = &self.slots[i as usize];
                if iter.key() != key(i).as_slice() {
                    let actual = parse_key(iter.key()).map_or(String::new(), |k| {
                        format!(" (expected there: {})", self.slots[k as usize].describe())
                    });
                    return Err(format!(
                        "iterator: expected key {} ({}), actual key {}{actual}",
                        describe(&key(i)),
                        slot.describe(),
                        describe(iter.key())
                    ));
                }
                // Only an in-flight write (after a simulated crash) can make
                // the iterator's value ambiguous.
                if slot.pending != NONE && slot.acked == ABSENT && slot.pending == ABSENT {
                    return Ok(());
                }
                check_value(i, Some(iter.value()), slot).map_err(|e| format!("iterator: {e}"))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slot(acked: u32) -> Slot {
        Slot {
            acked,
            pending: NONE,
            batch: 0,
        }
    }

    /// A checkpoint that holds what its shadow says passes; one key off
    /// (a value the shadow does not allow, a key it says is gone) is named.
    #[test]
    fn a_checkpoint_is_checked_key_by_key_against_its_shadow() {
        let dir = tempfile::tempdir().unwrap();
        let options = Options::default();
        let db = Db::open(dir.path().join("store"), options.clone()).unwrap();
        let mut slots = Vec::new();
        for i in 0..50u32 {
            let base = if i % 3 == 0 { ABSENT } else { i + 1 };
            if base != ABSENT {
                db.put(key(i), value(i, base)).unwrap();
            }
            slots.push(slot(base));
        }
        let copy = dir.path().join("checkpoint");
        db.checkpoint(&copy).unwrap();
        db.close().unwrap();
        assert_eq!(
            verify_checkpoint(&copy, &options, &slots, 1),
            Vec::<String>::new()
        );
        slots[7] = slot(99);
        slots[9] = slot(5);
        let problems = verify_checkpoint(&copy, &options, &slots, 1);
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(
            problems[0].contains("expected value#00000063"),
            "{problems:?}"
        );
        let missing = verify_checkpoint(&dir.path().join("nothing"), &options, &slots, 1);
        assert_eq!(missing.len(), 1, "{missing:?}");
    }
}
