//! TRIAD-LOG through the public API, on the real file system: log tables
//! for every value size, the logs' lifetime, recovery and repair.

use crate::db::*;
use crate::iterator::InternalIterator;
use crate::options::Options;
use crate::version::files::log_path;

fn key(i: u32) -> Vec<u8> {
    format!("key{i:08}").into_bytes()
}

fn log_options() -> Options {
    Options {
        write_buffer_size: 1 << 20,
        triad_log: true,
        disable_auto_compactions: true,
        ..Options::default()
    }
}

/// Every table of the current version, with its level.
fn tables(db: &Db) -> Vec<(usize, Arc<crate::version::TableMeta>)> {
    let sv = db.inner().default.super_version();
    sv.version
        .levels
        .iter()
        .enumerate()
        .flat_map(|(l, level)| {
            level
                .runs
                .iter()
                .flat_map(move |r| r.tables.iter().map(move |t| (l, t.clone())))
        })
        .collect()
}

/// The tables of the closed store in `dir`.
fn tables_of(dir: &std::path::Path) -> Vec<Arc<crate::version::TableMeta>> {
    let db = Db::open(dir, log_options()).unwrap();
    let all = tables(&db).into_iter().map(|(_, t)| t).collect();
    db.close().unwrap();
    all
}

fn logs_referenced(db: &Db) -> Vec<u64> {
    let mut logs: Vec<u64> = tables(db)
        .iter()
        .flat_map(|(_, t)| t.logs.clone())
        .collect();
    logs.sort_unstable();
    logs.dedup();
    logs
}

#[test]
fn log_tables_read_every_value_size_without_copying_values() {
    let dir = tempfile::tempdir().unwrap();
    let small = b"small".to_vec();
    // Spans several 32 KiB log blocks, so several fragments.
    let multi_block: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
    let largest: Vec<u8> = (0..MAX_VALUE_SIZE as u32)
        .map(|i| (i % 253) as u8)
        .collect();
    let expect = [
        (key(1), small.clone()),
        (key(2), multi_block.clone()),
        (key(3), largest.clone()),
        (key(4), Vec::new()),
    ];
    {
        let db = Db::open(dir.path(), log_options()).unwrap();
        for (k, v) in &expect {
            db.put(k, v).unwrap();
        }
        db.put(key(5), b"deleted").unwrap();
        db.delete(key(5)).unwrap();
        db.flush().unwrap();
        let all = tables(&db);
        assert!(!all.is_empty());
        assert!(all.iter().all(|(l, t)| *l == 0 && t.is_log_table()));
        let s = db.stats();
        assert!(
            s.flush_bytes_written < 64 << 10,
            "a log table holds addresses, not values: {} bytes",
            s.flush_bytes_written
        );
        assert_eq!(s.log_table_bytes, s.flush_bytes_written);
        for (k, v) in &expect {
            assert_eq!(db.get(k).unwrap().as_ref(), Some(v));
        }
        assert_eq!(db.get(key(5)).unwrap(), None);
        let mut it = db.iter(ReadOptions::default()).unwrap();
        it.seek_to_first();
        for (k, v) in &expect {
            assert!(it.valid());
            assert_eq!((it.key(), it.value()), (k.as_slice(), v.as_slice()));
            it.next();
        }
        assert!(!it.valid());
        it.status().unwrap();
        db.close().unwrap();
    }
    let db = Db::open(dir.path(), log_options()).unwrap();
    for (k, v) in &expect {
        assert_eq!(db.get(k).unwrap().as_ref(), Some(v));
    }
    let log_tables = tables(&db).len();
    db.close().unwrap();
    let report = crate::db::check::check_store(dir.path()).unwrap();
    assert_eq!(
        report.log_tables, log_tables,
        "check reads log tables' values"
    );
    let mut puts = 0;
    for table in tables_of(dir.path()) {
        let dump = crate::db::dump::table(dir.path(), table.segment, table.offset).unwrap();
        assert_eq!(dump.properties.log_refs, table.logs);
        puts += dump.log_addresses.iter().filter(|a| a.is_some()).count();
    }
    assert_eq!(puts, expect.len(), "dump shows each put's address");
}

