//! The chunked layout through the `Db` API: splits and rebalances under
//! tiny limits, snapshots across them, recovery, cross-chunk batches.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::ChunkStore;
use crate::db::tests::{scan, scan_reverse};
use crate::db::{Db, Engine, ReadOptions, WriteBatch, WriteOptions};
use crate::io::fault::{FaultFs, FaultKind};
use crate::io::FileSystem;
use crate::options::{Layout, Options};

/// Options that split and rebalance constantly.
pub(crate) fn tiny() -> Options {
    Options {
        layout: Layout::Chunked,
        chunk_size: 8 << 10,
        funk_log_limit: 2 << 10,
        log_filter_parts: 4,
        block_size: 512,
        funk_log_limit_with_munk: 4 << 10,
        munk_cache_bytes: 32 << 10,
        row_cache_bytes: 4 << 10,
        ..Options::default()
    }
}

/// `tiny` without munks or row cache: every get reads the funks.
pub(crate) fn tiny_uncached() -> Options {
    let mut o = tiny();
    o.munk_cache_bytes = 0;
    o.row_cache_bytes = 0;
    o
}

/// The chunked store behind `db`.
pub(super) fn store(db: &Db) -> &ChunkStore {
    match &db.engine {
        Engine::Chunked(c) => &c.0,
        Engine::Lsm(_) => panic!("a chunked store"),
    }
}

/// Waits until `db`'s build threads have built every chunk queued.
pub(super) fn settle_builds(db: &Db) {
    store(db).builds.wait_idle();
}

/// `tiny` with the paper's array-list munks.
fn tiny_array_list() -> Options {
    Options {
        munk_array_list: true,
        ..tiny()
    }
}

/// `tiny` with writers building funk rebalances themselves.
fn tiny_inline_rebalance() -> Options {
    Options {
        chunk_rebalance_threads: 0,
        ..tiny()
    }
}

/// All four, with a name for failure messages.
fn configs() -> [(&'static str, Options); 4] {
    [
        ("cached", tiny()),
        ("uncached", tiny_uncached()),
        ("array-list munks", tiny_array_list()),
        ("inline rebalance", tiny_inline_rebalance()),
    ]
}

fn key(i: u64) -> Vec<u8> {
    format!("key{:06}", i * 7919 % 1000).into_bytes()
}

#[test]
fn puts_gets_and_scans_across_splits_match_a_model() {
    for (name, options) in configs() {
        puts_gets_and_scans_match_a_model(name, options);
    }
}

fn puts_gets_and_scans_match_a_model(name: &str, options: Options) {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options).unwrap();
    let mut model = BTreeMap::new();
    for i in 0..3000u64 {
        let k = key(i);
        if i % 7 == 3 {
            db.delete(&k).unwrap();
            model.remove(&k);
        } else {
            let v = format!("value-{i}-{}", "x".repeat((i % 50) as usize)).into_bytes();
            db.put(&k, &v).unwrap();
            model.insert(k, v);
        }
    }
    // The build threads done: which chunks are replaced while the hot
    // keys are read (and so which keep the munks the reads gave them)
    // must not depend on how far the builds lag behind the writer.
    settle_builds(&db);
    let stats = db.stats();
    assert!(stats.chunks > 4, "{name}: {} chunks", stats.chunks);
    assert!(stats.chunk_splits > 0 && stats.chunk_funk_rebalances > stats.chunk_splits);
    for round in 0..3 {
        for i in 0..1000u64 {
            let k = format!("key{i:06}").into_bytes();
            assert_eq!(
                db.get(&k).unwrap(),
                model.get(&k).cloned(),
                "{name} {round}: {k:?}"
            );
        }
    }
    // A few hot keys, read again and again.
    for _ in 0..5 {
        for i in 0..20u64 {
            let k = format!("key{i:06}").into_bytes();
            assert_eq!(db.get(&k).unwrap(), model.get(&k).cloned(), "{name}: {k:?}");
        }
    }
    let stats = db.stats();
    if name != "uncached" {
        assert!(
            stats.chunk_munk_loads > 0 && stats.chunk_munk_evictions > 0,
            "{name}: {stats:?}"
        );
        assert!(stats.chunk_gets_from_munk > 0, "{name}: {stats:?}");
    }
    if name == "uncached" {
        assert_eq!(
            stats.chunk_gets_from_munk + stats.chunk_gets_from_row_cache,
            0
        );
    }
    let want: Vec<_> = model.into_iter().collect();
    assert_eq!(scan(&db, ReadOptions::default()), want);
    // Backwards too.
    assert_eq!(scan_reverse(&db, ReadOptions::default()), want);
}

#[test]
fn a_snapshot_survives_rebalances_and_splits() {
    for (_, options) in configs() {
        a_snapshot_survives(options);
    }
}

