//! `durability=async` (YoDB §3.5): checkpoints, recovery to the last one
//! through incarnations (no log read at open), and the incarnations
//! running out.

use std::path::Path;
use std::sync::Arc;

use super::checkpoint_mark::CheckpointMark;
use super::incarnations::Incarnations;
use super::tests::tiny_uncached;
use crate::db::{Db, WriteOptions};
use crate::io::fault::{FaultFs, FaultKind};
use crate::options::{Durability, Options};

/// `tiny_uncached` in the asynchronous mode, checkpointing only when told
/// (`flush`, a sync write) unless `interval_ms` is small.
fn async_options(interval_ms: u64) -> Options {
    Options {
        durability: Durability::Async,
        checkpoint_interval: interval_ms,
        ..tiny_uncached()
    }
}

fn key(i: u64) -> Vec<u8> {
    format!("key{:06}", i % 400).into_bytes()
}

fn open(fs: &FaultFs, options: &Options) -> Db {
    Db::open_with_fs(Path::new("/store"), options.clone(), Arc::new(fs.clone())).unwrap()
}

/// Where odd write `i` puts `i` besides `key(i)`: another chunk (a
/// cross-chunk batch, logged in the batch log too, between single-chunk
/// writes).
fn mirror(i: u64) -> Option<Vec<u8>> {
    (i % 2 == 1).then(|| [b"m".as_slice(), &key(i)].concat())
}

/// Write `i`: `i` under `key(i)` (and `mirror(i)`), atomically.
fn write(db: &Db, i: u64) {
    let mut batch = crate::db::WriteBatch::new();
    batch.put(key(i), i.to_string()).unwrap();
    if let Some(m) = mirror(i) {
        batch.put(m, i.to_string()).unwrap();
    }
    db.write(batch).unwrap();
}

/// The values by key after the first `n` writes.
fn expected_after(n: u64) -> std::collections::BTreeMap<Vec<u8>, u64> {
    (0..n)
        .flat_map(|i| std::iter::once((key(i), i)).chain(mirror(i).map(|m| (m, i))))
        .collect()
}

/// The store's values, parsed.
fn state(db: &Db) -> std::collections::BTreeMap<Vec<u8>, u64> {
    crate::db::tests::scan(db, Default::default())
        .into_iter()
        .map(|(k, v)| (k, String::from_utf8(v).unwrap().parse().unwrap()))
        .collect()
}

/// The number of writes whose prefix `got` is, if it is one; searched
/// from `at_least`.
fn prefix_length(
    got: &std::collections::BTreeMap<Vec<u8>, u64>,
    at_least: u64,
    written: u64,
) -> Option<u64> {
    (at_least..=written).find(|&n| expected_after(n) == *got)
}

/// Power losses and process crashes at many points, with checkpoints in
/// between: every recovery holds a prefix of the writes that includes
/// everything the last completed checkpoint covered. Twenty cycles with the paper's four
/// bits run through the incarnations into the ones where none is left
/// (the logs are then cut instead).
#[test]
fn power_losses_in_async_mode_keep_a_prefix_through_the_last_checkpoint() {
    let fs = FaultFs::new();
    let options = Options {
        incarnation_bits: 2,
        ..async_options(3)
    };
    let mut written = 0u64;
    let mut durable = 0u64;
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    for cycle in 0..12 {
        let db = open(&fs, &options);
        let got = state(&db);
        let kept = prefix_length(&got, durable, written).unwrap_or_else(|| {
            panic!("cycle {cycle}: no prefix of {written} writes at least {durable}")
        });
        written = kept;
        durable = kept;
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        let burst = 200 + rng % 800;
        for _ in 0..burst {
            write(&db, written);
            written += 1;
            if written.is_multiple_of(97) {
                db.flush().unwrap();
                durable = written;
            }
        }
        // A process crash keeps everything written, batch log included:
        // recovery must still go back to the checkpoint.
        match cycle % 2 {
            0 => fs.drop_unsynced(),
            _ => fs.crash_process(),
        }
        drop(db);
    }
    let incarnations = Incarnations::read(&fs, Path::new("/store"))
        .unwrap()
        .unwrap();
    // Two bits: three recoveries started incarnations, the later ones cut.
    assert_eq!(incarnations.current(), 3);
}

