//! Picker tests in the spirit of Pebble's datadriven compaction-picker
//! tests: a version shape is written as text, the picked task is rendered
//! as text and compared with the expected rendering.

use super::*;
use crate::compaction::busy::Busy;
use crate::format::internal_key::{InternalKey, ValueKind};
use crate::version::VersionEdit;

/// Builds a version from lines `L<level> <run>: <lo>-<hi>/<bytes> ...`;
/// table ids are assigned in order from 100.
fn version(shape: &str) -> Version {
    let mut edit = VersionEdit::default();
    let mut id = 100;
    for line in shape.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let (head, tables) = line.split_once(':').unwrap();
        let (level, run) = head.trim_start_matches('L').split_once(' ').unwrap();
        for t in tables.split_whitespace() {
            let (range, bytes) = t.split_once('/').unwrap();
            let (lo, hi) = range.split_once('-').unwrap();
            edit.add_table(
                level.parse().unwrap(),
                run.parse().unwrap(),
                Arc::new(TableMeta {
                    id,
                    segment: id,
                    offset: 16,
                    length: bytes.parse().unwrap(),
                    smallest: InternalKey::new(lo.as_bytes(), 9, ValueKind::Value).into_vec(),
                    largest: InternalKey::new(hi.as_bytes(), 1, ValueKind::Value).into_vec(),
                    entries: 2,
                    min_seq: 1,
                    max_seq: 9,
                    sketch: Default::default(),
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
                busy.insert(LeveledPolicy::claim(&task));
                render(&task)
            }
            None => "none".to_string(),
        })
        .collect()
}

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
        pick("", shape),
        "merge {L0#11:100 L0#10:101 L1#1:103,104} merge {L0#10:102 L1#1:106} -> L1#1"
    );
}

#[test]
fn sequential_l0_runs_move_without_rewriting() {
    let shape = "
        L0 11: e-f/100
        L0 10: c-d/100
        L1 1: a-b/100";
    assert_eq!(pick("", shape), "move {L0#10:101} move {L0#11:100} -> L1#1");
}

#[test]
fn leveldb_takes_one_victim_round_robin() {
    let shape = "
        L1 1: a-b/600 c-d/600 e-f/600
        L2 2: a-a/100 c-c/100 e-e/100";
    let policy = LeveledPolicy::new(&options(""));
    let v = version(shape);
    let first = render(&policy.pick(&v, &Busy::default()).unwrap());
    let second = render(&policy.pick(&v, &Busy::default()).unwrap());
    assert_eq!(first, "merge {L1#1:100 L2#2:103} -> L2#2");
    assert_eq!(
        second, "merge {L1#1:101 L2#2:104} -> L2#2",
        "compact pointer advanced"
    );
}

#[test]
fn lone_victim_without_overlap_is_a_trivial_move() {
    let shape = "
        L1 1: a-b/1200
        L2 2: x-z/100";
    assert_eq!(pick("", shape), "move {L1#1:100} -> L2#2");
}

#[test]
fn group_compaction_takes_victims_up_to_the_overflow() {
    // L1 holds 2400 bytes against a 1000-byte target: shed 1400 bytes.
    let shape = "
        L1 1: a-b/600 c-d/600 e-f/600 g-h/600
        L2 2: a-a/100 c-c/100 e-e/100 g-g/100";
    assert_eq!(
        pick("group_compaction_bytes=100000", shape),
        "merge {L1#1:100 L2#2:104} merge {L1#1:101 L2#2:105} merge {L1#1:102 L2#2:106} -> L2#2"
    );
    assert_eq!(
        pick("group_compaction_bytes=1000", shape),
        "merge {L1#1:100 L2#2:104} merge {L1#1:101 L2#2:105} -> L2#2",
        "capped by group_compaction_bytes"
    );
}

#[test]
fn settled_compaction_prefers_little_overlap_and_moves_free_tables() {
    // Overlap ratios: a-b 0, c-d 2.0 (1200 bytes under 600), e-f 0.17, g-h 0.
    let shape = "
        L1 1: a-b/600 c-d/600 e-f/600 g-h/600
        L2 2: c-c/1200 e-e/100";
    assert_eq!(
        pick(
            "group_compaction_bytes=100000 settled_compaction=true",
            shape
        ),
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
        pick("group_compaction_bytes=100000", shape),
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
        "merge {L1#1:101 L2#2:103} move {L1#1:102} -> L2#2"
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
        picks_while_running("", shape, 3),
        [
            "merge {L1#1:102 L2#2:103} -> L2#2",
            "move {L0#11:100} move {L0#10:101} -> L1#1",
            "none",
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
    let shape = "
        L1 1: a-b/600 c-d/600 e-f/600
        L2 2: a-a/100 c-c/100 e-e/100";
    let policy = LeveledPolicy::new(&options(""));
    let v = version(shape);
    let mut busy = Busy::default();
    let mut running = Vec::new();
    for _ in 0..2 {
        let task = policy.pick(&v, &busy).unwrap();
        running.push(busy.insert(LeveledPolicy::claim(&task)));
    }
    // a-b and c-d are running; the pointer is past c-d.
    let third = policy.pick(&v, &busy).unwrap();
    assert_eq!(render(&third), "merge {L1#1:102 L2#2:105} -> L2#2");
    for id in running {
        busy.remove(id);
    }
    // Round robin wraps to the first table once the third task is running.
    busy.insert(LeveledPolicy::claim(&third));
    assert_eq!(
        render(&policy.pick(&v, &busy).unwrap()),
        "merge {L1#1:100 L2#2:103} -> L2#2"
    );
}

#[test]
fn a_blocked_pointer_victim_is_skipped_not_waited_for() {
    // The pointer starts at a-b, which a running task holds.
    let shape = "
        L1 1: a-b/600 c-d/600 e-f/600
        L2 2: a-a/100 c-c/100 e-e/100";
    let policy = LeveledPolicy::new(&options(""));
    let v = version(shape);
    let mut busy = Busy::default();
    let held = LeveledPolicy::claim(&policy.manual(&v, 1, Some(b"a"), Some(b"b")).unwrap());
    busy.insert(held);
    assert_eq!(
        render(&policy.pick(&v, &busy).unwrap()),
        "merge {L1#1:101 L2#2:104} -> L2#2"
    );
}