#[test]
fn a_log_lives_exactly_as_long_as_a_log_table_references_it() {
    let dir = tempfile::tempdir().unwrap();
    let exists = |log: u64| dir.path().join(log_path(dir.path(), log)).exists();
    let referenced;
    {
        let db = Db::open(dir.path(), log_options()).unwrap();
        for i in 0..2000 {
            db.put(key(i), format!("first{i}")).unwrap();
        }
        db.flush().unwrap();
        for i in 1000..3000 {
            db.put(key(i), format!("second{i}")).unwrap();
        }
        db.flush().unwrap();
        referenced = logs_referenced(&db);
        assert_eq!(referenced.len(), 2, "one log per flushed memtable");
        assert!(referenced.iter().all(|&l| exists(l)), "flushed logs stay");
        let log_bytes: u64 = referenced
            .iter()
            .map(|&l| {
                let path = log_path(dir.path(), l);
                crate::io::FileSystem::allocated_size(&crate::io::PosixFs, &path).unwrap()
            })
            .sum();
        let space = db.space_usage().unwrap();
        assert!(
            space.disk_bytes > log_bytes,
            "the logs count in space amplification: {space:?}, logs {log_bytes}"
        );
        db.close().unwrap();
    }
    {
        let db = Db::open(dir.path(), log_options()).unwrap();
        assert!(referenced.iter().all(|&l| exists(l)), "kept across reopen");
        assert_eq!(logs_referenced(&db), referenced);
        assert_eq!(db.get(key(10)).unwrap(), Some(b"first10".to_vec()));
        assert_eq!(db.get(key(1500)).unwrap(), Some(b"second1500".to_vec()));
        db.compact_range(None, None).unwrap();
        assert!(tables(&db).iter().all(|(l, t)| *l > 0 && !t.is_log_table()));
        assert!(logs_referenced(&db).is_empty());
        assert!(
            referenced.iter().all(|&l| !exists(l)),
            "a log no live log table references is deleted"
        );
        assert_eq!(db.get(key(1500)).unwrap(), Some(b"second1500".to_vec()));
        db.close().unwrap();
    }
    let db = Db::open(dir.path(), log_options()).unwrap();
    assert_eq!(db.get(key(2999)).unwrap(), Some(b"second2999".to_vec()));
    assert_eq!(db.get(key(999)).unwrap(), Some(b"first999".to_vec()));
}

#[test]
fn recovery_turns_a_replayed_log_into_log_tables() {
    let dir = tempfile::tempdir().unwrap();
    let written_log;
    {
        let db = Db::open(dir.path(), log_options()).unwrap();
        for i in 0..500 {
            db.put(key(i), format!("v{i}")).unwrap();
        }
        written_log = db.inner().default.super_version().mem.log_number();
        // Not flushed: the next open replays the log.
        db.close().unwrap();
    }
    let db = Db::open(dir.path(), log_options()).unwrap();
    let all = tables(&db);
    assert!(!all.is_empty() && all.iter().all(|(_, t)| t.logs == [written_log]));
    assert!(
        db.stats().flush_bytes_written < 32 << 10,
        "values were not rewritten"
    );
    assert!(dir.path().join(log_path(dir.path(), written_log)).exists());
    assert_eq!(db.get(key(499)).unwrap(), Some(b"v499".to_vec()));
    db.close().unwrap();
    // A second reopen replays nothing more: still the same log tables.
    let db = Db::open(dir.path(), log_options()).unwrap();
    assert_eq!(tables(&db).len(), all.len());
    assert_eq!(db.get(key(0)).unwrap(), Some(b"v0".to_vec()));
}

#[test]
fn hot_keys_kept_in_memory_are_left_out_of_the_log_table() {
    let dir = tempfile::tempdir().unwrap();
    let options = Options {
        triad_mem: true,
        triad_hot_fraction: 0.01,
        ..log_options()
    };
    let db = Db::open(dir.path(), options).unwrap();
    for round in 0..50 {
        db.put(b"hot", format!("h{round}")).unwrap();
        for i in 0..20 {
            db.put(key(round * 20 + i), b"cold").unwrap();
        }
    }
    db.flush().unwrap();
    assert!(db.stats().hot_entries_kept >= 1);
    let all = tables(&db);
    assert!(all.iter().all(|(_, t)| t.is_log_table()));
    for (_, meta) in &all {
        let table = db.inner().table_cache.table(meta).unwrap();
        let mut it = table.iter();
        it.seek_to_first();
        while it.valid() {
            assert_ne!(crate::format::internal_key::user_key(it.key()), b"hot");
            it.next();
        }
        it.status().unwrap();
    }
    assert_eq!(db.get(b"hot").unwrap(), Some(b"h49".to_vec()));
    assert_eq!(db.get(key(999)).unwrap(), Some(b"cold".to_vec()));
}

