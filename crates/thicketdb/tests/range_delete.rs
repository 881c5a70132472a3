//! Range deletes on constructed shapes, written datadriven style (as
//! Pebble's and CockroachDB's `testdata` files): each case is a script of
//! commands, each followed by `----` and the output it must print.
//!
//! Commands: `put K V`, `delete-range FROM TO`, `snapshot NAME`,
//! `release NAME`, `flush`, `compact` (the whole key space), `reopen`,
//! `check`, `get K [@NAME]`, `scan [@NAME]`, `scan-reverse [@NAME]` and
//! `tables`: every live table, level by level and in key order, as its
//! entries (`key@seq`, `key@seq:del`) and its range-deletion fragments
//! (`[start, end)@seqs`). In keys, `\0` is a zero byte.

use std::collections::HashMap;
use std::path::Path;

use thicketdb::dump;
use thicketdb::format::ValueKind;
use thicketdb::{Db, Options, ReadOptions, Snapshot};

fn key(s: &str) -> Vec<u8> {
    s.replace("\\0", "\0").into_bytes()
}

trait TrimDots {
    fn trim_ascii_end_dots(&self) -> &[u8];
}

impl TrimDots for [u8] {
    fn trim_ascii_end_dots(&self) -> &[u8] {
        let end = self.iter().rposition(|&b| b != b'.').map_or(0, |i| i + 1);
        &self[..end]
    }
}

fn show(b: &[u8]) -> String {
    String::from_utf8_lossy(b).replace('\0', "\\0")
}

struct Script<'a> {
    dir: &'a Path,
    options: Options,
    db: Option<Db>,
    snapshots: HashMap<String, Snapshot>,
    /// Dots appended to every value written (and trimmed when shown), to
    /// fill tables.
    pad: usize,
}

impl Script<'_> {
    fn db(&self) -> &Db {
        self.db.as_ref().expect("open")
    }

    fn read_options(&self, arg: Option<&&str>) -> ReadOptions {
        ReadOptions {
            snapshot: arg
                .and_then(|a| a.strip_prefix('@'))
                .map(|name| self.snapshots[name].clone()),
            ..ReadOptions::default()
        }
    }

    fn run(&mut self, command: &str) -> String {
        let words: Vec<&str> = command.split_whitespace().collect();
        match words[..] {
            ["put", k, v] => self
                .db()
                .put(key(k), format!("{v}{}", ".".repeat(self.pad)))
                .map(|()| "ok".into()),
            ["delete-range", from, to] => self
                .db()
                .delete_range(key(from), key(to))
                .map(|()| "ok".into()),
            ["snapshot", name] => {
                let s = self.db().snapshot();
                self.snapshots.insert(name.into(), s);
                Ok("ok".into())
            }
            ["release", name] => {
                self.snapshots.remove(name);
                Ok("ok".into())
            }
            ["flush"] => self.db().flush().map(|()| "ok".into()),
            ["compact"] => self.db().compact_range(None, None).map(|()| "ok".into()),
            ["reopen"] => {
                self.snapshots.clear();
                self.db.take().expect("open").close().unwrap();
                self.db = Some(Db::open(self.dir, self.options.clone()).unwrap());
                Ok("ok".into())
            }
            ["check"] => {
                self.db.take().expect("open").close().unwrap();
                let checked = thicketdb::check::check_store(self.dir).map(|_| "ok".into());
                self.db = Some(Db::open(self.dir, self.options.clone()).unwrap());
                checked
            }
            ["get", k, ref at @ ..] => self
                .db()
                .get_opt(key(k), &self.read_options(at.first()))
                .map(|v| match v {
                    Some(v) => format!("{k}={}", show(v.trim_ascii_end_dots())),
                    None => format!("{k}: absent"),
                }),
            ["scan", ref at @ ..] | ["scan-reverse", ref at @ ..] => {
                let reverse = words[0] == "scan-reverse";
                self.scan(self.read_options(at.first()), reverse)
            }
            ["tables"] => Ok(tables(self.dir)),
            _ => panic!("unknown command {command:?}"),
        }
        .unwrap_or_else(|e| format!("error: {e}"))
    }

    fn scan(&self, opts: ReadOptions, reverse: bool) -> thicketdb::Result<String> {
        let mut it = self.db().iter(opts)?;
        let mut out = Vec::new();
        match reverse {
            false => it.seek_to_first(),
            true => it.seek_to_last(),
        }
        while it.valid() {
            out.push(format!(
                "{}={}",
                show(it.key()),
                show(it.value().trim_ascii_end_dots())
            ));
            match reverse {
                false => it.next(),
                true => it.prev(),
            }
        }
        it.status()?;
        Ok(match out.is_empty() {
            true => "(empty)".into(),
            false => out.join(" "),
        })
    }
}

