//! Picker tests in the spirit of Pebble's datadriven compaction-picker
//! tests: a version shape is written as text, the picked task is rendered
//! as text and compared with the expected rendering.

use super::*;
use crate::compaction::busy::Busy;
use crate::format::internal_key::{InternalKey, ValueKind};
use crate::table::HyperLogLog;
use crate::version::{Sketch, VersionEdit};
use std::collections::HashSet;

/// Builds a version from lines `L<level> <run>: <table> ...`, a table
/// written `<lo>-<hi>[/<bytes>][#<segment>][@<first>..<end>]`: its user-key
/// range, its length (default 100), the segment holding it (default: its
/// own), and the keys `k<first>`..`k<end>` of its sketch (TRIAD-DISK's
/// tests; absent or `@-`: no sketch). Table ids count from 100.
pub(super) fn version(shape: &str) -> Version {
    let mut edit = VersionEdit::default();
    let mut id = 100;
    for line in shape.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let (head, tables) = line.split_once(':').unwrap();
        let (level, run) = head.trim_start_matches('L').split_once(' ').unwrap();
        for t in tables.split_whitespace() {
            let (t, keys) = t.split_once('@').unwrap_or((t, "-"));
            let (t, segment) = match t.split_once('#') {
                Some((t, segment)) => (t, segment.parse().unwrap()),
                None => (t, id),
            };
            let (range, bytes) = t.split_once('/').unwrap_or((t, "100"));
            let (lo, hi) = range.split_once('-').unwrap();
            let sketch = match keys.split_once("..") {
                Some((first, end)) => {
                    let mut hll = HyperLogLog::new();
                    for i in first.parse::<u32>().unwrap()..end.parse().unwrap() {
                        hll.add(format!("k{i}").as_bytes());
                    }
                    Sketch::of(&hll)
                }
                None => Sketch::default(),
            };
            edit.add_table(
                level.parse().unwrap(),
                run.parse().unwrap(),
                Arc::new(TableMeta {
                    id,
                    segment,
                    offset: 16,
                    length: bytes.parse().unwrap(),
                    smallest: InternalKey::new(lo.as_bytes(), 9, ValueKind::Value).into_vec(),
                    largest: InternalKey::new(hi.as_bytes(), 1, ValueKind::Value).into_vec(),
                    entries: 2,
                    min_seq: 1,
                    max_seq: 9,
                    sketch,
                    logs: Vec::new(),
                }),
            );
            id += 1;
        }
    }
    Version::default().apply(&edit).unwrap()
}

/// Renders a task as `merge {L0#11:101 L1#1:103,104} move {L1#1:105} -> L2#7`.
fn render(task: &CompactionTask) -> String {
    let input = |i: &TaskInput| {
        let ids: Vec<String> = i.tables.iter().map(|t| t.id.to_string()).collect();
        format!("L{}#{}:{}", i.level, i.run, ids.join(","))
    };
    let mut out = Vec::new();
    for group in &task.merges {
        let parts: Vec<String> = group.iter().map(input).collect();
        out.push(format!("merge {{{}}}", parts.join(" ")));
    }
    for m in &task.moves {
        out.push(format!("move {{{}}}", input(m)));
    }
    let run = task.output_run.map_or("new".to_string(), |r| r.to_string());
    out.push(format!("-> L{}#{}", task.output_level, run));
    out.join(" ")
}

fn options(settings: &str) -> Options {
    let mut o = Options {
        l0_compaction_trigger: 2,
        max_bytes_for_level_base: 1000,
        level_size_multiplier: 10,
        group_compaction_bytes: 0,
        settled_compaction: false,
        // LevelDB's L0: a flush is one table.
        flush_one_table: true,
        // LevelDB's fixed targets unless a case asks for dynamic ones.
        dynamic_level_bytes: false,
        ..Options::default()
    };
    for s in settings.split_whitespace() {
        let (name, value) = s.split_once('=').unwrap();
        o.set(name, value).unwrap();
    }
    o
}

fn pick(settings: &str, shape: &str) -> String {
    let policy = LeveledPolicy::new(&options(settings));
    policy
        .pick(&version(shape), &Busy::default())
        .map_or("none".to_string(), |t| render(&t))
}

