//! What keeps a store of many chunks from paying per chunk: funk tables
//! named at open and opened on first read, through a cache of at most
//! `max_open_files` tables (`funk_tables.rs`), and a munk cache that looks
//! for its victims among the chunks holding munks only (`munk.rs`).

use std::path::Path;
use std::sync::Arc;

use crate::db::tests::scan;
use crate::db::{Db, ReadOptions};
use crate::io::counting::{CountingFs, Reads};
use crate::io::PosixFs;
use crate::options::{Layout, Options};

fn is_table(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "ftab")
}

/// Small chunks (many funk tables), no munks or row cache (every get of
/// a key in a table reads the table), and the fewest open tables allowed.
fn options() -> Options {
    Options {
        layout: Layout::Chunked,
        chunk_size: 16 << 10,
        funk_log_limit: 4 << 10,
        funk_log_limit_with_munk: 4 << 10,
        munk_cache_bytes: 0,
        row_cache_bytes: 0,
        max_open_files: 16,
        ..Options::default()
    }
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

fn value(i: u32) -> Vec<u8> {
    format!("value-{i}-{}", "x".repeat(100)).into_bytes()
}

const KEYS: u32 = 6000;

/// Fills a store until its funk tables outnumber `max_open_files` several
/// times, closes it, and reopens it counting table reads.
fn fill_and_reopen(dir: &Path) -> (Db, Arc<Reads>) {
    let db = Db::open(dir, options()).unwrap();
    for i in 0..KEYS {
        db.put(key(i), value(i)).unwrap();
    }
    db.close().unwrap();
    let fs = CountingFs::new(Arc::new(PosixFs), is_table);
    let reads = fs.reads();
    let db = Db::open_with_fs(dir, options(), Arc::new(fs)).unwrap();
    (db, reads)
}

#[test]
fn an_open_reads_no_funk_table_and_keeps_at_most_max_open_files_open() {
    let dir = tempfile::tempdir().unwrap();
    let (db, reads) = fill_and_reopen(dir.path());
    let stats = db.stats();
    assert!(
        stats.tables > 4 * 16,
        "{} tables: too few to outgrow the cache",
        stats.tables
    );
    assert_eq!(reads.bytes(), 0, "the open read a funk table");
    assert_eq!(stats.open_segment_files, 0);
    for i in (0..KEYS).step_by(7) {
        assert_eq!(db.get(key(i)).unwrap(), Some(value(i)), "key {i}");
    }
    assert!(reads.bytes() > 0, "no get read a table");
    let open = db.stats().open_segment_files;
    assert!((1..=16).contains(&open), "{open} tables open");
    // A scan opens every table again, past the bound, and reads them all.
    let all = scan(&db, ReadOptions::default());
    assert_eq!(all.len(), KEYS as usize);
    assert!(all.iter().enumerate().all(|(i, (k, v))| {
        let i = i as u32;
        *k == key(i) && *v == value(i)
    }));
    assert!(db.stats().open_segment_files <= 16);
    db.close().unwrap();
}

/// Tables replaced by rebalances leave the cache: a chunk's table, open
/// for a read, is closed when a rebalance replaces the chunk; and writes
/// that rewrite every chunk many times keep the open tables within the
/// bound and the directory free of replaced tables.
#[test]
fn rebalanced_chunks_close_their_tables() {
    let dir = tempfile::tempdir().unwrap();
    let (db, _) = fill_and_reopen(dir.path());
    let store = super::tests::store(&db);
    let chunk_of = |k: u32| {
        let set = store.default_space().chunk_set();
        set.chunks[set.locate(&key(k))].clone()
    };
    assert_eq!(db.get(key(100)).unwrap(), Some(value(100)));
    let old = chunk_of(100).table_number();
    assert!(old != 0 && store.tables.is_open(old));
    let rebalances = db.stats().chunk_funk_rebalances;
    while db.stats().chunk_funk_rebalances == rebalances || chunk_of(100).table_number() == old {
        db.put(key(100), "rewritten").unwrap();
        super::tests::settle_builds(&db);
    }
    assert!(!store.tables.is_open(old), "a replaced table stayed open");
    for round in 0..3u32 {
        for i in (0..KEYS).rev() {
            db.put(key(i), format!("round-{round}-{i}")).unwrap();
        }
        for i in (0..KEYS).step_by(13) {
            assert_eq!(
                db.get(key(i)).unwrap(),
                Some(format!("round-{round}-{i}").into_bytes())
            );
        }
        assert!(db.stats().open_segment_files <= 16);
    }
    let tables = db.stats().tables;
    db.close().unwrap();
    let on_disk = std::fs::read_dir(dir.path())
        .unwrap()
        .filter(|e| is_table(&e.as_ref().unwrap().path()))
        .count();
    assert_eq!(on_disk, tables, "replaced tables left on disk");
}

/// The munk cache finds its victims among the chunks it recorded as
/// holding munks, not by walking every chunk: through loads, evictions,
/// splits and a keyspace's churn, that record is exactly the chunks that
/// hold one.
#[test]
fn the_munk_cache_records_exactly_the_chunks_holding_munks() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(
        dir.path(),
        Options {
            munk_cache_bytes: 256 << 10,
            ..options()
        },
    )
    .unwrap();
    let store = super::tests::store(&db);
    let check = || {
        let holding: std::collections::BTreeSet<usize> = store
            .every_chunk()
            .iter()
            .filter(|c| c.munk().is_some())
            .map(|c| std::ptr::from_ref(&**c) as usize)
            .collect();
        assert_eq!(store.munks.holders(), holding);
        holding.len()
    };
    let mut most = 0;
    let mut state = 7u64;
    for _ in 0..20 {
        for i in 0..KEYS / 4 {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            // Skewed: most accesses go to a few hundred keys.
            let k = match state >> 62 {
                0 => (state >> 20) as u32 % KEYS,
                _ => (state >> 20) as u32 % 300,
            };
            match i % 3 {
                0 => db.put(key(k), value(k)).unwrap(),
                _ => {
                    db.get(key(k)).unwrap();
                }
            }
        }
        super::tests::settle_builds(&db);
        most = most.max(check());
    }
    assert!(most > 0, "no munk was ever loaded");
    assert!(db.stats().chunk_munk_evictions > 0, "no munk was evicted");
}

