//! Buffer decisions on constructed shapes, in the style of the picker
//! tests: a version is written as text, a task or a trim is applied, and
//! the resulting buffer is rendered as text.

use std::collections::HashSet;
use std::sync::Arc;

use super::*;
use crate::compaction::task::TaskInput;
use crate::format::internal_key::{InternalKey, ValueKind};
use crate::version::TableMeta;

fn meta(id: u64, lo: &str, hi: &str, bytes: u64) -> Arc<TableMeta> {
    meta_at(id, lo, hi, bytes, (1, 9))
}

/// A table holding sequence numbers `min_seq..=max_seq`.
fn meta_at(
    id: u64,
    lo: &str,
    hi: &str,
    bytes: u64,
    (min_seq, max_seq): (u64, u64),
) -> Arc<TableMeta> {
    Arc::new(TableMeta {
        id,
        segment: id,
        offset: 16,
        length: bytes,
        smallest: InternalKey::new(lo.as_bytes(), max_seq, ValueKind::Value).into_vec(),
        largest: InternalKey::new(hi.as_bytes(), min_seq, ValueKind::Value).into_vec(),
        entries: 2,
        min_seq,
        max_seq,
        sketch: Default::default(),
        logs: Vec::new(),
    })
}

/// Builds a version from lines `L<level> <run>: <lo>-<hi>/<bytes> ...`
/// (a level's run), `B<level> <run>: ...` (a buffer run; a trailing `x`
/// marks a removed entry) and `frozen <level>`. A table may end in
/// `@<seq>`: it holds only that sequence number (default 1 to 9). Table
/// ids count from 100 in order.
fn version(shape: &str) -> Version {
    let mut edit = VersionEdit::default();
    let mut id = 100;
    for line in shape.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if let Some(level) = line.strip_prefix("frozen ") {
            edit.buffer_frozen.push((level.parse().unwrap(), true));
            continue;
        }
        let (head, tables) = line.split_once(':').unwrap();
        let buffer = head.starts_with('B');
        let (level, run) = head[1..].split_once(' ').unwrap();
        let (level, run): (usize, u64) = (level.parse().unwrap(), run.parse().unwrap());
        for t in tables.split_whitespace() {
            let (t, removed) = match t.strip_suffix('x') {
                Some(t) => (t, true),
                None => (t, false),
            };
            let (t, seqs) = match t.split_once('@') {
                Some((t, seq)) => (t, (seq.parse().unwrap(), seq.parse().unwrap())),
                None => (t, (1, 9)),
            };
            let (range, bytes) = t.split_once('/').unwrap();
            let (lo, hi) = range.split_once('-').unwrap();
            let m = meta_at(id, lo, hi, bytes.parse().unwrap(), seqs);
            if buffer {
                edit.add_buffer_table(level, run, m);
                if removed {
                    edit.remove_buffer_table(level, run, id);
                }
            } else {
                edit.add_table(level, run, m);
            }
            id += 1;
        }
    }
    Version::default().apply(&edit).unwrap()
}

/// Every level's buffer as `B2#9: 100 101x | B2#7: 102`, plus `frozen`.
fn render(v: &Version) -> String {
    let mut out = Vec::new();
    for (level, l) in v.levels.iter().enumerate() {
        for run in &l.buffer {
            let ids: Vec<String> = run
                .entries
                .iter()
                .map(|e| format!("{}{}", e.meta.id, if e.removed { "x" } else { "" }))
                .collect();
            out.push(format!("B{level}#{}: {}", run.id, ids.join(" ")));
        }
        if l.frozen {
            out.push(format!("frozen {level}"));
        }
    }
    out.join(" | ")
}

fn buffer(settings: &str) -> CompactionBuffer {
    let mut o = Options {
        lsbm_buffer: true,
        ..Options::default()
    };
    for s in settings.split_whitespace() {
        let (name, value) = s.split_once('=').unwrap();
        o.set(name, value).unwrap();
    }
    CompactionBuffer::new(&o).unwrap()
}

fn tables(v: &Version, level: usize, run: u64, ids: &[u64]) -> TaskInput {
    let r = v.levels[level].runs.iter().find(|r| r.id == run).unwrap();
    TaskInput {
        level,
        run,
        tables: r
            .tables
            .iter()
            .filter(|t| ids.contains(&t.id))
            .cloned()
            .collect(),
    }
}