/// `n` picks from one version, each task registered as running before the
/// next pick (as concurrent compaction threads would see them).
fn picks_while_running(settings: &str, shape: &str, n: usize) -> Vec<String> {
    let policy = LeveledPolicy::new(&options(settings));
    let v = version(shape);
    let mut busy = Busy::default();
    (0..n)
        .map(|_| match policy.pick(&v, &busy) {
            Some(task) => {
                policy.take(&task);
                busy.insert(LeveledPolicy::claim(&task, &KeyOrder::Bytewise));
                render(&task)
            }
            None => "none".to_string(),
        })
        .collect()
}

/// L1 holds three 600-byte tables against a 1000-byte target, each over
/// one small L2 table.
const THREE_OVERFULL_L1: &str = "
        L1 1: a-b/600 c-d/600 e-f/600
        L2 2: a-a/100 c-c/100 e-e/100";
/// As `THREE_OVERFULL_L1` with a fourth pair.
const FOUR_OVERFULL_L1: &str = "
        L1 1: a-b/600 c-d/600 e-f/600 g-h/600
        L2 2: a-a/100 c-c/100 e-e/100 g-g/100";

#[test]
fn nothing_to_do_below_the_targets() {
    assert_eq!(pick("", "L0 5: a-c/100\nL1 1: a-b/900"), "none");
}

#[test]
fn l0_merges_overlapping_runs_with_l1_and_moves_loners() {
    let shape = "
        L0 11: b-d/100
        L0 10: a-c/100 x-y/100
        L1 1: a-b/100 c-e/100 m-n/100 w-x/100";
    // 101 (a-c) and 100 (b-d) overlap each other and L1's 103 (a-b) and 104
    // (c-e); x-y overlaps only 106 (w-x): two separate merge groups. m-n is
    // under no L0 table and stays.
    assert_eq!(
        pick("group_compaction_bytes=1000", shape),
        "merge {L0#11:100 L0#10:101 L1#1:103,104} merge {L0#10:102 L1#1:106} -> L1#1"
    );
}

/// RocksDB's dynamic level sizing: L0 compacts into the base level, the
/// shallowest level the largest level's size gives a target.
#[test]
fn dynamic_levels_compact_l0_into_the_base_level() {
    let dynamic = "dynamic_level_bytes=true";
    let l0 = "L0 11: a-c/100\nL0 10: b-d/100";
    assert_eq!(
        pick(dynamic, l0),
        "merge {L0#11:100 L0#10:101} -> L6#new",
        "an empty tree compacts L0 into its last level"
    );
    assert_eq!(pick("", l0), "merge {L0#11:100 L0#10:101} -> L1#new");
    // 5000 bytes in L6 give L5 a target of 500 (above 1000 / 10): L5 is the
    // base level, and the L6 table under L0 stays where it is.
    assert_eq!(
        pick(dynamic, &format!("{l0}\nL6 3: a-z/5000")),
        "merge {L0#11:100 L0#10:101} -> L5#new"
    );
    // The base level over its target (1000) compacts into the level below.
    assert_eq!(
        pick(dynamic, "L5 2: a-b/1500\nL6 3: a-a/100 c-c/10000"),
        "merge {L5#2:100 L6#3:101} -> L6#3"
    );
    // Statically L5 would be far below its target (10^4 × 1000).
    assert_eq!(pick("", "L5 2: a-b/1500\nL6 3: a-a/100 c-c/10000"), "none");
}

#[test]
fn sequential_l0_runs_move_without_rewriting() {
    let shape = "
        L0 11: e-f/100
        L0 10: c-d/100
        L1 1: a-b/100";
    assert_eq!(
        pick("group_compaction_bytes=1000", shape),
        "move {L0#10:101} move {L0#11:100} -> L1#1"
    );
    // LevelDB moves one L0 table per compaction.
    assert_eq!(pick("", shape), "move {L0#10:101} -> L1#1");
}