/// Writes after the last checkpoint are ignored after a crash even when
/// every byte of them reached the disk.
#[test]
fn writes_past_the_checkpoint_are_ignored_even_when_on_disk() {
    let fs = FaultFs::new();
    let options = async_options(3_600_000);
    let db = open(&fs, &options);
    db.put("before", "1").unwrap();
    db.flush().unwrap();
    db.put("after", "2").unwrap();
    db.put("before", "3").unwrap();
    // A process crash: everything written is in the "page cache".
    fs.crash_process();
    drop(db);
    let db = open(&fs, &options);
    assert_eq!(db.get("before").unwrap().unwrap(), b"1");
    assert_eq!(db.get("after").unwrap(), None);
    // The new incarnation's writes count, and survive the next crash once
    // checkpointed.
    db.put("after", "4").unwrap();
    db.flush().unwrap();
    fs.drop_unsynced();
    drop(db);
    let db = open(&fs, &options);
    assert_eq!(db.get("after").unwrap().unwrap(), b"4");
    assert_eq!(db.get("before").unwrap().unwrap(), b"1");
}

/// A write with `WriteOptions::sync` returns once a checkpoint covers it.
#[test]
fn a_sync_write_in_async_mode_is_durable_when_it_returns() {
    let fs = FaultFs::new();
    let options = async_options(3_600_000);
    let db = open(&fs, &options);
    db.put("plain", "1").unwrap();
    db.put_opt("synced", "2", WriteOptions { sync: true })
        .unwrap();
    fs.drop_unsynced();
    drop(db);
    let db = open(&fs, &options);
    assert_eq!(db.get("plain").unwrap().unwrap(), b"1");
    assert_eq!(db.get("synced").unwrap().unwrap(), b"2");
}

/// The background checkpointer makes writes durable without being asked.
#[test]
fn the_checkpointer_runs_every_interval() {
    let fs = FaultFs::new();
    let options = async_options(5);
    let db = open(&fs, &options);
    db.put("k", "v").unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while db.stats().chunk_checkpoints == 0 {
        assert!(std::time::Instant::now() < deadline, "no checkpoint");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let mark = CheckpointMark::read(&fs, Path::new("/store"))
        .unwrap()
        .unwrap();
    assert!(mark.sequence >= 1);
    fs.drop_unsynced();
    drop(db);
    assert_eq!(open(&fs, &options).get("k").unwrap().unwrap(), b"v");
}

/// A checkpoint cut short at any step (an I/O error, then a power loss)
/// leaves the previous one in force: the store recovers to a prefix that
/// holds at least what it covered.
#[test]
fn a_checkpoint_interrupted_at_any_step_leaves_the_previous_one() {
    let mut outcomes = std::collections::BTreeSet::new();
    for ops in 0..40 {
        let fs = FaultFs::new();
        // No funk build (one may take a checkpoint of its own) in between.
        let options = Options {
            funk_log_limit: 1 << 20,
            funk_log_limit_with_munk: 1 << 20,
            ..async_options(3_600_000)
        };
        let db = open(&fs, &options);
        for i in 0..300u64 {
            write(&db, i);
        }
        db.flush().unwrap();
        for i in 300..600u64 {
            write(&db, i);
        }
        fs.fail_after_ops(ops, FaultKind::Io);
        let completed = db.flush().is_ok();
        fs.drop_unsynced();
        fs.clear_faults();
        drop(db);
        let db = open(&fs, &options);
        let got = state(&db);
        let at_least = if completed { 600 } else { 300 };
        let kept = prefix_length(&got, at_least, 600)
            .unwrap_or_else(|| panic!("ops {ops}: no prefix of at least {at_least}"));
        outcomes.insert(kept);
    }
    assert!(
        outcomes.contains(&300) && outcomes.contains(&600),
        "{outcomes:?}"
    );
}

/// A store can switch modes between opens: an asynchronous crash is
/// recovered by a synchronous open too, and a synchronous crash after it
/// still ignores the old incarnation's unsaved writes.
#[test]
fn modes_switch_between_opens() {
    let fs = FaultFs::new();
    let db = open(&fs, &async_options(3_600_000));
    db.put("a", "1").unwrap();
    db.flush().unwrap();
    db.put("a", "lost").unwrap();
    fs.crash_process();
    drop(db);
    let sync = tiny_uncached();
    let db = open(&fs, &sync);
    assert_eq!(db.get("a").unwrap().unwrap(), b"1");
    db.put_opt("b", "2", WriteOptions { sync: true }).unwrap();
    fs.crash_process();
    drop(db);
    let db = open(&fs, &sync);
    assert_eq!(db.get("a").unwrap().unwrap(), b"1");
    assert_eq!(db.get("b").unwrap().unwrap(), b"2");
    drop(db);
    let db = open(&fs, &async_options(3_600_000));
    assert_eq!(db.get("a").unwrap().unwrap(), b"1");
    db.close().unwrap();
}

/// A checkpoint copy of a store recovered from an asynchronous crash
/// keeps ignoring the old incarnation's unsaved writes its logs still hold.
/// (On the real file system: the "crash" is a copy of the live store's
/// files, what a killed process leaves.)
#[test]
fn a_copy_ignores_what_its_source_ignores() {
    let root = tempfile::tempdir().unwrap();
    let (live, crashed) = (root.path().join("live"), root.path().join("crashed"));
    let options = async_options(3_600_000);
    let db = Db::open(&live, options.clone()).unwrap();
    db.put("k", "saved").unwrap();
    db.flush().unwrap();
    db.put("k", "unsaved").unwrap();
    std::fs::create_dir(&crashed).unwrap();
    for entry in std::fs::read_dir(&live).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, crashed.join(path.file_name().unwrap())).unwrap();
    }
    db.close().unwrap();
    let db = Db::open(&crashed, options.clone()).unwrap();
    assert_eq!(db.get("k").unwrap().unwrap(), b"saved");
    let copy = root.path().join("copy");
    db.checkpoint(&copy).unwrap();
    db.close().unwrap();
    let copy = Db::open(&copy, options).unwrap();
    assert_eq!(copy.get("k").unwrap().unwrap(), b"saved");
    copy.close().unwrap();
}

