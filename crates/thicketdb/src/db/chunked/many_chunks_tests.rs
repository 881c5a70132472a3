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

/// Tables replaced by rebalances leave the cache: writes that rewrite
/// every chunk many times keep the open tables within the bound and the
/// directory free of replaced tables.
#[test]
fn rebalanced_chunks_close_their_tables() {
    let dir = tempfile::tempdir().unwrap();
    let (db, _) = fill_and_reopen(dir.path());
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