/// LSbM super-files: a victim brings the tables after it in its segment,
/// up to `lsbm_superfile_tables`; the round robin resumes after them.
#[test]
fn superfiles_are_the_compaction_unit() {
    let shape = "
        L1 1: a-b/600#7 c-d/600#7 e-f/600#7 g-h/600#8 i-j/600#8
        L2 2: a-a/100 c-c/100 e-e/100 g-g/100";
    assert_eq!(pick("", shape), "merge {L1#1:100 L2#2:105} -> L2#2");
    assert_eq!(
        pick("lsbm_superfile_tables=3", shape),
        "merge {L1#1:100 L2#2:105} merge {L1#1:101 L2#2:106} merge {L1#1:102 L2#2:107} -> L2#2"
    );
    assert_eq!(
        pick("lsbm_superfile_tables=2", shape),
        "merge {L1#1:100 L2#2:105} merge {L1#1:101 L2#2:106} -> L2#2"
    );
    // The next super-file starts in another segment and holds two tables
    // (104 overlaps nothing, but as one of several victims it is rewritten).
    let policy = LeveledPolicy::new(&options("lsbm_superfile_tables=3"));
    let v = version(shape);
    policy.take(&policy.pick(&v, &Busy::default()).unwrap());
    assert_eq!(
        render(&policy.pick(&v, &Busy::default()).unwrap()),
        "merge {L1#1:103 L2#2:108} merge {L1#1:104} -> L2#2"
    );
}

/// LevelDB persists its compaction pointers: the task's edit records the
/// pointer, a MANIFEST rewrite keeps it, and a policy made for the
/// recovered version (a reopen) resumes the round robin after it.
#[test]
fn the_compaction_pointer_survives_a_reopen() {
    let shape = THREE_OVERFULL_L1;
    let v = version(shape);
    let task = LeveledPolicy::new(&options(""))
        .pick(&v, &Busy::default())
        .unwrap();
    assert_eq!(render(&task), "merge {L1#1:100 L2#2:103} -> L2#2");
    let edit = task.final_edit(2, &[], &HashSet::new(), None);
    let decoded = VersionEdit::decode(&edit.encode()).unwrap();
    let after = v.apply(&decoded).unwrap();
    let rewritten = Version::default().apply(&after.snapshot_edit()).unwrap();
    assert_eq!(
        rewritten.levels[1].compact_pointer,
        task.compact_pointer.unwrap().1
    );
    let reopened = LeveledPolicy::new(&options(""));
    reopened.restore_pointers(&rewritten);
    let next = reopened.pick(&rewritten, &Busy::default()).unwrap();
    assert_eq!(render(&next), "merge {L1#1:101 L2#2:104} -> L2#2");
    // BoLT's settled compaction keeps no pointer.
    let settled = LeveledPolicy::new(&options("settled_compaction=true"));
    assert_eq!(
        settled.pick(&v, &Busy::default()).unwrap().compact_pointer,
        None
    );
}

#[test]
fn leveldb_takes_one_victim_round_robin() {
    let shape = THREE_OVERFULL_L1;
    let policy = LeveledPolicy::new(&options(""));
    let v = version(shape);
    let first = policy.pick(&v, &Busy::default()).unwrap();
    policy.take(&first);
    let second = render(&policy.pick(&v, &Busy::default()).unwrap());
    assert_eq!(render(&first), "merge {L1#1:100 L2#2:103} -> L2#2");
    assert_eq!(
        second, "merge {L1#1:101 L2#2:104} -> L2#2",
        "compact pointer advanced"
    );
}

/// Asking for a task without taking it (as `Db::wait_for_compactions`
/// asks whether one is due) leaves the round robin where it was: a pick
/// that moved the pointer made the next compaction's victim depend on how
/// often the store was asked, so the same writes built different trees.
#[test]
fn a_pick_not_taken_leaves_the_compact_pointers_alone() {
    let leveled = THREE_OVERFULL_L1;
    let policy = LeveledPolicy::new(&options(""));
    let v = version(leveled);
    let first = render(&policy.pick(&v, &Busy::default()).unwrap());
    assert_eq!(first, render(&policy.pick(&v, &Busy::default()).unwrap()));
    // LevelDB's L0 pick keeps L0's pointer the same way.
    let l0 = "
        L0 3: a-b/100
        L0 4: c-d/100
        L0 5: e-f/100
        L0 6: g-h/100";
    let policy = LeveledPolicy::new(&options(""));
    let v = version(l0);
    let first = render(&policy.pick(&v, &Busy::default()).unwrap());
    assert_eq!(first, render(&policy.pick(&v, &Busy::default()).unwrap()));
}