/// Commits a merge of `upper` (level `level`, run `run`) with `lower`
/// (the next level's run `lower_run`) into `outputs`, buffer included;
/// renders the buffer after it. New runs are numbered from 900.
fn merge(
    b: &CompactionBuffer,
    v: &Version,
    (level, run, upper): (usize, u64, &[u64]),
    (lower_run, lower): (u64, &[u64]),
    outputs: &[Arc<TableMeta>],
) -> (Version, String, BufferChange) {
    let task = CompactionTask {
        merges: vec![vec![
            tables(v, level, run, upper),
            tables(v, level + 1, lower_run, lower),
        ]],
        moves: Vec::new(),
        output_level: level + 1,
        output_run: Some(lower_run),
        reason: String::new(),
        compact_pointer: None,
        grouped: false,
    };
    let mut edit = task.final_edit(lower_run, outputs, &HashSet::new(), None);
    let mut next = 900..;
    let change = b
        .extend_task_edit(v, &task, &mut edit, || next.next().unwrap())
        .unwrap();
    let after = v.apply(&edit).unwrap();
    let text = render(&after);
    (after, text, change)
}

#[test]
fn a_merged_table_joins_the_newest_buffer_run_when_it_follows_in_key_order() {
    let b = buffer("");
    let v = version(
        "L1 1: a-c/100 m-p/100
         L2 2: a-b/100 n-o/100
         B2 5: 0-0/10",
    );
    let (v, text, change) = merge(
        &b,
        &v,
        (1, 1, &[100]),
        (2, &[102]),
        &[meta(200, "a", "c", 200)],
    );
    assert_eq!(text, "B2#5: 104 100");
    assert_eq!(change, BufferChange::default());
    // The next victim follows "c": same run.
    let (v, text, _) = merge(
        &b,
        &v,
        (1, 1, &[101]),
        (2, &[103]),
        &[meta(201, "m", "p", 200)],
    );
    assert_eq!(text, "B2#5: 104 100 101");
    // A new round (key order wraps): a new run, newest first.
    let v = v.apply(&{
        let mut e = VersionEdit::default();
        e.add_table(1, 1, meta(300, "b", "b", 100));
        e
    });
    let (_, text, _) = merge(
        &b,
        &v.unwrap(),
        (1, 1, &[300]),
        (2, &[200]),
        &[meta(202, "a", "c", 300)],
    );
    assert_eq!(text, "B2#900: 300 | B2#5: 104 100 101");
}

#[test]
fn l0_tables_join_l1s_buffer_older_runs_first_and_keep_the_recording() {
    let b = buffer("");
    // Two overlapping L0 runs: 4 (newer) and 3 (older, two tables).
    let v = version(
        "L0 4: b-d/100@50
         L0 3: a-c/100@40 e-f/100@41
         L1 1: a-b/100
         L2 2: a-z/1000",
    )
    .apply(&VersionEdit {
        buffer_recording: vec![(1, BufferRecording::Since(5))],
        ..VersionEdit::default()
    })
    .unwrap();
    let task = CompactionTask {
        merges: vec![vec![
            tables(&v, 0, 4, &[100]),
            tables(&v, 0, 3, &[101, 102]),
            tables(&v, 1, 1, &[103]),
        ]],
        moves: Vec::new(),
        output_level: 1,
        output_run: Some(1),
        reason: String::new(),
        compact_pointer: None,
        grouped: false,
    };
    let mut edit = task.final_edit(1, &[meta(200, "a", "f", 300)], &HashSet::new(), None);
    let mut next = 900..;
    b.extend_task_edit(&v, &task, &mut edit, || next.next().unwrap())
        .unwrap();
    let after = v.apply(&edit).unwrap();
    // The older run's tables fill a run in key order; the newer run's
    // table, overlapping them, a newer one: a lookup of "b" meets it first.
    assert_eq!(render(&after), "B1#901: 100 | B1#900: 101 102");
    // Every L0 table is recorded: range reads may still trust L1's buffer.
    assert_eq!(after.levels[1].recording, BufferRecording::Since(5));
}