#[test]
fn live_bytes_count_only_the_newest_puts_a_log_table_addresses() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), log_options()).unwrap();
    for i in 0..100 {
        db.put(key(i), b"v1").unwrap();
    }
    for i in 0..50 {
        db.put(key(i), b"value2").unwrap();
    }
    db.delete(key(99)).unwrap();
    db.flush().unwrap();
    let s = db.stats();
    assert!(s.log_table_bytes > 0);
    // 11-byte keys: 50 rewritten to 6 bytes, 49 left at 2, one deleted;
    // the shadowed versions and the tombstone reach L0 as no live value.
    assert_eq!(s.log_table_live_bytes, 50 * (11 + 6) + 49 * (11 + 2));
    assert!(s.log_table_data_bytes > s.log_table_live_bytes);
}

#[test]
fn the_log_cache_comes_out_of_the_block_cache_budget() {
    let dir = tempfile::tempdir().unwrap();
    let budget = |block_cache_size: u64, triad_log_cache_size: u64| {
        let options = Options {
            block_cache_size,
            triad_log_cache_size,
            ..log_options()
        };
        let db = Db::open(dir.path(), options).unwrap();
        let cache = &db.inner().table_cache;
        let split = (
            cache.block_cache().capacity(),
            cache.logs().cache_capacity(),
        );
        db.close().unwrap();
        split
    };
    // At most half of the budget goes to log blocks, and never more than
    // the block cache gives up.
    assert_eq!(budget(8 << 20, 16 << 20), (4 << 20, 4 << 20));
    assert_eq!(budget(64 << 20, 16 << 20), (48 << 20, 16 << 20));
}

#[test]
fn lsbm_and_triad_log_are_refused_together() {
    let options = Options {
        lsbm_buffer: true,
        triad_log: true,
        ..Options::default()
    };
    let err = options.validate().unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(ref m) if m.contains("lsbm_buffer")));
}

#[test]
fn repair_keeps_log_tables_and_their_logs() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Db::open(dir.path(), log_options()).unwrap();
        for i in 0..1000 {
            db.put(key(i), format!("old{i}")).unwrap();
        }
        db.flush().unwrap();
        db.compact_range(None, None).unwrap();
        for i in 0..500 {
            db.put(key(i), format!("new{i}")).unwrap();
        }
        db.flush().unwrap();
        db.close().unwrap();
    }
    let logs_before: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".log"))
        .collect();
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if name.starts_with("MANIFEST") || name == "CURRENT" {
            std::fs::remove_file(dir.path().join(name)).unwrap();
        }
    }
    let report = crate::db::repair(dir.path(), &log_options()).unwrap();
    assert!(report.dropped.is_empty(), "{report}");
    let db = Db::open(dir.path(), log_options()).unwrap();
    assert_eq!(logs_referenced(&db).len(), 1, "the log table is kept");
    let log_tables = tables(&db).iter().filter(|(_, t)| t.is_log_table()).count();
    assert_eq!(log_tables, 1, "its log is not replayed into a second copy");
    // The log table's log is not replayed above the compacted data, nor
    // the older versions below it shadowing the newer.
    assert_eq!(db.get(key(10)).unwrap(), Some(b"new10".to_vec()));
    assert_eq!(db.get(key(700)).unwrap(), Some(b"old700".to_vec()));
    for name in logs_before {
        let n: u64 = name.trim_end_matches(".log").parse().unwrap();
        if logs_referenced(&db).contains(&n) {
            assert!(dir.path().join(&name).exists());
        }
    }
    // Nothing was replayed twice: the tables merge cleanly.
    db.compact_range(None, None).unwrap();
    assert_eq!(db.get(key(10)).unwrap(), Some(b"new10".to_vec()));
    assert!(logs_referenced(&db).is_empty());
}