/// Every live table as one line (see the module comment).
fn tables(dir: &Path) -> String {
    let manifest = dump::manifest(dir).unwrap();
    let mut placed = HashMap::new();
    for record in &manifest.records {
        for t in &record.edit.new_tables {
            placed.insert(t.meta.id, (t.meta.segment, t.meta.offset));
        }
    }
    let last = manifest.records.last().expect("a MANIFEST record");
    let mut lines = Vec::new();
    for (level, runs) in last.levels.iter().enumerate() {
        for run in runs {
            for id in &run.tables {
                let (segment, offset) = placed[id];
                let t = dump::table(dir, segment, offset).unwrap();
                let mut parts: Vec<String> = t
                    .entries
                    .iter()
                    .map(|e| match e.kind {
                        ValueKind::Value => format!("{}@{}", show(&e.key), e.sequence),
                        ValueKind::Deletion => format!("{}@{}:del", show(&e.key), e.sequence),
                    })
                    .collect();
                parts.push("|".into());
                parts.extend(t.range_deletions.iter().map(|f| {
                    let seqs: Vec<String> = f.seqs.iter().map(u64::to_string).collect();
                    format!("[{}, {})@{}", show(&f.start), show(&f.end), seqs.join(","))
                }));
                lines.push(format!("L{level}: {}", parts.join(" ")));
            }
        }
    }
    lines.join("\n")
}

/// Runs `script` against a fresh store opened with `options`, each value
/// padded with `pad` dots. A command's output runs from its `----` to a
/// blank line or the next command (a line followed by `----`).
fn run_script(options: Options, pad: usize, script: &str) {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Script {
        dir: dir.path(),
        db: Some(Db::open(dir.path(), options.clone()).unwrap()),
        options,
        snapshots: HashMap::new(),
        pad,
    };
    let lines: Vec<&str> = script.lines().map(str::trim).collect();
    let mut i = 0;
    while i < lines.len() {
        let command = lines[i];
        i += 1;
        if command.is_empty() || command.starts_with('#') {
            continue;
        }
        assert_eq!(lines.get(i), Some(&"----"), "after {command:?}");
        i += 1;
        let mut want = Vec::new();
        while i < lines.len() && !lines[i].is_empty() && lines.get(i + 1) != Some(&"----") {
            want.push(lines[i]);
            i += 1;
        }
        let got = s.run(command);
        assert_eq!(got, want.join("\n"), "{command}");
    }
}

/// No background compaction and a memtable that never fills: only the
/// script's `flush` and `compact` change the shape.
fn quiet(target_table_size: u64) -> Options {
    Options::default()
        .disable_auto_compactions(true)
        .write_buffer_size(4 << 20)
        .target_table_size(target_table_size)
}

#[test]
fn overlapping_tombstones_stack_and_the_bottom_drops_them() {
    run_script(
        quiet(1 << 20),
        0,
        r"
        put a 1
        ----
        ok
        put b 2
        ----
        ok
        put c 3
        ----
        ok
        put d 4
        ----
        ok
        put e 5
        ----
        ok
        flush
        ----
        ok
        delete-range b d
        ----
        ok
        delete-range c f
        ----
        ok
        put e 6
        ----
        ok
        scan
        ----
        a=1 e=6
        scan-reverse
        ----
        e=6 a=1
        get c
        ----
        c: absent
        flush
        ----
        ok

        # The flush drops what every reader sees deleted (e@5 of the
        # memtable), keeps the stack.
        tables
        ----
        L0: e@8 | [b, c)@6 [c, d)@7,6 [d, f)@7
        L0: a@1 b@2 c@3 d@4 e@5 |
        get d
        ----
        d: absent
        reopen
        ----
        ok
        scan
        ----
        a=1 e=6

        # The merge leaves nothing older below: the tombstones go, with
        # everything under them.
        compact
        ----
        ok
        tables
        ----
        L6: a@1 e@8 |
        check
        ----
        ok
        ",
    );
}