/// Dynamic level sizing: L0 compacts into a base level below L1 (here
/// L5, the levels between empty). L0's tables join the base level's
/// buffer as they join B₁ under fixed targets, in a run newer than the
/// buffer's older copy of the same keys, so a lookup meets the newest
/// version first; nothing bypasses the buffer, so the recording stays.
#[test]
fn l0_tables_join_a_dynamic_base_levels_buffer() {
    let b = buffer("dynamic_level_bytes=true");
    let v = version(
        "L0 4: b-d/100@50
         L5 1: a-c/100@20
         L6 2: a-z/1000@3
         B5 7: a-c/100@20",
    )
    .apply(&VersionEdit {
        buffer_recording: vec![(5, BufferRecording::Since(5))],
        ..VersionEdit::default()
    })
    .unwrap();
    let task = CompactionTask {
        merges: vec![vec![tables(&v, 0, 4, &[100]), tables(&v, 5, 1, &[101])]],
        moves: Vec::new(),
        output_level: 5,
        output_run: Some(1),
        reason: String::new(),
        compact_pointer: None,
        grouped: false,
    };
    let mut edit = task.final_edit(1, &[meta(200, "a", "d", 200)], &HashSet::new(), None);
    let mut next = 900..;
    b.extend_task_edit(&v, &task, &mut edit, || next.next().unwrap())
        .unwrap();
    let after = v.apply(&edit).unwrap();
    assert_eq!(render(&after), "B5#900: 100 | B5#7: 103");
    assert_eq!(after.levels[5].recording, BufferRecording::Since(5));
    // The round counts the arrival: 100 bytes into a level of 100.
    assert_eq!(after.levels[5].round.arrived, 100);
}

/// Dynamic level sizing moved the base level below L5 once L5's data had
/// all merged down, and L5's buffer kept its copy of them. An L0 table
/// (a tombstone at 50 among its keys) compacting into L6 passes L5 by:
/// L5's copy of its keys goes, or it would answer for them once L5 holds
/// data again (the tombstone dropped at the last level, nothing else
/// would hide the copy's version).
#[test]
fn l0_tables_passing_a_levels_buffer_by_remove_its_copies_of_their_keys() {
    let b = buffer("dynamic_level_bytes=true");
    let v = version(
        "L0 4: b-d/100@50
         L6 2: a-z/1000@3
         B5 7: a-c/100@20 x-z/100@20",
    );
    let task = CompactionTask {
        merges: vec![vec![tables(&v, 0, 4, &[100]), tables(&v, 6, 2, &[101])]],
        moves: Vec::new(),
        output_level: 6,
        output_run: Some(2),
        reason: String::new(),
        compact_pointer: None,
        grouped: false,
    };
    let mut edit = task.final_edit(2, &[meta(200, "a", "z", 1050)], &HashSet::new(), None);
    let mut next = 900..;
    let change = b
        .extend_task_edit(&v, &task, &mut edit, || next.next().unwrap())
        .unwrap();
    let after = v.apply(&edit).unwrap();
    // L5's a-c copy goes (its level holds nothing it could guard), x-z
    // stays; L6's buffer takes the L0 table.
    assert_eq!(render(&after), "B5#7: 103 | B6#900: 100");
    assert_eq!(change.removed[5], 1);
}

#[test]
fn victims_leaving_a_level_drain_its_older_buffer_runs_in_key_order() {
    let b = buffer("");
    // B2's newest run (9) is kept; the older run 7 loses the entries that
    // end inside the victims' range [d, k]. (L2 keeps s-t: a level left
    // empty drops its whole buffer.)
    let v = version(
        "L2 2: d-k/100
         L3 3: a-z/1000
         B2 9: e-f/10
         B2 7: a-c/10 d-e/10 g-h/10 j-m/10
         L2 2: s-t/100",
    );
    let (_, text, change) = merge(
        &b,
        &v,
        (2, 2, &[100]),
        (3, &[101]),
        &[meta(200, "a", "z", 1100)],
    );
    // Drained entries guard no older table here, so they go altogether.
    assert_eq!(text, "B2#9: 102 | B2#7: 103 106 | B3#900: 100");
    assert_eq!(change.removed_total(), 2);
}

#[test]
fn a_level_its_victims_leave_empty_drops_its_whole_buffer() {
    let b = buffer("");
    // L2's last table leaves it: its buffer goes whole, the newest run (9)
    // and the entries of run 7 ending outside the victims' range [d, k]
    // included (otherwise `B2#9: 102 | B2#7: 103 104` stayed).
    let v = version(
        "L2 2: d-k/100
         L3 3: a-z/1000
         B2 9: e-f/10
         B2 7: a-c/10 j-m/10",
    );
    let (_, text, change) = merge(
        &b,
        &v,
        (2, 2, &[100]),
        (3, &[101]),
        &[meta(200, "a", "z", 1100)],
    );
    assert_eq!(text, "B3#900: 100");
    assert_eq!(change.removed[2], 3);
}

