//! LSbM super-files inside the store: compactions write and take groups
//! of consecutive tables stored in one segment, while the buffer still
//! trims single tables.

use std::collections::HashMap;

use crate::db::*;
use crate::options::{Options, Profile};

fn options() -> Options {
    Options {
        write_buffer_size: 64 << 10,
        target_table_size: 8 << 10,
        block_size: 1024,
        l0_compaction_trigger: 2,
        max_bytes_for_level_base: 64 << 10,
        level_base_write_buffers: 0,
        group_compaction_bytes: 0,
        lsbm_trim_interval: 3_600_000,
        lsbm_superfile_tables: 4,
        // Fixed targets: the tests find buffer runs in L1 and L2.
        dynamic_level_bytes: false,
        ..Profile::Lsbm.options()
    }
}

fn fill(db: &Db, prefix: char, keys: std::ops::Range<u32>) {
    for i in keys {
        db.put(format!("{prefix}{i:07}"), [7u8; 100]).unwrap();
    }
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
}

#[test]
fn superfiles_group_outputs_and_victims_while_trim_takes_single_tables() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options()).unwrap();
    fill(&db, 'a', 0..2500);
    // How many buffer runs a level holds after a few rounds depends on
    // how flushes and compactions interleaved: write rounds until one
    // level holds two (a new run starts when key order wraps: rounds
    // alternate between keys above and below the last ones, so the round
    // robin comes back to the start).
    let mut round = 0;
    let version = loop {
        let prefix = if round % 2 == 0 { 'z' } else { 'y' };
        fill(&db, prefix, round * 1000..round * 1000 + 800);
        round += 1;
        let version = db.inner().default.super_version().version.clone();
        if round >= 3 && version.levels.iter().any(|l| l.buffer.len() >= 2) {
            break version;
        }
        assert!(round < 12, "no level gathered two buffer runs");
    };
    // Outputs: segments of at most four tables, most of them full (a table
    // moved by metadata is in a level and its buffer at once: once here).
    let mut counts: HashMap<u64, usize> = HashMap::new();
    let distinct: std::collections::HashSet<_> =
        version.tables().map(|t| (t.segment, t.id)).collect();
    for (segment, _) in distinct {
        *counts.entry(segment).or_default() += 1;
    }
    assert!(counts.values().all(|&n| n <= 4), "{counts:?}");
    assert!(
        counts.values().filter(|&&n| n == 4).count() >= 3,
        "{counts:?}"
    );
    // Victims: whole super-files reached the buffer, table by table.
    let depth = (1..version.levels.len())
        .find(|&l| version.levels[l].buffer.len() >= 2)
        .unwrap();
    let level = &version.levels[depth];
    let older: Vec<_> = level.buffer[1..]
        .iter()
        .flat_map(|r| r.present())
        .cloned()
        .collect();
    let mut per_segment: HashMap<u64, Vec<u64>> = HashMap::new();
    for t in &older {
        per_segment.entry(t.segment).or_default().push(t.id);
    }
    let (&segment, mates) = per_segment
        .iter()
        .max_by_key(|(_, ids)| ids.len())
        .expect("older buffer runs hold tables");
    assert!(mates.len() >= 2, "{per_segment:?}");
    // Trim: one table of the super-file is rarely cached, the others are.
    let cold = mates[0];
    let ratios: HashMap<u64, f64> = older
        .iter()
        .map(|t| (t.id, if t.id == cold { 0.0 } else { 1.0 }))
        .collect();
    let buffer = db
        .inner()
        .default
        .policy
        .buffer()
        .expect("lsbm has a buffer");
    // Two trims passed since these tables joined the buffer: this one may
    // judge them.
    buffer.trimmed();
    buffer.trimmed();
    let (edit, change) = buffer.trim_edit(&version, &ratios).unwrap();
    // The cold table goes from every buffer run holding it (one moved by
    // metadata sits in two levels' buffers), and nothing else.
    let copies = version
        .levels
        .iter()
        .flat_map(|l| l.buffer.iter())
        .flat_map(|r| r.entries.iter())
        .filter(|e| !e.removed && e.meta.id == cold)
        .count();
    assert!(copies >= 1);
    assert_eq!(change.removed_total(), copies as u64);
    let after = version.apply(&edit).unwrap();
    let present: Vec<u64> = after.levels[depth]
        .buffer_tables()
        .filter(|t| t.segment == segment)
        .map(|t| t.id)
        .collect();
    assert!(!present.contains(&cold), "{present:?}");
    assert_eq!(present.len(), mates.len() - 1, "its super-file mates stay");
}