#[test]
fn a_snapshot_between_tombstone_and_covered_writes_keeps_both() {
    run_script(
        quiet(1 << 20),
        0,
        r"
        put a 1
        ----
        ok
        put b 2
        ----
        ok
        snapshot s
        ----
        ok
        delete-range a c
        ----
        ok
        put b 3
        ----
        ok
        get a
        ----
        a: absent
        get b
        ----
        b=3
        get a @s
        ----
        a=1
        scan @s
        ----
        a=1 b=2
        flush
        ----
        ok
        compact
        ----
        ok

        # Snapshot s still reads a@1 and b@2: the bottom keeps them and the
        # tombstone over them.
        tables
        ----
        L6: a@1 b@4 b@2 | [a, c)@3
        get a @s
        ----
        a=1
        scan-reverse @s
        ----
        b=2 a=1
        scan
        ----
        b=3
        release s
        ----
        ok

        # The table's range reaches the tombstone's end, c: a write of c
        # overlaps it, and the merge at the bottom drops the tombstone and
        # everything under it.
        put c 7
        ----
        ok
        flush
        ----
        ok
        compact
        ----
        ok
        tables
        ----
        L6: b@4 c@5 |
        scan
        ----
        b=3 c=7
        ",
    );
}

#[test]
fn tombstones_are_cut_at_table_boundaries_and_cover_the_gaps() {
    // One user key per table: each value alone fills one.
    run_script(
        quiet(4096),
        5000,
        r"
        put a 1
        ----
        ok
        put b 2
        ----
        ok
        put c 3
        ----
        ok
        put d 4
        ----
        ok
        put e 5
        ----
        ok
        flush
        ----
        ok
        compact
        ----
        ok
        snapshot s
        ----
        ok
        delete-range b d
        ----
        ok
        put c 7
        ----
        ok
        delete-range cc ee
        ----
        ok
        flush
        ----
        ok

        # The flushed table holds one entry, but its range spans the
        # tombstones.
        tables
        ----
        L0: c@7 | [b, cc)@6 [cc, d)@8,6 [d, ee)@8
        L6: a@1 |
        L6: b@2 |
        L6: c@3 |
        L6: d@4 |
        L6: e@5 |
        compact
        ----
        ok

        # Each table takes the fragments up to its last key's successor;
        # the last one the rest.
        tables
        ----
        L6: a@1 |
        L6: b@2 | [b, b\0)@6
        L6: c@7 c@3 | [b\0, c\0)@6
        L6: d@4 | [c\0, cc)@6 [cc, d)@8,6 [d, d\0)@8
        L6: e@5 | [d\0, ee)@8
        check
        ----
        ok
        scan
        ----
        a=1 c=7
        scan @s
        ----
        a=1 b=2 c=3 d=4 e=5
        get cc
        ----
        cc: absent
        get d
        ----
        d: absent
        get d @s
        ----
        d=4
        get e
        ----
        e: absent
        ",
    );
}

/// Block cache lookups so far: one per data block a read touches.
fn block_lookups(db: &Db) -> u64 {
    let s = db.stats();
    s.block_cache_hits + s.block_cache_misses
}

/// Keys a scan in one direction finds.
fn count_keys(db: &Db, opts: ReadOptions, reverse: bool) -> usize {
    let mut it = db.iter(opts).unwrap();
    match reverse {
        false => it.seek_to_first(),
        true => it.seek_to_last(),
    }
    let mut n = 0;
    while it.valid() {
        n += 1;
        match reverse {
            false => it.next(),
            true => it.prev(),
        }
    }
    it.status().unwrap();
    n
}