#[test]
fn drained_entries_over_an_older_present_table_stay_as_removed_entries() {
    let b = buffer("");
    // Entries 103 and 104 of run 7 are drained. Run 5 holds a present
    // table over their ranges (not drained: it ends past the victims), so
    // both stay as removed entries, to stop lookups before 105.
    let v = version(
        "L2 2: d-k/100
         L3 3: a-z/1000
         B2 9: x-y/10
         B2 7: d-e/10 g-h/10
         B2 5: d-m/10
         L2 2: s-t/100",
    );
    let (_, text, _) = merge(
        &b,
        &v,
        (2, 2, &[100]),
        (3, &[101]),
        &[meta(200, "a", "z", 1100)],
    );
    assert_eq!(
        text,
        "B2#9: 102 | B2#7: 103x 104x | B2#5: 105 | B3#900: 100"
    );
}

#[test]
fn the_space_bound_removes_the_oldest_runs_first() {
    let b = buffer("lsbm_max_buffer_bytes=250");
    let v = version(
        "L1 1: m-p/100
         L2 2: n-o/100
         B2 9: a-b/100
         B2 7: c-d/100
         B3 4: e-f/100",
    );
    // 400 bytes after the append: runs 4 (L3) and 7 go, oldest first.
    let (_, text, change) = merge(
        &b,
        &v,
        (1, 1, &[100]),
        (2, &[101]),
        &[meta(200, "m", "p", 200)],
    );
    assert_eq!(text, "B2#9: 102 100");
    assert_eq!(change.removed_total(), 2);
}

#[test]
fn trim_removes_rarely_cached_tables_but_those_appended_since_the_last_trim() {
    let b = buffer("lsbm_trim_threshold=0.8");
    // 100 joined the newest run before the trim before this one, which
    // spared it; this one judges it with the rest. 101 joined since.
    b.note_appended(100);
    b.trimmed();
    b.note_appended(101);
    b.trimmed();
    let v = version(
        "B2 9: a-b/10 c-d/10
         B2 7: a-a/10 c-c/10 e-e/10
         B2 5: a-d/10",
    );
    let ratios: HashMap<u64, f64> = [
        (100, 0.0),
        (101, 0.1),
        (102, 0.9),
        (103, 0.5),
        (104, 0.79),
        (105, 0.8),
    ]
    .into_iter()
    .collect();
    let (edit, change) = b.trim_edit(&v, &ratios).unwrap();
    // 101 stays whatever its ratio; 100, 103 and 104 go. 100 and 103
    // then guard the still present 105 and stay as removed entries; 104
    // guards nothing and is dropped.
    assert_eq!(
        render(&v.apply(&edit).unwrap()),
        "B2#9: 100x 101 | B2#7: 102 103x | B2#5: 105"
    );
    assert_eq!(change.removed_total(), 3);
    let (edit, _) = b.trim_edit(&v, &HashMap::new()).unwrap();
    assert!(edit.is_empty(), "tables without a known ratio are kept");
}

/// A frozen level's tables are judged however fresh: it takes no
/// arrivals, and what its buffer holds the level is superseding.
#[test]
fn trim_judges_a_frozen_levels_fresh_tables_too() {
    let b = buffer("lsbm_trim_threshold=0.8");
    let v = version(
        "B2 9: a-b/10 c-d/10
         B3 7: a-b/10 c-d/10
         frozen 3",
    );
    for id in 100..104 {
        b.note_appended(id);
    }
    let ratios: HashMap<u64, f64> = [(100, 0.1), (101, 0.9), (102, 0.1), (103, 0.9)]
        .into_iter()
        .collect();
    let (edit, change) = b.trim_edit(&v, &ratios).unwrap();
    // B2's fresh 100 is spared; frozen B3's 102 goes (nothing older to
    // guard, so its entry is dropped), its cached 103 stays.
    assert_eq!(
        render(&v.apply(&edit).unwrap()),
        "B2#9: 100 101 | B3#7: 103 | frozen 3"
    );
    assert_eq!(change.removed[3], 1);
}

