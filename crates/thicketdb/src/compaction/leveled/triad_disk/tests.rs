//! TRIAD-DISK decisions from constructed sketches, in the picker tests'
//! datadriven style: a version shape with each table's key set is written
//! as text; the decision and the picked task are rendered as text.

use super::super::tests::version;
use super::super::LeveledPolicy;
use super::*;
use crate::compaction::busy::Busy;

fn options(settings: &str) -> Options {
    let mut o = Options {
        l0_compaction_trigger: 2,
        triad_disk: true,
        // As the triad profile: L0 compacts into L1.
        dynamic_level_bytes: false,
        ..Options::default()
    };
    for s in settings.split_whitespace() {
        let (name, value) = s.split_once('=').unwrap();
        o.set(name, value).unwrap();
    }
    o.validate().unwrap();
    o
}

/// `defer 0.00` / `compact 0.50` / `compact ?` (ratio unknown), then what
/// the policy picks: `pick none` or `pick L0` (an L0 task).
fn decide(settings: &str, shape: &str) -> String {
    let policy = LeveledPolicy::new(&options(settings));
    let v = version(shape);
    let d = policy.triad_disk().unwrap().decide(&v, 1);
    let ratio = d.ratio.map_or("?".to_string(), |r| format!("{r:.1}"));
    let verdict = if d.defer { "defer" } else { "compact" };
    let picked = match policy.pick(&v, &Busy::default()) {
        Some(task) if task.output_level == 1 => "pick L0",
        Some(_) => "pick other",
        None => "pick none",
    };
    assert_eq!(
        policy.pending_bytes(&v) == 0,
        d.defer,
        "a deferred L0 owes no compaction bytes, a due one does"
    );
    format!("{verdict} {ratio} {picked}")
}

#[test]
fn deferral_follows_the_overlap_and_the_file_cap() {
    let cases = [
        // Two flushes of disjoint keys: nothing to gain from merging yet.
        (
            "",
            "L0 11: a-z@0..1000\nL0 10: a-z@1000..2000",
            "defer 0.0 pick none",
        ),
        // A third flush repeats one: 2000 unique of 3000, ratio 1/3 < 0.4.
        (
            "",
            "L0 12: a-z@0..1000\nL0 11: a-z@0..1000\nL0 10: a-z@1000..2000",
            "defer 0.3 pick none",
        ),
        // A fourth: 2000 unique of 4000, ratio 0.5 reaches the threshold.
        (
            "",
            "L0 13: a-z@0..1000\nL0 12: a-z@0..1000\nL0 11: a-z@0..1000\nL0 10: a-z@1000..2000",
            "compact 0.5 pick L0",
        ),
        // The L1 tables under L0 count: L1's b-c repeats L0's keys.
        (
            "",
            "L0 11: a-c@0..1000\nL0 10: a-c@1000..2000\nL1 1: b-c@0..2000 x-y@5000..9000",
            "compact 0.5 pick L0",
        ),
        // Algorithm 2's L0-only ratio ignores them: 2000 keys of 2000.
        (
            "triad_overlap_with_l1=false",
            "L0 11: a-c@0..1000\nL0 10: a-c@1000..2000\nL1 1: b-c@0..2000 x-y@5000..9000",
            "defer 0.0 pick none",
        ),
        // ... and counts repeats within L0 alone: 2000 unique of 4000,
        // where a large L1 under them would dilute the ratio to 0.04.
        (
            "triad_overlap_with_l1=false",
            "L0 13: a-z@0..1000\nL0 12: a-z@0..1000\nL0 11: a-z@0..1000\nL0 10: a-z@1000..2000\nL1 1: a-z@5000..50000",
            "compact 0.5 pick L0",
        ),
        (
            "",
            "L0 13: a-z@0..1000\nL0 12: a-z@0..1000\nL0 11: a-z@0..1000\nL0 10: a-z@1000..2000\nL1 1: a-z@5000..50000",
            "defer 0.0 pick none",
        ),
        // ... and those beside L0's range do not.
        (
            "",
            "L0 11: a-c@0..1000\nL0 10: a-c@1000..2000\nL1 1: x-y@0..2000",
            "defer 0.0 pick none",
        ),
        // A lower threshold lets the 1/3 overlap through.
        (
            "triad_overlap_threshold=0.3",
            "L0 12: a-z@0..1000\nL0 11: a-z@0..1000\nL0 10: a-z@1000..2000",
            "compact 0.3 pick L0",
        ),
        // More runs than triad_max_l0_files: compact whatever the overlap.
        (
            "triad_max_l0_files=2",
            "L0 12: a-z@0..1000\nL0 11: a-z@1000..2000\nL0 10: a-z@2000..3000",
            "compact ? pick L0",
        ),
        // At the cap, still deferred.
        (
            "triad_max_l0_files=3",
            "L0 12: a-z@0..1000\nL0 11: a-z@1000..2000\nL0 10: a-z@2000..3000",
            "defer 0.0 pick none",
        ),
        // A table without its sketch: the overlap is unknown, never deferred.
        ("", "L0 11: a-z@0..1000\nL0 10: a-z@-", "compact ? pick L0"),
    ];
    for (settings, shape, expected) in cases {
        assert_eq!(decide(settings, shape), expected, "{settings}\n{shape}");
    }
}

#[test]
fn below_the_trigger_nothing_is_decided_or_counted() {
    let policy = LeveledPolicy::new(&options("l0_compaction_trigger=3"));
    let v = version("L0 11: a-z@0..1000\nL0 10: a-z@1000..2000");
    assert!(policy.pick(&v, &Busy::default()).is_none());
    let triad = policy.triad_disk().unwrap();
    assert_eq!((triad.deferred(), triad.last_ratio()), (0, None));
}

#[test]
fn each_deferred_shape_counts_once() {
    let policy = LeveledPolicy::new(&options(""));
    let triad = policy.triad_disk().unwrap();
    let two = version("L0 11: a-z@0..1000\nL0 10: a-z@1000..2000");
    for _ in 0..3 {
        assert!(policy.pick(&two, &Busy::default()).is_none());
    }
    assert_eq!(triad.deferred(), 1);
    let three = version("L0 12: a-z@3000..4000\nL0 11: a-z@0..1000\nL0 10: a-z@1000..2000");
    assert!(policy.pick(&three, &Busy::default()).is_none());
    assert_eq!(triad.deferred(), 2, "a new flush is a new deferral");
    assert!(triad.last_ratio().unwrap() < 0.05);
}

#[test]
fn off_by_default() {
    let o = Options {
        l0_compaction_trigger: 2,
        ..Options::default()
    };
    assert!(TriadDisk::new(&o).is_none());
    let policy = LeveledPolicy::new(&o);
    let v = version("L0 11: a-z@0..1000\nL0 10: a-z@1000..2000");
    assert!(policy.pick(&v, &Busy::default()).is_some());
}