fn a_snapshot_survives(options: Options) {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options).unwrap();
    for i in 0..500u64 {
        db.put(key(i), b"old").unwrap();
    }
    let snapshot = db.snapshot();
    let before = scan(&db, ReadOptions::default());
    let rebalances = db.stats().chunk_funk_rebalances;
    for i in 0..2000u64 {
        db.put(key(i), format!("new{i}")).unwrap();
    }
    assert!(db.stats().chunk_funk_rebalances > rebalances + 5);
    let opts = ReadOptions {
        snapshot: Some(snapshot),
        ..ReadOptions::default()
    };
    assert_eq!(scan(&db, opts.clone()), before);
    assert_eq!(db.get_opt(key(3), &opts).unwrap(), Some(b"old".to_vec()));
}

#[test]
fn reopen_finds_every_write_without_replaying_logs() {
    let dir = tempfile::tempdir().unwrap();
    let mut model = BTreeMap::new();
    {
        let db = Db::open(dir.path(), tiny()).unwrap();
        for i in 0..1500u64 {
            let v = format!("v{i}").into_bytes();
            db.put(key(i), &v).unwrap();
            model.insert(key(i), v);
        }
        db.close().unwrap();
    }
    let db = Db::open(dir.path(), tiny()).unwrap();
    let want: Vec<_> = model.clone().into_iter().collect();
    assert_eq!(scan(&db, ReadOptions::default()), want);
    // Writes continue after the reopen with higher sequence numbers.
    db.put(key(1), b"after").unwrap();
    assert_eq!(db.get(key(1)).unwrap(), Some(b"after".to_vec()));
    drop(db);
    let ro = Db::open_read_only(dir.path(), tiny()).unwrap();
    assert_eq!(ro.get(key(1)).unwrap(), Some(b"after".to_vec()));
    assert!(ro.put(b"x", b"y").is_err());
}

#[test]
fn opening_with_the_other_layout_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    Db::open(dir.path(), tiny()).unwrap().close().unwrap();
    let err = Db::open(dir.path(), Options::default()).unwrap_err();
    assert!(err.to_string().contains("layout chunked"), "{err}");
    let lsm = tempfile::tempdir().unwrap();
    Db::open(lsm.path(), Options::default())
        .unwrap()
        .close()
        .unwrap();
    let err = Db::open(lsm.path(), tiny()).unwrap_err();
    assert!(err.to_string().contains("layout lsm"), "{err}");
}

/// A batch spanning chunks is, after a power loss or a process crash that
/// cut its writes short at any byte, in every chunk or in none;
/// acknowledged, in all. A process crash keeps the chunk-log parts written
/// before it (partial batches on disk), which the open completes and a
/// read-only open hides.
#[test]
fn a_cross_chunk_batch_is_atomic_across_power_loss() {
    let sync = WriteOptions { sync: true };
    let mut batch = WriteBatch::new();
    // Every 50th key: the batch spans every chunk.
    for i in (0..1000u64).step_by(50) {
        batch.put(format!("key{i:06}"), b"batch").unwrap();
    }
    let mut outcomes = Vec::new();
    let cuts = (0..1400).step_by(70).flat_map(|b| [(b, true), (b, false)]);
    for (budget, power_loss) in cuts {
        let fs = FaultFs::new();
        let dir = std::path::Path::new("/store");
        // No build thread: the byte budget cuts the batch's writes only.
        let options = Options {
            chunk_rebalance_threads: 0,
            ..tiny_uncached()
        };
        let db = Db::open_with_fs(dir, options, process(&fs)).unwrap();
        for i in 0..1000u64 {
            db.put_opt(format!("key{i:06}"), b"base", sync).unwrap();
        }
        assert!(db.stats().chunks > 3);
        fs.fail_after_bytes(budget, FaultKind::Io);
        let acknowledged = db.write_opt(batch.clone(), sync).is_ok();
        if power_loss {
            fs.drop_unsynced();
        } else {
            fs.crash_process();
        }
        fs.clear_faults();
        drop(db);
        // A read-only open completes nothing: it hides an unfinished batch.
        let ro = Db::open_read_only_with_fs(dir, tiny(), process(&fs)).unwrap();
        let seen = (0..1000u64)
            .step_by(50)
            .filter(|i| ro.get(format!("key{i:06}")).unwrap().unwrap() == b"batch")
            .count();
        assert!(
            seen == 0 || seen == 20,
            "budget {budget}: read-only sees {seen} of 20"
        );
        drop(ro);
        let db = Db::open_with_fs(dir, tiny(), process(&fs)).unwrap();
        let applied = (0..1000u64)
            .step_by(50)
            .filter(|i| db.get(format!("key{i:06}")).unwrap().unwrap() == b"batch")
            .count();
        assert!(
            applied == 0 || applied == 20,
            "budget {budget}: {applied} of 20 applied"
        );
        assert!(
            !acknowledged || applied == 20,
            "budget {budget}: acknowledged, lost"
        );
        outcomes.push((acknowledged, applied));
    }
    // The cuts fell before the batch log held the batch, after it (the
    // chunk logs completed at open) and after the acknowledgement.
    assert!(outcomes.contains(&(false, 0)), "{outcomes:?}");
    assert!(outcomes.contains(&(false, 20)), "{outcomes:?}");
    assert!(outcomes.contains(&(true, 20)), "{outcomes:?}");
}