#[test]
fn lone_victim_without_overlap_is_a_trivial_move() {
    let shape = "
        L1 1: a-b/1200
        L2 2: x-z/100";
    assert_eq!(pick("", shape), "move {L1#1:100} -> L2#2");
}

#[test]
fn group_compaction_takes_a_fixed_group_of_victims() {
    // L1 holds 2400 bytes against a 1000-byte target. The group is
    // `group_compaction_bytes` of victims whatever the overflow, as in the
    // BoLT paper (a group capped by the overflow would take 1400 bytes).
    let shape = FOUR_OVERFULL_L1;
    assert_eq!(
        pick("group_compaction_bytes=100000", shape),
        "merge {L1#1:100 L2#2:104} merge {L1#1:101 L2#2:105} merge {L1#1:102 L2#2:106} \
         merge {L1#1:103 L2#2:107} -> L2#2"
    );
    assert_eq!(
        pick("group_compaction_bytes=1000", shape),
        "merge {L1#1:100 L2#2:104} merge {L1#1:101 L2#2:105} -> L2#2",
        "victims until the group reaches group_compaction_bytes"
    );
}

#[test]
fn a_level_share_cuts_the_group_to_a_slice_of_the_levels_target() {
    // L1's target is 1000 bytes, L2's 10000: a share of 0.5 cuts the group
    // to 500 bytes in L1 (one 600-byte victim reaches it) and 5000 in L2
    // (above the fixed group, which then rules).
    let l1 = FOUR_OVERFULL_L1;
    assert_eq!(
        pick("group_compaction_bytes=100000 group_compaction_level_share=0.5", l1),
        "merge {L1#1:100 L2#2:104} -> L2#2"
    );
    let l2 = "
        L2 1: a-b/6000 c-d/6000
        L3 2: a-a/100 c-c/100";
    assert_eq!(
        pick("group_compaction_bytes=1000 group_compaction_level_share=0.5", l2),
        "merge {L2#1:100 L3#2:102} -> L3#2",
        "the fixed group is smaller here"
    );
    assert_eq!(
        pick("group_compaction_bytes=100000 group_compaction_level_share=0.5", l2),
        "merge {L2#1:100 L3#2:102} -> L3#2",
        "5000 bytes: the first 6000-byte victim fills it"
    );
    assert_eq!(
        pick("group_compaction_bytes=100000 group_compaction_level_share=1", l2),
        "merge {L2#1:100 L3#2:102} merge {L2#1:101 L3#2:103} -> L3#2",
        "10000 bytes take both"
    );
}

#[test]
fn without_settled_compaction_only_a_lone_free_victim_moves() {
    let shape = "
        L1 1: a-b/600 c-d/600 e-f/600
        L2 2: c-c/100";
    assert_eq!(
        pick("group_compaction_bytes=1800", shape),
        "merge {L1#1:100} merge {L1#1:101 L2#2:103} merge {L1#1:102} -> L2#2",
        "free victims of a group are rewritten"
    );
    assert_eq!(
        pick("group_compaction_bytes=1800 settled_compaction=true", shape),
        "merge {L1#1:101 L2#2:103} move {L1#1:100,102} -> L2#2",
        "and promoted by metadata with settled compaction"
    );
}

#[test]
fn settled_compaction_prefers_little_overlap_and_moves_free_tables() {
    // Overlap ratios: a-b 0, c-d 2.0 (1200 bytes under 600), e-f 0.17, g-h 0.
    let shape = "
        L1 1: a-b/600 c-d/600 e-f/600 g-h/600
        L2 2: c-c/1200 e-e/100";
    assert_eq!(
        pick("group_compaction_bytes=1800 settled_compaction=true", shape),
        "merge {L1#1:102 L2#2:105} move {L1#1:100,103} -> L2#2"
    );
}