/// A munk rebalance runs in a writer under its chunk's `append_lock`; an
/// eviction (another chunk's admission, a writer keeping the budget)
/// takes no lock of the chunk. One landing between the rebuild and its
/// install must not leave the rebuilt munk installed: the cache would not
/// record it (never evicted, its bytes counted for good).
#[test]
fn a_munk_evicted_while_it_is_rebuilt_is_not_installed_behind_the_cache() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(
        dir.path(),
        Options {
            chunk_size: 4 << 20,
            funk_log_limit_with_munk: 4 << 20,
            munk_cache_bytes: 8 << 20,
            ..options()
        },
    )
    .unwrap();
    let store = super::tests::store(&db);
    let evictions = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let evicted = evictions.clone();
    *store.munks.before_install.lock() = Some(Arc::new(move |cache, chunk| {
        cache.release(chunk);
        evicted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }));
    // The one chunk gets a munk, then grows it by overwrites past its
    // rebuild size (twice its image, 64 KiB at least).
    for round in 0..40u32 {
        for i in 0..100 {
            db.put(key(i), format!("{round}{}", value(i).len()).repeat(40))
                .unwrap();
        }
        if evictions.load(std::sync::atomic::Ordering::SeqCst) > 0 {
            break;
        }
    }
    assert!(
        evictions.load(std::sync::atomic::Ordering::SeqCst) > 0,
        "no munk rebalance ran"
    );
    store.munks.before_install.lock().take();
    let holding: std::collections::BTreeSet<usize> = store
        .every_chunk()
        .iter()
        .filter(|c| c.munk().is_some())
        .map(|c| std::ptr::from_ref(&**c) as usize)
        .collect();
    assert_eq!(store.munks.holders(), holding);
    let bytes: u64 = store
        .every_chunk()
        .iter()
        .filter_map(|c| c.munk())
        .map(|m| m.bytes())
        .sum();
    assert_eq!(store.munks.resident_bytes(), bytes);
}

/// A store on `fs` built inline (`chunk_rebalance_threads` 0), loaded
/// with every key and compacted: every chunk log empty, every write
/// durable.
fn compacted_store(fs: &crate::io::fault::FaultFs) -> (Db, Options) {
    let options = Options {
        chunk_rebalance_threads: 0,
        ..options()
    };
    let db = Db::open_with_fs(Path::new("/store"), options.clone(), Arc::new(fs.clone())).unwrap();
    for i in 0..KEYS {
        db.put(key(i), value(i)).unwrap();
    }
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    assert!(db.stats().chunks > 40, "{} chunks", db.stats().chunks);
    (db, options)
}

/// The bytes in the log of the chunk holding key `k`.
fn log_len(db: &Db, k: u32) -> u64 {
    let set = super::tests::store(db).default_space().chunk_set();
    set.chunks[set.locate(&key(k))].log.len()
}