/// A newer tombstone over a whole table's keys: a get stops at it without
/// reading a block below, and a scan in either direction seeks the older
/// sources past it instead of stepping through what it covers.
#[test]
fn covering_tombstones_spare_the_covered_blocks() {
    let dir = tempfile::tempdir().unwrap();
    let options = quiet(64 << 10).block_size(1024);
    let db = Db::open(dir.path(), options).unwrap();
    for i in 0..2000 {
        db.put(format!("key{i:05}"), [b'v'; 100]).unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    let before_delete = db.snapshot();
    db.delete_range("key00100", "key01900").unwrap();
    db.flush().unwrap();

    let before = block_lookups(&db);
    for i in (100..1900).step_by(7) {
        assert_eq!(db.get(format!("key{i:05}")).unwrap(), None);
    }
    assert_eq!(block_lookups(&db), before, "a covered get reads no block");
    assert!(db.get("key00050").unwrap().is_some());

    let before = block_lookups(&db);
    let all = ReadOptions {
        snapshot: Some(before_delete),
        ..ReadOptions::default()
    };
    assert_eq!(count_keys(&db, all, false), 2000);
    let full_scan = block_lookups(&db) - before;
    let before = block_lookups(&db);
    assert_eq!(count_keys(&db, ReadOptions::default(), false), 200);
    let skipping_scan = block_lookups(&db) - before;
    assert!(
        skipping_scan * 4 < full_scan,
        "the scan read {skipping_scan} blocks, a full one {full_scan}"
    );
    // Backward, the older sources are moved back before the tombstone.
    let before = block_lookups(&db);
    assert_eq!(count_keys(&db, ReadOptions::default(), true), 200);
    let skipping_reverse = block_lookups(&db) - before;
    assert!(
        skipping_reverse * 4 < full_scan,
        "the reverse scan read {skipping_reverse} blocks, a full one {full_scan}"
    );
}

/// SifrDB's parallel search: a newer table whose Bloom filter rules a key
/// out but whose tombstone covers it is still a candidate, so the older
/// table's value does not come back.
#[test]
fn parallel_search_asks_tables_whose_filter_rules_the_key_out() {
    for threads in [1, 4] {
        let dir = tempfile::tempdir().unwrap();
        let options = quiet(64 << 10)
            .search_threads(threads)
            .parallel_search_min_candidates(2)
            .bloom_bits_per_key(10)
            // Parallel lookups run only with direct reads, for candidates
            // whose data blocks are not cached.
            .use_direct_reads(threads > 1);
        let db = Db::open(dir.path(), options).unwrap();
        for k in ["a", "c", "e"] {
            db.put(k, "old").unwrap();
        }
        db.flush().unwrap();
        db.compact_range(None, None).unwrap();
        // A second table holding "a": its lookup has two candidates to read.
        db.put("a", "old").unwrap();
        db.flush().unwrap();
        // One table: the tombstone and a key of its own for the filter.
        db.put("zz", "new").unwrap();
        db.delete_range("b", "f").unwrap();
        db.flush().unwrap();
        assert_eq!(db.get("a").unwrap(), Some(b"old".to_vec()), "{threads}");
        assert_eq!(db.get("c").unwrap(), None, "{threads} threads");
        assert_eq!(db.get("e").unwrap(), None, "{threads} threads");
        assert_eq!(db.get("zz").unwrap(), Some(b"new".to_vec()));
        if threads > 1 {
            assert!(db.stats().search_lookups > 0, "the parallel path ran");
        }
    }
}

/// SifrDB's journaled merges (checkpoints every table) of runs of range
/// tombstones alone over a run of data: the data they cover stays deleted.
#[test]
fn journaled_merges_keep_range_tombstones() {
    let dir = tempfile::tempdir().unwrap();
    let options = thicketdb::Profile::Sifr
        .options()
        .disable_auto_compactions(true)
        .target_table_size(4096)
        // Journal every merge reading a table's worth of bytes.
        .early_cleaning_threshold(1);
    let db = Db::open(dir.path(), options).unwrap();
    let key = |i: u32| format!("key{i:04}");
    for i in 0..100 {
        db.put(key(i), "v").unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    for i in 0..8 {
        db.delete_range(key(i * 10), key(i * 10 + 5)).unwrap();
        db.flush().unwrap();
    }
    let checkpoints = db.stats().merge_checkpoints;
    db.compact_range(None, None).unwrap();
    assert!(
        db.stats().merge_checkpoints > checkpoints,
        "a journaled merge ran"
    );
    for i in 0..80 {
        let want = (i % 10 >= 5).then(|| b"v".to_vec());
        assert_eq!(db.get(key(i)).unwrap(), want, "{}", key(i));
    }
}

/// A reverse scan moves older sources back past a covering tombstone, so
/// its cursor can end far below the key it returns; stepping forward from
/// there must not meet the skipped entries (the covered `k00`..`k49` and a
/// point deletion of `k20`) and return the current key again.
#[test]
fn next_after_a_reverse_skip_moves_past_the_current_key() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), quiet(64 << 10)).unwrap();
    let key = |i: u32| format!("k{i:02}");
    for i in 0..100 {
        db.put(key(i), "old").unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    // A point deletion among the entries the reverse scan skips (in a
    // source older than the range tombstone's): stepping over it must not
    // make the scan forget which key it stands on.
    db.delete(key(20)).unwrap();
    db.flush().unwrap();
    db.delete_range(key(0), "l").unwrap();
    db.put(key(50), "new").unwrap();

    let mut it = db.iter(ReadOptions::default()).unwrap();
    it.seek_to_last();
    assert_eq!((it.key(), it.value()), (&b"k50"[..], &b"new"[..]));
    it.next();
    assert!(
        !it.valid(),
        "next returned {:?} again",
        it.valid().then(|| it.key().to_vec())
    );
    it.status().unwrap();
    it.seek_to_last();
    it.prev();
    assert!(!it.valid());
}