#[test]
fn victims_sharing_a_table_below_merge_together() {
    // Overflow 800: victims a-b and c-d, both over b-c.
    let shape = "
        L1 1: a-b/600 c-d/600 e-f/600
        L2 2: b-c/100";
    assert_eq!(
        pick("group_compaction_bytes=1200", shape),
        "merge {L1#1:100,101 L2#2:103} -> L2#2"
    );
}

#[test]
fn deepest_overflowing_level_is_chosen_by_score() {
    // L1: 1500/1000 = 1.5; L2: 25000/10000 = 2.5.
    let shape = "
        L1 1: a-b/1500
        L2 2: c-d/25000
        L3 3: c-c/10";
    assert_eq!(pick("", shape), "merge {L2#2:101 L3#3:102} -> L3#3");
}

#[test]
fn equal_scores_go_to_the_shallower_level_as_in_leveldb() {
    // L1: 2000/1000 = 2.0; L2: 20000/10000 = 2.0. LevelDB's Finalize keeps
    // the first level whose score is strictly higher, scanning from L0.
    let shape = "
        L1 1: a-b/2000
        L2 2: c-d/20000
        L3 3: c-c/10 a-a/10";
    assert_eq!(pick("", shape), "move {L1#1:100} -> L2#2");
}

#[test]
fn manual_compaction_walks_one_level_in_range() {
    let policy = LeveledPolicy::new(&options(""));
    let v = version(
        "
        L1 1: a-b/10 c-d/10 e-f/10
        L2 2: c-c/10",
    );
    let task = policy.manual(&v, 1, Some(b"c"), Some(b"f")).unwrap();
    assert_eq!(
        render(&task),
        "merge {L1#1:101 L2#2:103} merge {L1#1:102} -> L2#2",
        "LevelDB rewrites every input of a multi-table manual compaction"
    );
    let settled = LeveledPolicy::new(&options("settled_compaction=true"));
    let task = settled.manual(&v, 1, Some(b"c"), Some(b"f")).unwrap();
    assert_eq!(
        render(&task),
        "merge {L1#1:101 L2#2:103} move {L1#1:102} -> L2#2",
        "settled compaction promotes the free table"
    );
    assert!(policy.manual(&v, 3, None, None).is_none(), "L3 is empty");
}

#[test]
fn a_second_thread_takes_another_range_of_the_level() {
    // A task on L1 [a,c] -> L2 runs; settled compaction would pick a-c
    // again (least overlap), so the second pick shows it is passed over.
    let shape = "
        L1 1: a-c/700 m-p/700
        L2 2: a-a/10 n-n/500";
    assert_eq!(
        picks_while_running("settled_compaction=true", shape, 3),
        [
            "merge {L1#1:100 L2#2:102} -> L2#2",
            "merge {L1#1:101 L2#2:103} -> L2#2",
            "none",
        ]
    );
}

#[test]
fn an_l0_task_waits_while_it_would_overlap_a_running_l1_input() {
    // L1 scores 1.6, L0 1.0: L1 goes first. L0's b-b lies over L1's a-c,
    // the running task's input, so L0 is not picked beside it.
    let shape = "
        L0 11: b-b/100
        L0 10: x-x/100
        L1 1: a-c/1500 m-n/100
        L2 2: a-a/10";
    assert_eq!(
        picks_while_running("", shape, 3),
        [
            "merge {L1#1:102 L2#2:104} -> L2#2",
            "move {L1#1:103} -> L2#2",
            "none",
        ]
    );
}

#[test]
fn an_l0_task_runs_beside_an_l1_task_on_another_range() {
    let shape = "
        L0 11: x-x/100
        L0 10: y-y/100
        L1 1: a-c/1500
        L2 2: a-a/10";
    assert_eq!(
        picks_while_running("group_compaction_bytes=100", shape, 3),
        [
            "merge {L1#1:102 L2#2:103} -> L2#2",
            "move {L0#11:100} move {L0#10:101} -> L1#1",
            "none",
        ]
    );
    // LevelDB's pick takes one L0 table at a time; disjoint ones run side
    // by side.
    assert_eq!(
        picks_while_running("", shape, 3),
        [
            "merge {L1#1:102 L2#2:103} -> L2#2",
            "move {L0#11:100} -> L1#1",
            "move {L0#10:101} -> L1#1",
        ]
    );
}