/// A memtable's range tombstones go into the log table its flush writes
/// (its range-deletion block), and hide the older versions they cover in
/// log tables and regular tables alike, across reopen and compaction.
#[test]
fn a_log_table_carries_the_memtables_range_tombstones() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Db::open(dir.path(), log_options()).unwrap();
        for i in 0..100 {
            db.put(key(i), b"first").unwrap();
        }
        db.flush().unwrap();
        db.delete_range(key(10), key(20)).unwrap();
        db.put(key(15), b"after the tombstone").unwrap();
        db.flush().unwrap();
        let newest = tables(&db)
            .into_iter()
            .map(|(_, t)| t)
            .max_by_key(|t| t.max_seq)
            .unwrap();
        assert!(newest.is_log_table());
        let table = db.inner().table_cache.table(&newest).unwrap();
        assert!(
            table.range_deletions().find(&key(12)).is_some(),
            "the log table holds the tombstone"
        );
        db.close().unwrap();
    }
    let db = Db::open(dir.path(), log_options()).unwrap();
    let check = |db: &Db| {
        assert_eq!(db.get(key(9)).unwrap(), Some(b"first".to_vec()));
        assert_eq!(db.get(key(12)).unwrap(), None);
        assert_eq!(
            db.get(key(15)).unwrap(),
            Some(b"after the tombstone".to_vec())
        );
        assert_eq!(db.get(key(20)).unwrap(), Some(b"first".to_vec()));
    };
    check(&db);
    db.compact_range(None, None).unwrap();
    assert!(logs_referenced(&db).is_empty());
    check(&db);
}

/// A compaction reads log tables' values in batches sorted by their place
/// in the logs (`triad_log_compaction_batch`): with batches of a tenth of
/// a table, keys written out of order over several logs, and values of
/// several sizes (some spanning log blocks), every merged value is right.
#[test]
fn a_compaction_reads_log_values_in_small_batches_correctly() {
    let dir = tempfile::tempdir().unwrap();
    let options = Options {
        triad_log_compaction_batch: 20_000,
        triad_log_cache_size: 0,
        ..log_options()
    };
    let value = |i: u32, round: u32| {
        let len = match i % 97 {
            0 => 40_000,
            n => 10 + n as usize * 3,
        };
        vec![(i.wrapping_mul(31) + round) as u8; len]
    };
    let db = Db::open(dir.path(), options.clone()).unwrap();
    for round in 0..3u32 {
        // A stride coprime with 2000: keys out of order in each log.
        for n in 0..2000u32 {
            let i = (n * 617 + round * 11) % 2000;
            if (i + round) % 3 != 0 {
                db.put(key(i), value(i, round)).unwrap();
            }
        }
        db.flush().unwrap();
    }
    assert!(tables(&db).iter().filter(|(_, t)| t.is_log_table()).count() >= 3);
    db.compact_range(None, None).unwrap();
    assert!(tables(&db).iter().all(|(_, t)| !t.is_log_table()));
    let s = db.stats();
    // Every value the merge keeps (each key's newest: 2,000 of the 4,000
    // puts) went through a batch, none of the others; a batch of 20 KB is
    // about 130 values spread over a log of about 1 MB: a span read
    // serves many of them rather than one read each.
    assert_eq!((s.log_batch_values, s.log_values_shadowed), (2000, 2000));
    assert!(
        s.log_batch_reads * 2 < s.log_batch_values,
        "{} reads for {} values",
        s.log_batch_reads,
        s.log_batch_values
    );
    for i in 0..2000u32 {
        let newest = (0..3u32).rev().find(|r| (i + r) % 3 != 0).unwrap();
        assert_eq!(db.get(key(i)).unwrap(), Some(value(i, newest)), "key {i}");
    }
}