/// `flush` makes every write before it durable, a cross-chunk batch
/// included: its record in the batch log is synced with its chunk-log
/// parts, so a power loss after the flush keeps it whole.
#[test]
fn a_flushed_cross_chunk_batch_survives_power_loss() {
    let fs = FaultFs::new();
    let dir = std::path::Path::new("/store");
    let options = Options {
        chunk_rebalance_threads: 0,
        ..tiny_uncached()
    };
    let db = Db::open_with_fs(dir, options.clone(), process(&fs)).unwrap();
    let sync = WriteOptions { sync: true };
    for i in 0..1000u64 {
        db.put_opt(format!("key{i:06}"), b"base", sync).unwrap();
    }
    assert!(db.stats().chunks > 3);
    let mut batch = WriteBatch::new();
    for i in (0..1000u64).step_by(50) {
        batch.put(format!("key{i:06}"), b"batch").unwrap();
    }
    db.write(batch).unwrap();
    db.put("key000001", b"after").unwrap();
    db.flush().unwrap();
    fs.drop_unsynced();
    drop(db);
    let db = Db::open_with_fs(dir, options, process(&fs)).unwrap();
    for i in (0..1000u64).step_by(50) {
        assert_eq!(
            db.get(format!("key{i:06}")).unwrap().unwrap(),
            b"batch",
            "key{i:06}"
        );
    }
    assert_eq!(db.get("key000001").unwrap().unwrap(), b"after");
}

/// A power loss part-way through a sync round (the first chunk's log
/// synced, the last one's not) keeps a later write and loses an earlier
/// one; recovery drops the writes from the first lost one on, so the
/// store holds a prefix of them, and all of them when the sync returned.
#[test]
fn a_power_loss_inside_a_sync_round_keeps_a_prefix() {
    let sync = WriteOptions { sync: true };
    let mut outcomes = Vec::new();
    for ops in 0..12 {
        let fs = FaultFs::new();
        let dir = std::path::Path::new("/store");
        let options = Options {
            chunk_rebalance_threads: 0,
            funk_log_limit: 1 << 20,
            funk_log_limit_with_munk: 1 << 20,
            ..tiny_uncached()
        };
        let db = Db::open_with_fs(dir, tiny_uncached(), process(&fs)).unwrap();
        for i in 0..1000u64 {
            db.put(format!("key{i:06}"), b"base").unwrap();
        }
        db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
        assert!(db.stats().chunks > 3);
        db.close().unwrap();
        let db = Db::open_with_fs(dir, options.clone(), process(&fs)).unwrap();
        // In write order: the last chunk, then the first one twice; the
        // round syncs the first chunk's log before the last one's.
        let writes = ["key000999", "key000000", "key000001"];
        db.put(writes[0], b"new").unwrap();
        db.put(writes[1], b"new").unwrap();
        fs.fail_after_ops(ops, FaultKind::Io);
        let acknowledged = db.put_opt(writes[2], b"new", sync).is_ok();
        fs.drop_unsynced();
        fs.clear_faults();
        drop(db);
        let db = Db::open_with_fs(dir, options, process(&fs)).unwrap();
        let kept: Vec<bool> = writes
            .iter()
            .map(|k| db.get(k).unwrap().unwrap() == b"new")
            .collect();
        let prefix = kept.iter().take_while(|&&k| k).count();
        assert!(
            kept[prefix..].iter().all(|&k| !k),
            "ops {ops}: kept {kept:?}, no prefix"
        );
        assert!(
            !acknowledged || prefix == 3,
            "ops {ops}: acknowledged, lost"
        );
        outcomes.push(prefix);
    }
    // Some budget cut the round between the two chunk logs.
    assert!(outcomes.contains(&0), "{outcomes:?}");
    assert!(outcomes.contains(&3), "{outcomes:?}");
}

#[test]
fn posix_store_is_swept_of_files_a_crash_left() {
    let dir = tempfile::tempdir().unwrap();
    Db::open(dir.path(), tiny()).unwrap().close().unwrap();
    let stray = dir.path().join("000999.ftab");
    std::fs::write(&stray, b"left by a crash mid-rebalance").unwrap();
    Db::open(dir.path(), tiny()).unwrap().close().unwrap();
    assert!(!stray.exists());
}