#[test]
fn a_removed_entry_stays_while_the_level_may_hold_its_data() {
    let b = buffer("lsbm_trim_threshold=0.8");
    // Both entries of run 7 are trimmed and guard nothing. L2's 100 holds
    // sequence numbers of 103's, so 103 stays as a removed entry; 101,
    // over 104's keys, holds only newer ones, so 104 goes.
    let v = version(
        "L2 2: a-c/100 e-f/100@20
         B2 9: x-y/10
         B2 7: a-b/10 e-e/10",
    );
    let ratios: HashMap<u64, f64> = [(103, 0.0), (104, 0.0)].into_iter().collect();
    let (edit, change) = b.trim_edit(&v, &ratios).unwrap();
    assert_eq!(render(&v.apply(&edit).unwrap()), "B2#9: 102 | B2#7: 103x");
    assert_eq!(change.removed_total(), 2);
}

#[test]
fn a_victim_superseding_the_levels_older_data_does_not_freeze_it() {
    let b = buffer("");
    // Level 2 holds 1000 bytes; a 500-byte victim merges with all of it
    // into 1000 bytes. What it dropped was the level's data from before
    // this round (the paper's C'₂), not data this round brought: no freeze.
    let v = version(
        "L1 1: a-z/500
         L2 2: a-z/1000
         L3 3: a-z/5000",
    );
    let (v, text, change) = merge(
        &b,
        &v,
        (1, 1, &[100]),
        (2, &[101]),
        &[meta(200, "a", "z", 1000)],
    );
    assert_eq!(text, "B2#900: 100");
    assert_eq!(change, BufferChange::default());
    let round = v.levels[2].round;
    assert_eq!((round.start_bytes, round.arrived), (1000, 500));
    assert_eq!(round.departed, 500, "the superseded older data left");
}

#[test]
fn repeated_data_freeze_the_level_and_arrivals_become_removed_entries() {
    let b = buffer("");
    // L2 starts its round all but empty; a 500-byte victim fills it.
    let v = version(
        "L1 1: a-m/500 zz-zz/10
         L2 2: q-r/1
         B2 7: 0-0/10",
    );
    let (v, text, _) = merge(
        &b,
        &v,
        (1, 1, &[100]),
        (2, &[]),
        &[meta(200, "a", "m", 500)],
    );
    assert_eq!(text, "B2#7: 103 100");
    // The same keys again, in this round: the level stays at 501 bytes
    // after 1000 arrived, so 499 are repeated (over a quarter).
    let v = v
        .apply(&{
            let mut e = VersionEdit::default();
            e.add_table(1, 1, meta(300, "a", "m", 500));
            e
        })
        .unwrap();
    let l2 = 2;
    let (v, text, change) = merge(
        &b,
        &v,
        (1, 1, &[300]),
        (l2, &[200]),
        &[meta(201, "a", "m", 500)],
    );
    assert_eq!(text, "B2#900: 300x | B2#7: 103 100 | frozen 2");
    assert_eq!((change.froze_total(), change.removed_total()), (1, 1));
    // Frozen: the next arrival is a removed entry too. It guards no older
    // table, but L2's run holds its data: it stays, so that range reads
    // there read the run.
    let (v, text, _) = merge(
        &b,
        &v,
        (1, 1, &[101]),
        (l2, &[]),
        &[meta(202, "zz", "zz", 10)],
    );
    assert_eq!(text, "B2#900: 300x 101x | B2#7: 103 100 | frozen 2");
    // A level's worth merged down from L2 unfreezes it.
    let task = CompactionTask {
        merges: vec![vec![tables(&v, 2, l2, &[102, 201, 202])]],
        moves: Vec::new(),
        output_level: 3,
        output_run: None,
        reason: String::new(),
        compact_pointer: None,
        grouped: false,
    };
    let mut edit = task.final_edit(50, &[meta(203, "a", "zz", 510)], &HashSet::new(), None);
    let mut next = 950..;
    b.extend_task_edit(&v, &task, &mut edit, || next.next().unwrap())
        .unwrap();
    let text = render(&v.apply(&edit).unwrap());
    assert!(!text.contains("frozen 2"), "{text}");
}