/// A compaction reads each input log once (`version/log_prefetch.rs`),
/// whatever the budget: under a budget smaller than one table's values the
/// rest is spilled to a scratch file, which is gone once the merge is.
/// Before, each log table's values were read in batches of the budget
/// shared by the tables, each batch reading every block of its log: here
/// a 64 KiB budget over six tables read each 1 MiB log about 40 times.
#[test]
fn a_compaction_reads_each_input_log_once_and_spills_past_its_budget() {
    for budget in [64u64 << 10, 64 << 20] {
        let dir = tempfile::tempdir().unwrap();
        let options = Options {
            triad_log_compaction_batch: budget,
            triad_log_cache_size: 0,
            ..log_options()
        };
        let value = |i: u32, round: u32| {
            let len = match i % 89 {
                0 => 20_000,
                n => 200 + n as usize,
            };
            vec![(i.wrapping_mul(7) + round) as u8; len]
        };
        let db = Db::open(dir.path(), options.clone()).unwrap();
        for round in 0..6u32 {
            // A stride coprime with 3000: keys out of order in each log.
            for n in 0..3000u32 {
                let i = (n * 1_009 + round * 13) % 3000;
                if (i + round) % 4 != 0 {
                    db.put(key(i), value(i, round)).unwrap();
                }
            }
            db.flush().unwrap();
        }
        let logs = logs_referenced(&db);
        assert!(logs.len() >= 6, "{logs:?}");
        let log_bytes: u64 = logs
            .iter()
            .map(|&n| std::fs::metadata(log_path(dir.path(), n)).unwrap().len())
            .sum();
        let max_reads: u64 = logs
            .iter()
            .map(|&n| {
                let len = std::fs::metadata(log_path(dir.path(), n)).unwrap().len();
                len.div_ceil(1 << 20) + 1
            })
            .sum();
        let live = db.stats().log_table_live_bytes;
        db.compact_range(None, None).unwrap();
        assert!(tables(&db).iter().all(|(_, t)| !t.is_log_table()));
        let s = db.stats();
        assert!(
            s.log_batch_read_bytes <= log_bytes,
            "budget {budget}: read {} bytes of {log_bytes} bytes of logs",
            s.log_batch_read_bytes
        );
        assert!(
            s.log_batch_reads <= max_reads,
            "budget {budget}: {} span reads, at most {max_reads}",
            s.log_batch_reads
        );
        if budget < 1 << 20 {
            assert!(
                s.log_spill_bytes > 0 && s.log_spill_bytes < live,
                "budget {budget}: spilled {} of {live}",
                s.log_spill_bytes
            );
        } else {
            assert_eq!(s.log_spill_bytes, 0, "budget {budget}");
        }
        let scratch: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|name| name.ends_with(".tmp"))
            .collect();
        assert!(scratch.is_empty(), "scratch files left: {scratch:?}");
        for i in 0..3000u32 {
            let newest = (0..6u32).rev().find(|r| (i + r) % 4 != 0).unwrap();
            assert_eq!(db.get(key(i)).unwrap(), Some(value(i, newest)), "key {i}");
        }
    }
}

/// A compaction's log pass reads no value the merge drops: a put whose
/// key has a newer version in the compaction, visible to every snapshot,
/// is left unread. A version a snapshot still reads is read.
#[test]
fn a_compaction_reads_no_value_the_merge_drops() {
    let dir = tempfile::tempdir().unwrap();
    let options = Options {
        triad_log_cache_size: 0,
        ..log_options()
    };
    let db = Db::open(dir.path(), options).unwrap();
    let value = |round: &str, i: u32| format!("{round}{i:0200}").into_bytes();
    let write = |round: &str, keys: std::ops::Range<u32>| {
        for i in keys {
            db.put(key(i), value(round, i)).unwrap();
        }
    };
    write("a", 0..1000);
    db.flush().unwrap();
    let snapshot = db.snapshot();
    write("b", 0..500);
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    let s = db.stats();
    assert_eq!(s.log_values_shadowed, 0, "the snapshot reads every version");
    assert_eq!(s.log_batch_values, 1500);
    let at_snapshot = ReadOptions {
        snapshot: Some(snapshot),
        ..ReadOptions::default()
    };
    assert_eq!(
        db.get_opt(key(7), &at_snapshot).unwrap(),
        Some(value("a", 7))
    );
    drop(at_snapshot);
    write("c", 0..250);
    db.flush().unwrap();
    write("d", 0..100);
    for i in 200..250 {
        db.delete(key(i)).unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    let s = db.stats();
    assert_eq!(
        s.log_values_shadowed, 150,
        "c's 0..100 under d's puts, c's 200..250 under the deletions"
    );
    assert_eq!(s.log_batch_values, 1500 + 200);
    for i in 0..1000 {
        let expected = match i {
            0..100 => Some(value("d", i)),
            100..200 => Some(value("c", i)),
            200..250 => None,
            250..500 => Some(value("b", i)),
            _ => Some(value("a", i)),
        };
        assert_eq!(db.get(key(i)).unwrap(), expected, "key {i}");
    }
}