#[test]
fn a_task_starting_the_output_levels_run_holds_the_whole_level() {
    // L2 is empty: a second task would start a second L2 run.
    let shape = "
        L1 1: a-b/600 c-d/600";
    assert_eq!(
        picks_while_running("", shape, 2),
        ["move {L1#1:100} -> L2#new", "none"]
    );
}

#[test]
fn the_compact_pointer_advances_past_concurrently_started_tasks() {
    let shape = THREE_OVERFULL_L1;
    let policy = LeveledPolicy::new(&options(""));
    let v = version(shape);
    let mut busy = Busy::default();
    let mut running = Vec::new();
    for _ in 0..2 {
        let task = policy.pick(&v, &busy).unwrap();
        policy.take(&task);
        running.push(busy.insert(LeveledPolicy::claim(&task, &KeyOrder::Bytewise)));
    }
    // a-b and c-d are running; the pointer is past c-d.
    let third = policy.pick(&v, &busy).unwrap();
    policy.take(&third);
    assert_eq!(render(&third), "merge {L1#1:102 L2#2:105} -> L2#2");
    for id in running {
        busy.remove(id);
    }
    // Round robin wraps to the first table once the third task is running.
    busy.insert(LeveledPolicy::claim(&third, &KeyOrder::Bytewise));
    assert_eq!(
        render(&policy.pick(&v, &busy).unwrap()),
        "merge {L1#1:100 L2#2:103} -> L2#2"
    );
}

#[test]
fn a_blocked_pointer_victim_is_skipped_not_waited_for() {
    // The pointer starts at a-b, which a running task holds.
    let shape = THREE_OVERFULL_L1;
    let policy = LeveledPolicy::new(&options(""));
    let v = version(shape);
    let mut busy = Busy::default();
    let held = LeveledPolicy::claim(
        &policy.manual(&v, 1, Some(b"a"), Some(b"b")).unwrap(),
        &KeyOrder::Bytewise,
    );
    busy.insert(held);
    assert_eq!(
        render(&policy.pick(&v, &busy).unwrap()),
        "merge {L1#1:101 L2#2:104} -> L2#2"
    );
}

#[test]
fn group_compaction_passes_over_a_held_victim_and_takes_the_ones_after_it() {
    // Overflow 1400: without the running task on c-d the victims would be
    // a-b, c-d and e-f; with it, c-d is passed over and g-h makes up the
    // bytes.
    let shape = FOUR_OVERFULL_L1;
    let policy = LeveledPolicy::new(&options("group_compaction_bytes=100000"));
    let v = version(shape);
    let mut busy = Busy::default();
    busy.insert(LeveledPolicy::claim(
        &policy.manual(&v, 1, Some(b"c"), Some(b"d")).unwrap(),
        &KeyOrder::Bytewise,
    ));
    assert_eq!(
        render(&policy.pick(&v, &busy).unwrap()),
        "merge {L1#1:100 L2#2:104} merge {L1#1:102 L2#2:106} merge {L1#1:103 L2#2:107} -> L2#2"
    );
}

/// The victim loop as first written: every candidate is admitted together
/// with all the victims taken before it, by building their whole task.
/// The picker checks each candidate alone; both must choose alike.
struct QuadraticPicker {
    options: Options,
    pointer: Vec<u8>,
}