/// A funk build merges the writes up to the last checkpoint and copies
/// the rest into the new log, taking no checkpoint of its own (one syncs
/// every dirty log of the store): power losses and process crashes after
/// such builds still recover a prefix through the last checkpoint.
#[test]
fn builds_merge_through_the_last_checkpoint_without_taking_one() {
    let fs = FaultFs::new();
    let options = Options {
        chunk_rebalance_threads: 0,
        ..async_options(3_600_000)
    };
    let mut written = 0u64;
    let mut durable = 0u64;
    for cycle in 0..6 {
        let db = open(&fs, &options);
        let got = state(&db);
        let kept = prefix_length(&got, durable, written).unwrap_or_else(|| {
            panic!("cycle {cycle}: no prefix of {written} writes at least {durable}")
        });
        written = kept;
        durable = kept;
        let before = db.stats();
        let mut flushes = 0;
        for _ in 0..600 {
            write(&db, written);
            written += 1;
            // Few writes past a checkpoint: no build needs one.
            if written.is_multiple_of(10) {
                db.flush().unwrap();
                durable = written;
                flushes += 1;
            }
        }
        // Writes past the last checkpoint, some copied by builds into new
        // logs, then lost or kept on disk.
        for _ in 0..7 {
            write(&db, written);
            written += 1;
        }
        let after = db.stats();
        assert!(after.chunk_funk_rebalances > before.chunk_funk_rebalances);
        assert_eq!(
            after.chunk_checkpoints - before.chunk_checkpoints,
            flushes,
            "cycle {cycle}: a build took a checkpoint"
        );
        match cycle % 2 {
            0 => fs.drop_unsynced(),
            _ => fs.crash_process(),
        }
        drop(db);
    }
}