#[test]
fn freeze_accounting_survives_a_reopen() {
    let b = buffer("");
    // A 100-byte victim into a 100-byte L2 leaves 150: it superseded 50
    // bytes of the older data, nothing repeated. The next 100 bytes leave
    // 160: of the 90 dropped, the older data (50 of 150 bytes) account for
    // 30, so 60 bytes repeated this round's, over a quarter of 160.
    let v = version(
        "L1 1: a-b/100 c-d/100
         L2 2: a-z/100
         L3 3: a-z/1000",
    );
    let (v, text, _) = merge(
        &b,
        &v,
        (1, 1, &[100]),
        (2, &[102]),
        &[meta(200, "a", "z", 150)],
    );
    assert!(!text.contains("frozen"), "{text}");
    // The reopened version is the MANIFEST's: a snapshot record, decoded.
    let snapshot = VersionEdit::decode(&v.snapshot_edit().encode()).unwrap();
    let reopened = Version::default().apply(&snapshot).unwrap();
    assert_eq!(reopened.levels[2].round, v.levels[2].round);
    // A reopened store builds a fresh `CompactionBuffer`.
    for (b, v) in [(b, v), (buffer(""), reopened)] {
        let (_, text, change) = merge(
            &b,
            &v,
            (1, 1, &[101]),
            (2, &[200]),
            &[meta(201, "a", "z", 160)],
        );
        assert!(text.contains("frozen 2"), "{text}");
        assert_eq!(change.froze_total(), 1);
    }
}

#[test]
fn entries_kept_for_range_reads_are_bounded_and_move_the_recording() {
    let b = buffer("");
    // 70 removed entries over L2's one table, each guarding nothing but
    // sharing sequence numbers with it: 64 may stay.
    let entries: Vec<String> = (0..70)
        .map(|i| format!("k{i:02}-k{i:02}/1@{}x", 1 + i % 9))
        .collect();
    let v = version(&format!("L2 2: a-z/100\nB2 7: {}", entries.join(" ")));
    let v = v
        .apply(&VersionEdit {
            buffer_recording: vec![(2, BufferRecording::Since(0))],
            ..VersionEdit::default()
        })
        .unwrap();
    let (edit, _) = b.trim_edit(&v, &HashMap::new()).unwrap();
    let after = v.apply(&edit).unwrap();
    let left: Vec<u64> = after.levels[2].buffer[0]
        .entries
        .iter()
        .map(|e| e.meta.max_seq)
        .collect();
    assert_eq!(left.len(), 64);
    // The six dropped held sequence number 1 (the oldest data): range
    // reads now leave the run's tables holding it to the run.
    assert!(left.iter().filter(|&&s| s == 1).count() == 2, "{left:?}");
    assert_eq!(after.levels[2].recording, BufferRecording::Since(1));
}

/// A last level filled with unique data first (a load) freezes on the
/// first merge whose arrivals mostly repeat data it holds, however large
/// the level; a merge of new keys into it does not.
#[test]
fn a_large_last_level_freezes_on_a_merge_of_mostly_repeated_data() {
    let b = buffer("");
    let v = version(
        "L1 1: a-c/500 m-p/500
         L2 2: a-c/50000 m-p/50000",
    );
    // New keys: the level grows by what arrived.
    let (v, text, _) = merge(
        &b,
        &v,
        (1, 1, &[100]),
        (2, &[102]),
        &[meta(200, "a", "c", 50500)],
    );
    assert_eq!(text, "B2#900: 100");
    // Updates: the level grows by 100 of the 500 bytes that arrived.
    let (v, text, change) = merge(
        &b,
        &v,
        (1, 1, &[101]),
        (2, &[103]),
        &[meta(201, "m", "p", 50100)],
    );
    assert_eq!(text, "B2#900: 100 101x | frozen 2");
    assert_eq!(change.froze_total(), 1);
    assert!(v.levels[2].frozen);
}

#[test]
fn the_last_level_freezes_on_data_it_already_holds() {
    let b = buffer("");
    // As above, but level 2 is the last: nothing below it, so its data
    // never leave and what a victim drops of them is repeated.
    let v = version(
        "L1 1: a-z/500
         L2 2: a-z/1000",
    );
    let (v, text, change) = merge(
        &b,
        &v,
        (1, 1, &[100]),
        (2, &[101]),
        &[meta(200, "a", "z", 1000)],
    );
    assert_eq!(text, "B2#900: 100x | frozen 2");
    assert_eq!(change.froze_total(), 1);
    assert!(v.levels[2].frozen);
    assert_eq!(v.levels[2].round.departed, 0, "nothing left the last level");
}