/// The freeze accounting (each level's merge round) and frozen flags a
/// running store reached are what the reopened store starts from.
#[test]
fn reopen_keeps_the_freeze_accounting() {
    let dir = tempfile::tempdir().unwrap();
    let options = Options {
        lsbm_superfile_tables: 1,
        ..options()
    };
    let before = {
        let db = Db::open(dir.path(), options.clone()).unwrap();
        fill(&db, 'a', 0..2500);
        // Rewrites: repeated data for the deeper levels.
        for round in 0..3 {
            fill(&db, 'a', round * 800..round * 800 + 800);
        }
        let version = db.inner().default.super_version().version.clone();
        db.close().unwrap();
        version
    };
    let rounds: Vec<_> = before.levels.iter().map(|l| (l.round, l.frozen)).collect();
    assert!(
        rounds.iter().any(|(r, _)| r.arrived > 0),
        "no level took arrivals: {rounds:?}"
    );
    let db = Db::open(dir.path(), options).unwrap();
    let after = db.inner().default.super_version().version.clone();
    let reopened: Vec<_> = after.levels.iter().map(|l| (l.round, l.frozen)).collect();
    assert_eq!(reopened, rounds);
}

/// The logs the compaction buffer's present log tables reference.
fn buffered_logs(db: &Db) -> Vec<u64> {
    let version = db.inner().default.super_version().version.clone();
    let mut logs: Vec<u64> = version
        .levels
        .iter()
        .flat_map(|l| l.buffer_tables())
        .flat_map(|t| t.logs.clone())
        .collect();
    logs.sort_unstable();
    logs.dedup();
    logs
}

/// A store written with TRIAD-LOG and reopened with LSbM's buffer: its L0 log
/// tables join L1's buffer (B₁) when L0 compacts, and the buffer keeps them
/// past the compaction. Their logs must outlive every reopen while the
/// buffer holds them: the MANIFEST used to record a buffer table without
/// its log references, so the reopened store deleted the logs and a lookup
/// the buffer answered failed with NotFound for the log
/// (`model_keyspaces_under_every_profile`, `triad`, posix seed 802).
#[test]
fn a_buffered_log_table_keeps_its_log_across_reopens() {
    let dir = tempfile::tempdir().unwrap();
    let log_exists = |log: u64| crate::version::files::log_path(dir.path(), log).exists();
    let value = |i: u32| format!("value{i:07}").repeat(10);
    {
        let triad = Options {
            triad_log: true,
            disable_auto_compactions: true,
            ..Options::default()
        };
        let db = Db::open(dir.path(), triad).unwrap();
        for part in 0..2 {
            for i in part * 400..part * 400 + 500 {
                db.put(format!("k{i:07}"), value(i)).unwrap();
            }
            db.flush().unwrap();
        }
        db.close().unwrap();
    }
    // The same profile (a store keeps its profile), now with the buffer
    // and without TRIAD-LOG.
    let lsbm = Options {
        lsbm_buffer: true,
        dynamic_level_bytes: false,
        max_mem_compact_level: 0,
        write_buffer_size: 64 << 10,
        l0_compaction_trigger: 2,
        max_bytes_for_level_base: 4 << 20,
        level_base_write_buffers: 0,
        ..Options::default()
    };
    let buffered = {
        let db = Db::open(dir.path(), lsbm.clone()).unwrap();
        db.wait_for_compactions().unwrap();
        let logs = buffered_logs(&db);
        assert!(!logs.is_empty(), "L1's buffer took no log table");
        db.close().unwrap();
        logs
    };
    let db = Db::open(dir.path(), lsbm).unwrap();
    assert_eq!(
        buffered_logs(&db),
        buffered,
        "reopened buffer lost its logs"
    );
    assert!(buffered.iter().all(|&l| log_exists(l)), "{buffered:?}");
    for i in 0..900 {
        let got = db.get(format!("k{i:07}")).unwrap();
        assert_eq!(got, Some(value(i).into_bytes()), "k{i:07}");
    }
}