/// The munk budget counts exactly the munks installed: a funk
/// rebalance's children's munks from its switch (when the old munk's
/// bytes leave).
#[test]
fn munk_budget_counts_the_installed_munks() {
    let options = Options {
        chunk_rebalance_threads: 0,
        munk_cache_bytes: 256 << 10,
        funk_log_limit_with_munk: 512 << 10,
        chunk_size: 32 << 10,
        row_cache_bytes: 0,
        ..tiny()
    };
    let db = Db::open_with_fs(
        std::path::Path::new("/store"),
        options,
        Arc::new(FaultFs::new()),
    )
    .unwrap();
    let value = [7u8; 100];
    // Every key once (splits), then overwrites of a hot few: the munks
    // of their chunks grow by replaced versions.
    for i in 0..2_000u64 {
        db.put(format!("key{i:06}"), value).unwrap();
    }
    for round in 0..60u64 {
        for i in 0..40u64 {
            db.put(format!("key{:06}", (i * 7 + round) % 200), value)
                .unwrap();
        }
    }
    let store = store(&db);
    let installed: u64 = store
        .every_chunk()
        .iter()
        .filter_map(|c| c.munk())
        .map(|m| m.bytes())
        .sum();
    let stats = db.stats();
    assert!(
        stats.chunk_splits > 0 && stats.munks_resident > 0,
        "{stats:?}"
    );
    assert_eq!(store.munks.resident_bytes(), installed);
    assert!(installed <= 256 << 10, "{installed}");
    assert!(stats.chunk_munk_rebalances > 0, "{stats:?}");
}

/// A chunk gets a munk only if the budget has room for it to grow to its
/// rebuild size: admitted with room for its image alone, puts grew it past
/// the budget at once, evicting another chunk's munk (churn under puts).
#[test]
fn a_munk_is_admitted_only_with_room_to_grow_to_its_rebuild_size() {
    let fs = FaultFs::new();
    let dir = std::path::Path::new("/store");
    let options = |munk_cache_bytes| Options {
        chunk_size: 1 << 20,
        funk_log_limit: 1 << 20,
        funk_log_limit_with_munk: 1 << 20,
        munk_cache_bytes,
        row_cache_bytes: 0,
        ..tiny()
    };
    let db = Db::open_with_fs(dir, options(0), process(&fs)).unwrap();
    for i in 0..400u64 {
        db.put(format!("key{i:06}"), [7u8; 100]).unwrap();
    }
    db.close().unwrap();
    // The one chunk's image is about 45 KiB: within 64 KiB, but not twice.
    let munks_after_gets = |budget| {
        let db = Db::open_with_fs(dir, options(budget), process(&fs)).unwrap();
        for i in 0..300u64 {
            db.get(format!("key{:06}", i % 400)).unwrap();
        }
        let stats = db.stats();
        db.close().unwrap();
        (stats.chunks, stats.munks_resident)
    };
    assert_eq!(munks_after_gets(64 << 10), (1, 0));
    assert_eq!(munks_after_gets(128 << 10), (1, 1));
}

/// The file system as a newly started process sees it (a `FaultFs` clone
/// refuses changes once its process has crashed).
fn process(fs: &FaultFs) -> Arc<dyn FileSystem> {
    Arc::new(fs.clone())
}

/// A munk-less chunk's log limit follows the writes' share of its
/// accesses (YoDB §5.3): written only, a chunk merges its log once per
/// `funk_log_limit`; read forty times per write, once per quarter of it.
#[test]
fn a_read_mostly_chunk_merges_its_log_at_a_quarter_of_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(
        dir.path(),
        Options {
            chunk_size: 64 << 10,
            funk_log_limit: 8 << 10,
            chunk_rebalance_threads: 0,
            ..tiny_uncached()
        },
    )
    .unwrap();
    let key = |i: u32| format!("key{:02}", i % 50);
    let value = |i: u32| format!("{i:06}{}", "v".repeat(100));
    let rebalances = || db.stats().chunk_funk_rebalances;
    for i in 0..400 {
        db.put(key(i), value(i)).unwrap();
    }
    let written_only = rebalances();
    for i in 400..800 {
        db.put(key(i), value(i)).unwrap();
        for j in 0..40 {
            assert!(db.get(key(i + j)).unwrap().is_some());
        }
    }
    let read_mostly = rebalances() - written_only;
    assert!(written_only >= 3, "{written_only}");
    assert!(
        read_mostly >= 3 * written_only,
        "{written_only} builds written only, {read_mostly} read mostly"
    );
}