impl QuadraticPicker {
    fn level_task(
        &mut self,
        version: &Version,
        level: usize,
        busy: &Busy,
    ) -> Option<CompactionTask> {
        let run = version.levels[level].runs.first()?;
        let next = version.levels[level + 1].runs.first();
        let budget = self.options.group_compaction_bytes.max(1);
        let settled = self.options.settled_compaction;
        let candidates = if self.options.settled_compaction {
            settled_order(&version.order, run, next)
        } else {
            round_robin_order(&version.order, run, &self.pointer)
        };
        let mut victims: Vec<Arc<TableMeta>> = Vec::new();
        let mut last_taken = None;
        let mut bytes = 0;
        for (i, t) in candidates.tables.iter().enumerate() {
            if bytes >= budget || (i == candidates.wrap && last_taken.is_some()) {
                break;
            }
            let mut with = victims.clone();
            let at =
                with.partition_point(|v| version.order.internal(&v.smallest, &t.smallest).is_lt());
            with.insert(at, t.clone());
            let task = build_task(
                &version.order,
                level,
                run,
                next,
                with.clone(),
                settled,
                String::new(),
            );
            if busy.admits(&LeveledPolicy::claim(&task, &KeyOrder::Bytewise)) {
                victims = with;
                bytes += t.length;
                last_taken = Some(t);
            }
        }
        let last_taken = last_taken?;
        if !self.options.settled_compaction {
            self.pointer = last_taken.largest.clone();
        }
        Some(build_task(
            &version.order,
            level,
            run,
            next,
            victims,
            settled,
            String::new(),
        ))
    }
}

/// `count` tables with disjoint two-digit key ranges, as shape text.
fn random_run(rng: &mut rand::rngs::StdRng, count: usize, max_bytes: u64) -> String {
    use rand::Rng;
    let mut bounds: Vec<u32> = Vec::new();
    while bounds.len() < 2 * count {
        let k = rng.random_range(10..100);
        if !bounds.contains(&k) {
            bounds.push(k);
        }
    }
    bounds.sort_unstable();
    bounds
        .chunks(2)
        .map(|b| format!("{}-{}/{}", b[0], b[1], rng.random_range(1..=max_bytes)))
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn victims_checked_one_by_one_match_victims_checked_together() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(11);
    let mut compared_tasks = 0;
    for case in 0..400 {
        let settings = format!(
            "group_compaction_bytes={} settled_compaction={}",
            [0, 700, 100_000][case % 3],
            case % 2 == 1
        );
        let l1_tables = rng.random_range(1..=8);
        let l2_tables = rng.random_range(0..=8);
        let mut shape = format!("L1 1: {}\n", random_run(&mut rng, l1_tables, 900));
        if l2_tables > 0 {
            shape += &format!("L2 2: {}\n", random_run(&mut rng, l2_tables, 900));
        }
        let v = version(&shape);
        let policy = LeveledPolicy::new(&options(&settings));
        let mut reference = QuadraticPicker {
            options: options(&settings),
            pointer: Vec::new(),
        };
        let mut busy = Busy::default();
        for _ in 0..rng.random_range(0..=2) {
            let (lo, hi) = (rng.random_range(10..100u32), rng.random_range(10..100u32));
            let (lo, hi) = (lo.min(hi).to_string(), lo.max(hi).to_string());
            let level = rng.random_range(1..=2);
            if let Some(task) = policy.manual(&v, level, Some(lo.as_bytes()), Some(hi.as_bytes())) {
                busy.insert(LeveledPolicy::claim(&task, &KeyOrder::Bytewise));
            }
        }
        // Several picks from one policy, each taken so the compact pointer
        // moves, some of them left running as another thread's task.
        for _ in 0..3 {
            let expected = reference.level_task(&v, 1, &busy).map(|t| render(&t));
            let picked = policy.level_task(&v, 1, String::new(), &busy);
            assert_eq!(
                picked.as_ref().map(render),
                expected,
                "case {case}: {settings}\n{shape}"
            );
            if let Some(task) = picked {
                compared_tasks += 1;
                policy.take(&task);
                if rng.random_bool(0.5) {
                    busy.insert(LeveledPolicy::claim(&task, &KeyOrder::Bytewise));
                }
            }
        }
    }
    assert!(compared_tasks > 500, "only {compared_tasks} tasks compared");
}