/// A keyspace runs with the store's store-wide options: an `lsbm` keyspace
/// in a `triad_log` store is the combination `validate` refuses, so
/// creating it is refused too (it used to be created and kept log tables
/// in its compaction buffer).
#[test]
fn an_lsbm_keyspace_is_refused_in_a_triad_log_store() {
    let dir = tempfile::tempdir().unwrap();
    let triad = Options {
        triad_log: true,
        ..Options::default()
    };
    let db = Db::open(dir.path(), triad).unwrap();
    let err = db.create_keyspace("hot", options()).unwrap_err();
    assert!(
        matches!(err, Error::InvalidArgument(ref m) if m.contains("lsbm_buffer")),
        "{err}"
    );
    assert!(db.keyspace("hot").is_err());
    db.create_keyspace("plain", Profile::LevelDb.options())
        .unwrap();
}

/// A store whose level `level` (returned) holds two buffer runs whose
/// range reads may come from the buffer, with L1 and L2 of 64 KiB and
/// 640 KiB, a cache that holds everything and `lsbm_range_by_cache` as
/// given.
fn two_buffer_runs(dir: &std::path::Path, by_cache: bool) -> (Db, usize) {
    let options = Options {
        lsbm_range_by_cache: by_cache,
        block_cache_size: 64 << 20,
        lsbm_superfile_tables: 1,
        ..options()
    };
    let db = Db::open(dir, options).unwrap();
    fill(&db, 'a', 0..2500);
    for round in 0..12 {
        let prefix = if round % 2 == 0 { 'z' } else { 'y' };
        fill(&db, prefix, round * 1000..round * 1000 + 800);
        let version = db.inner().default.super_version().version.clone();
        let level = (1..version.levels.len())
            .find(|&l| version.levels[l].buffer.len() >= 2 && version.range_plan(l).is_some());
        if let Some(level) = level {
            return (db, level);
        }
    }
    panic!("no level gathered two buffer runs");
}

/// Block cache lookups of range reads of 100 over the `a` keys.
fn scan_a(db: &Db) -> u64 {
    let lookups = |s: &Stats| s.block_cache_hits + s.block_cache_misses;
    let before = lookups(&db.stats());
    for start in (0..2500).step_by(100) {
        let from = format!("a{start:07}");
        let n = db.range(from.as_str()..).unwrap().take(100).count();
        assert_eq!(n, 100);
    }
    lookups(&db.stats()) - before
}

/// Reads every table of `level`'s own run into the block cache.
fn warm_level(db: &Db, level: usize) {
    use crate::iterator::InternalIterator;
    let version = db.inner().default.super_version().version.clone();
    let tables = version.levels[level].runs[0].tables.clone();
    let mut it =
        crate::version::run_iter::RunIterator::new(tables, db.inner().table_cache.clone(), true);
    it.seek_to_first();
    while it.valid() {
        it.next();
    }
    it.status().unwrap();
}

#[test]
fn a_range_read_takes_the_levels_cached_run_instead_of_merging_the_buffer_runs() {
    let dir = tempfile::tempdir().unwrap();
    let (db, level) = two_buffer_runs(dir.path(), true);
    // Nothing cached: the buffer serves (as the paper's Algorithm 4).
    scan_a(&db);
    let s = db.stats();
    assert!(s.buffer_range_reads_per_level[level] > 0, "L{level} {s:?}");
    // With the level's own run cached, one sorted run serves each query
    // instead of a merge of the buffer runs (once the shares the first
    // scan counted are too old to go by).
    warm_level(&db, level);
    std::thread::sleep(crate::version::piece_iter::SHARE_MAX_AGE * 2);
    let before = db.stats();
    let lookups = scan_a(&db);
    let s = db.stats();
    assert!(
        s.level_range_reads_per_level[level] > before.level_range_reads_per_level[level],
        "L{level} {s:?}"
    );
    assert_eq!(
        s.buffer_range_reads_per_level[level], before.buffer_range_reads_per_level[level],
        "L{level} {s:?}"
    );
    // Without the choice every query merges the buffer runs, each with
    // its own seek: more block lookups for the same reads.
    let dir = tempfile::tempdir().unwrap();
    let (db, level) = two_buffer_runs(dir.path(), false);
    scan_a(&db);
    warm_level(&db, level);
    std::thread::sleep(crate::version::piece_iter::SHARE_MAX_AGE * 2);
    let before = db.stats();
    let merged = scan_a(&db);
    let s = db.stats();
    assert!(
        s.buffer_range_reads_per_level[level] > before.buffer_range_reads_per_level[level],
        "L{level} {s:?}"
    );
    assert_eq!(s.level_range_reads_per_level[level], 0, "L{level} {s:?}");
    assert!(
        lookups < merged,
        "{lookups} block lookups reading the level's run, {merged} merging its buffer runs"
    );
}