/// In the synchronous mode a funk rebalance syncs its new chunks' logs,
/// not every dirty log of the store (N fsyncs per rebalance at N dirty
/// chunks): its table takes the writes up to the durable point only and
/// the rest stays a log tail, so a power loss right after the switch
/// still keeps a prefix of the writes.
#[test]
fn a_switch_syncs_no_other_chunks_log_and_a_power_loss_keeps_a_prefix() {
    use crate::db::WriteOptions;
    let fs = crate::io::fault::FaultFs::new();
    let (db, options) = compacted_store(&fs);
    let limit = options.funk_log_limit;
    let hot = KEYS / 2 + 3;
    let hot_log_len = || log_len(&db, hot);
    // The hot chunk's log 70% full, made durable by a sync write; then
    // one unsynced write in each of 20 other chunks; then writes to the
    // hot chunk until it rebalances, with less than half a log past the
    // durable point.
    let n = std::cell::Cell::new(0);
    let put_hot = |opts: WriteOptions| {
        n.set(n.get() + 1);
        db.put_opt(key(hot), format!("hot-{}", n.get()), opts)
            .unwrap();
    };
    while hot_log_len() < limit * 7 / 10 {
        put_hot(WriteOptions::default());
    }
    put_hot(WriteOptions { sync: true });
    let cold: Vec<u32> = (0..20).map(|c| c * (KEYS / 20) + 1).collect();
    for &i in &cold {
        db.put(key(i), "cold").unwrap();
    }
    let (fsyncs, rebalances) = (db.stats().fsyncs_log, db.stats().chunk_funk_rebalances);
    let durable_hot = n.get();
    while db.stats().chunk_funk_rebalances == rebalances {
        put_hot(WriteOptions::default());
    }
    let synced = db.stats().fsyncs_log - fsyncs;
    assert!(
        synced < 20,
        "the switch synced {synced} logs: the other chunks' dirty logs too"
    );
    fs.drop_unsynced();
    drop(db);
    let db = Db::open_with_fs(Path::new("/store"), options, Arc::new(fs.clone())).unwrap();
    // The writes kept are a prefix of the writes made: the cold ones in
    // order, then the hot ones past the synced one.
    let kept_cold: Vec<bool> = cold
        .iter()
        .map(|&i| db.get(key(i)).unwrap() == Some(b"cold".to_vec()))
        .collect();
    let hot_value = String::from_utf8(db.get(key(hot)).unwrap().unwrap()).unwrap();
    let kept_hot: usize = hot_value.strip_prefix("hot-").unwrap().parse().unwrap();
    assert!(kept_hot >= durable_hot, "a synced write lost: {hot_value}");
    let prefix = kept_cold.iter().take_while(|&&k| k).count();
    assert!(
        kept_cold[prefix..].iter().all(|&k| !k),
        "cold writes kept {kept_cold:?}: not a prefix"
    );
    assert!(
        kept_hot == durable_hot || prefix == cold.len(),
        "hot write {kept_hot} kept past a lost cold write: {kept_cold:?}"
    );
}

/// A switch whose tail left its new logs empty syncs none of them, and
/// the directory holding the new funks' names is synced before the chunk
/// turns immutable: per rebalance, the new table and the chunk list are
/// the only files synced (each fsync under the exclusive lock stopped the
/// chunk's puts).
#[test]
fn a_switch_syncs_no_new_log_its_tail_left_empty() {
    let fs = crate::io::fault::FaultFs::new();
    let (db, _) = compacted_store(&fs);
    for c in 0..20 {
        db.put(key(c * (KEYS / 20) + 1), "again").unwrap();
    }
    db.flush().unwrap();
    let (before, rebalances) = (fs.stats(), db.stats().chunk_funk_rebalances);
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    let (after, rebuilt) = (fs.stats(), db.stats().chunk_funk_rebalances - rebalances);
    assert!(rebuilt >= 20, "{rebuilt} rebalances");
    let synced = after.syncs - before.syncs;
    assert_eq!(synced, 2 * rebuilt, "files synced by {rebuilt} rebalances");
}

/// A batch spanning two chunks, one of them rebalanced while the batch is
/// in its tail: the switch syncs the batch log before the new chunk log,
/// so a power loss right after keeps the batch whole (recovery completes
/// the part in the other chunk's lost log from the batch log).
#[test]
fn a_batch_across_a_rebalanced_chunk_survives_power_loss_whole_or_not_at_all() {
    use crate::db::{WriteBatch, WriteOptions};
    let fs = crate::io::fault::FaultFs::new();
    let (db, options) = compacted_store(&fs);
    let limit = options.funk_log_limit;
    let (hot, cold) = (KEYS / 2 + 3, KEYS - 5);
    let log_len = |k: u32| log_len(&db, k);
    assert!(log_len(hot) == 0 && log_len(cold) == 0);
    // The hot chunk's log 70% full and durable, then the batch (its hot
    // part numbered first), then hot writes until the chunk rebalances
    // with the batch in its tail.
    while log_len(hot) < limit * 7 / 10 {
        db.put(key(hot), "filler").unwrap();
    }
    db.put_opt(key(hot), "synced", WriteOptions { sync: true })
        .unwrap();
    let mut batch = WriteBatch::new();
    batch.put(key(hot - 1), "batch").unwrap();
    batch.put(key(cold), "batch").unwrap();
    db.write(batch).unwrap();
    let rebalances = db.stats().chunk_funk_rebalances;
    while db.stats().chunk_funk_rebalances == rebalances {
        db.put(key(hot), "after").unwrap();
    }
    fs.drop_unsynced();
    drop(db);
    let db = Db::open_with_fs(Path::new("/store"), options, Arc::new(fs.clone())).unwrap();
    let parts = [key(hot - 1), key(cold)].map(|k| db.get(k).unwrap() == Some(b"batch".to_vec()));
    assert_eq!(parts[0], parts[1], "half a batch kept: {parts:?}");
    // Its hot part was made durable by the switch, and the batch log
    // completes the other.
    assert_eq!(parts, [true, true]);
}