#[test]
fn run_overlapping_finds_what_a_scan_finds() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(5);
    for _ in 0..300 {
        let count = rng.random_range(0..=10);
        let shape = format!("L1 1: {}", random_run(&mut rng, count, 10));
        let v = version(&shape);
        let Some(run) = v.levels[1].runs.first() else {
            continue;
        };
        let mut bound = || {
            rng.random_bool(0.8)
                .then(|| rng.random_range(5..105u32).to_string())
        };
        let (lo, hi) = (bound(), bound());
        let (lo, hi) = (
            lo.as_deref().map(str::as_bytes),
            hi.as_deref().map(str::as_bytes),
        );
        let ids = |tables: Vec<Arc<TableMeta>>| tables.iter().map(|t| t.id).collect::<Vec<_>>();
        let scanned = run
            .tables
            .iter()
            .filter(|t| t.overlaps(lo, hi, &KeyOrder::Bytewise))
            .cloned()
            .collect();
        assert_eq!(
            ids(run.overlapping(lo, hi, &KeyOrder::Bytewise)),
            ids(scanned),
            "{shape} {lo:?} {hi:?}"
        );
    }
}

/// LevelDB's L0 pick: the L0 tables connected to the first one past L0's
/// compact pointer and the L1 tables under them; the next pick resumes
/// after them. With group compaction every L0 group goes at once.
#[test]
fn leveldb_picks_l0_round_robin_one_connected_group_at_a_time() {
    let shape = "
        L0 11: b-d/100
        L0 10: a-c/100 x-y/100
        L1 1: a-b/100 c-e/100 m-n/100 w-x/100";
    let policy = LeveledPolicy::new(&options(""));
    let v = version(shape);
    let first = policy.pick(&v, &Busy::default()).unwrap();
    policy.take(&first);
    let second = render(&policy.pick(&v, &Busy::default()).unwrap());
    assert_eq!(
        render(&first),
        "merge {L0#11:100 L0#10:101 L1#1:103,104} -> L1#1"
    );
    assert_eq!(second, "merge {L0#10:102 L1#1:106} -> L1#1");
    assert_eq!(
        pick("group_compaction_bytes=1000", shape),
        "merge {L0#11:100 L0#10:101 L1#1:103,104} merge {L0#10:102 L1#1:106} -> L1#1"
    );
}

/// LevelDB widens an L0 pick to the L0 tables under its L1 inputs' range
/// when that takes no further L1 table (`SetupOtherInputs`).
#[test]
fn leveldb_widens_an_l0_pick_that_takes_no_more_of_l1() {
    let shape = "
        L0 11: e-f/100
        L0 10: a-b/100
        L1 1: a-f/100 x-z/100";
    assert_eq!(
        pick("", shape),
        "merge {L0#11:100 L0#10:101 L1#1:102} -> L1#1"
    );
}

/// LevelDB's `IsTrivialMove`: a lone victim overlapping nothing in the next
/// level moves only when it overlaps the level after that by at most the
/// grandparent limit (10 tables); otherwise it is rewritten.
#[test]
fn trivial_moves_respect_the_grandparent_limit() {
    let limit = "grandparent_overlap_factor=10 target_table_size=4096";
    let l0 = "L0 11: x-y/100\nL0 10: m-n/100";
    // L2's target (10^5) above what it holds: only L0 is due.
    let limit_l0 = &format!("{limit} max_bytes_for_level_base=10000");
    assert_eq!(
        pick(limit_l0, &format!("{l0}\nL2 3: m-n/40960")),
        "move {L0#10:101} -> L1#new"
    );
    assert_eq!(
        pick(limit_l0, &format!("{l0}\nL2 3: m-n/40961")),
        "merge {L0#10:101} -> L1#new"
    );
    assert_eq!(
        pick(
            "max_bytes_for_level_base=10000",
            &format!("{l0}\nL2 3: m-n/40961")
        ),
        "move {L0#10:101} -> L1#new"
    );
    let l1 = "L1 1: a-b/1200\nL2 2: x-z/100";
    assert_eq!(
        pick(limit, &format!("{l1}\nL3 3: a-b/50000")),
        "merge {L1#1:100} -> L2#2"
    );
    assert_eq!(
        pick(limit, &format!("{l1}\nL3 3: a-b/100")),
        "move {L1#1:100} -> L2#2"
    );
}