/// A chunk written faster than checkpoints come is built all the same:
/// its build merges the writes past the last checkpoint into the table
/// (the paper's funks), taking no checkpoint, and after a crash every
/// read of a table (get, scan, munk load, the next build) ignores them,
/// range tombstones too, as the recovery table says.
#[test]
fn builds_merge_writes_past_the_checkpoint_which_a_crash_takes_back() {
    for (name, munks) in [("uncached", 0), ("munks", 256 << 10)] {
        let fs = FaultFs::new();
        let options = Options {
            chunk_rebalance_threads: 0,
            munk_cache_bytes: munks,
            ..async_options(3_600_000)
        };
        let db = open(&fs, &options);
        db.put("k1", "checkpointed").unwrap();
        db.flush().unwrap();
        db.delete_range("k0", "k9").unwrap();
        for i in 0..600 {
            write(&db, i);
        }
        let stats = db.stats();
        assert!(stats.chunk_funk_rebalances > 0, "{name}");
        assert_eq!(stats.chunk_checkpoints, 1, "{name}: a build checkpointed");
        let store = super::tests::store(&db);
        let in_tables: u64 = store.every_chunk().iter().map(|c| c.table_length()).sum();
        let in_logs: u64 = store.every_chunk().iter().map(|c| c.log.len()).sum();
        assert!(in_tables > 2 * in_logs, "{name}: {in_tables} {in_logs}");
        let first = store.every_chunk()[0].table_range_deletions().unwrap();
        assert!(
            first.is_some_and(|t| !t.is_empty()),
            "{name}: no tombstone in a table"
        );
        // Everything written is on disk, most of it in tables.
        fs.crash_process();
        drop(db);
        let db = open(&fs, &options);
        let only_k1 =
            std::collections::BTreeMap::from([(b"k1".to_vec(), b"checkpointed".to_vec())]);
        let scanned: std::collections::BTreeMap<Vec<u8>, Vec<u8>> =
            crate::db::tests::scan(&db, Default::default())
                .into_iter()
                .collect();
        assert_eq!(scanned, only_k1, "{name}: scan");
        for i in 0..400 {
            assert_eq!(db.get(key(i)).unwrap(), None, "{name}: get {i}");
        }
        assert_eq!(db.get("k1").unwrap().unwrap(), b"checkpointed", "{name}");
        // The next builds and munk loads read the tables the same way.
        for i in 0..600 {
            db.put(format!("n{:04}", i % 300), "new").unwrap();
        }
        db.compact_range(None, None).unwrap();
        let scanned: Vec<(Vec<u8>, Vec<u8>)> = crate::db::tests::scan(&db, Default::default());
        assert_eq!(scanned.len(), 301, "{name}");
        assert_eq!(db.get("k1").unwrap().unwrap(), b"checkpointed", "{name}");
        assert_eq!(db.get(key(5)).unwrap(), None, "{name}");
    }
}

/// A build keeps each key's checkpointed version below its newer ones
/// for a crash's sake only: those do not count toward a split. A chunk
/// whose keys were all overwritten since the last checkpoint holds twice
/// its data in its table until a build after the next checkpoint, and
/// stays one chunk; a crash still returns to the checkpoint. (Counted,
/// they doubled the chunks of the 1x P run: `docs/reproduction.md`.)
#[test]
fn versions_kept_for_a_crash_do_not_split_a_chunk() {
    for (name, munks) in [("uncached", 0), ("munks", 256 << 10)] {
        let fs = FaultFs::new();
        let options = Options {
            chunk_rebalance_threads: 0,
            munk_cache_bytes: munks,
            chunk_size: 16 << 10,
            ..async_options(3_600_000)
        };
        let db = open(&fs, &options);
        let key = |i: u32| format!("key{i:03}");
        let value = |tag: &str, i: u32| format!("{tag}{i:03}{}", "x".repeat(100));
        // About 12 KiB of keys and values: one chunk, twice that two.
        for i in 0..100 {
            db.put(key(i), value("old", i)).unwrap();
        }
        db.flush().unwrap();
        // Builds (logs past 2 KiB) merge the new versions beside the
        // checkpointed ones (`compact_range` would checkpoint them).
        for i in 0..100 {
            db.put(key(i), value("new", i)).unwrap();
        }
        let stats = db.stats();
        assert_eq!(stats.chunk_checkpoints, 1, "{name}");
        assert!(stats.chunk_funk_rebalances > 0, "{name}");
        assert_eq!(stats.chunk_splits, 0, "{name}");
        assert_eq!(stats.chunks, 1, "{name}");
        for i in 0..100 {
            assert_eq!(db.get(key(i)).unwrap().unwrap(), value("new", i).as_bytes());
        }
        fs.crash_process();
        drop(db);
        let db = open(&fs, &options);
        for i in 0..100 {
            let got = db.get(key(i)).unwrap();
            assert_eq!(got.unwrap(), value("old", i).as_bytes(), "{name}: {i}");
        }
    }
}
