//! Range deletes in the chunked layout on constructed shapes: a tombstone
//! across chunk boundaries (cut per chunk), a snapshot between the
//! tombstone and the writes it covers, a tombstone carried into the new
//! funks of a rebalance and a split (or dropped once nothing older needs
//! it), through every get path (munk, row cache, log, table), scans in
//! both directions, reopen and read-only open.

use std::collections::BTreeMap;

use super::tests::{settle_builds, store, tiny, tiny_uncached};
use crate::db::tests::{scan, scan_reverse};
use crate::db::{Db, ReadOptions, Snapshot, WriteBatch};
use crate::format::range_tombstone::Fragments;
use crate::options::Options;

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn k(i: u64) -> Vec<u8> {
    format!("k{i:04}").into_bytes()
}

/// Every chunk's tombstones (table and log) lie within its key range.
/// Returns how many chunks hold some in their table and in their log.
fn tombstones_within_chunks(db: &Db) -> (usize, usize) {
    let set = store(db).default_space().chunk_set();
    let (mut in_tables, mut in_logs) = (0, 0);
    for (i, chunk) in set.chunks.iter().enumerate() {
        let end = set.chunks.get(i + 1).map(|c| c.start.clone());
        let check = |f: &Fragments| {
            if let Some((lo, hi)) = f.bounds() {
                assert!(
                    lo >= chunk.start.as_slice(),
                    "{lo:?} below {:?}",
                    chunk.start
                );
                assert!(
                    end.as_ref().is_none_or(|e| hi <= e.as_slice()),
                    "{hi:?} past {end:?}"
                );
            }
            !f.is_empty()
        };
        if let Some(t) = chunk.open_table().unwrap() {
            in_tables += usize::from(check(t.range_deletions()));
        }
        in_logs += usize::from(check(&chunk.log.range_deletions().unwrap()));
    }
    (in_tables, in_logs)
}

/// Gets (each key twice: the second may come from the row cache or a
/// munk), forward and reverse scans, all at `snapshot` or now.
fn check(db: &Db, model: &Model, snapshot: Option<&Snapshot>, what: &str) {
    let opts = ReadOptions {
        snapshot: snapshot.cloned(),
        ..ReadOptions::default()
    };
    for i in 0..400 {
        for round in 0..2 {
            assert_eq!(
                db.get_opt(k(i), &opts).unwrap().as_ref(),
                model.get(&k(i)),
                "{what}: get {i} round {round}"
            );
        }
    }
    let want: Vec<_> = model.clone().into_iter().collect();
    assert_eq!(scan(db, opts.clone()), want, "{what}: scan");
    assert_eq!(scan_reverse(db, opts), want, "{what}: reverse scan");
}

fn value(i: u64, round: u64) -> Vec<u8> {
    format!("v{round}-{i}-{}", "x".repeat(40)).into_bytes()
}

#[test]
fn a_tombstone_across_chunks_a_snapshot_and_rebalances() {
    // Row cache without munks: gets of munk-less chunks hit it.
    let rows_only = Options {
        munk_cache_bytes: 0,
        ..tiny()
    };
    for options in [tiny(), rows_only, tiny_uncached()] {
        across_chunks_snapshot_and_rebalances(options);
    }
}

fn across_chunks_snapshot_and_rebalances(options: Options) {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options.clone()).unwrap();
    let mut model = Model::new();
    for i in 0..400 {
        db.put(k(i), value(i, 0)).unwrap();
        model.insert(k(i), value(i, 0));
    }
    // Everything into the funks' tables; the chunks have split.
    db.compact_range(None, None).unwrap();
    let chunks = store(&db).default_space().chunk_set().chunks.len();
    assert!(chunks > 3, "{chunks} chunks");
    // Warm the caches (row cache, munks) over the range to be deleted.
    check(&db, &model, None, "before");
    let before = db.snapshot();
    let at_before = model.clone();

    // Some keys of the range just read: in the row cache (or a munk).
    for i in 60..70 {
        assert!(db.get(k(i)).unwrap().is_some());
    }
    let hits = db.stats().chunk_gets_from_row_cache;
    db.delete_range(k(50), k(350)).unwrap();
    model.retain(|key, _| !(k(50)..k(350)).contains(key));
    for i in 60..70 {
        assert_eq!(db.get(k(i)).unwrap(), None, "{i} right after the delete");
    }
    if options.row_cache_bytes > 0 && options.munk_cache_bytes == 0 {
        assert!(
            db.stats().chunk_gets_from_row_cache > hits,
            "served by the row cache"
        );
    }
    // Cut into every chunk it overlaps, within each one's range.
    let (_, in_logs) = tombstones_within_chunks(&db);
    assert!(in_logs > 2, "the tombstone spans {in_logs} chunks");
    // Rewrites inside the range after the tombstone are visible.
    for i in (100..200).step_by(10) {
        db.put(k(i), value(i, 1)).unwrap();
        model.insert(k(i), value(i, 1));
    }
    let after = db.snapshot();
    let at_after = model.clone();
    check(&db, &model, None, "after the delete");
    check(&db, &at_before, Some(&before), "snapshot before the delete");

    // Rebalance with the old snapshot alive: the covered entries stay, and
    // the tombstones go into the new funks' tables.
    db.compact_range(None, None).unwrap();
    let (in_tables, in_logs) = tombstones_within_chunks(&db);
    assert!(in_tables > 2 && in_logs == 0, "{in_tables} {in_logs}");
    check(&db, &model, None, "after a rebalance");
    check(
        &db,
        &at_before,
        Some(&before),
        "old snapshot after a rebalance",
    );
    check(
        &db,
        &at_after,
        Some(&after),
        "new snapshot after a rebalance",
    );

    // Reopen: tombstones come back from tables and logs.
    db.delete_range(k(0), k(10)).unwrap();
    model.retain(|key, _| !(k(0)..k(10)).contains(key));
    drop((before, after));
    db.close().unwrap();
    let ro = Db::open_read_only(dir.path(), options.clone()).unwrap();
    check(&ro, &model, None, "read-only open");
    drop(ro);
    let db = Db::open(dir.path(), options).unwrap();
    check(&db, &model, None, "reopen");

    // No snapshot: a rebalance drops the covered entries and the
    // tombstones, which cover nothing older below them any more.
    let entries_before: u64 = table_entries(&db);
    // A write per chunk, so that every chunk's log holds something (a
    // rebalance merges a log into the table).
    for i in (0..400).step_by(5) {
        db.put(k(i), value(i, 2)).unwrap();
        model.insert(k(i), value(i, 2));
    }
    db.compact_range(None, None).unwrap();
    assert_eq!(tombstones_within_chunks(&db), (0, 0));
    assert_eq!(table_entries(&db), model.len() as u64);
    assert!(entries_before > model.len() as u64);
    check(&db, &model, None, "after the tombstones were dropped");
}

/// Entries in the funk tables.
fn table_entries(db: &Db) -> u64 {
    let set = store(db).default_space().chunk_set();
    set.chunks
        .iter()
        .filter_map(|c| c.open_table().unwrap())
        .map(|t| t.properties().entries)
        .sum()
}

/// A tombstone in a chunk's log, then writes that split the chunk while a
/// snapshot needs the covered entries: each child's table carries its
/// share of the tombstone.
#[test]
fn a_tombstone_is_cut_by_a_split() {
    for mut options in [tiny(), tiny_uncached()] {
        // Writers build their rebalances themselves: how many splits a
        // background build makes depends on how many writes it finds.
        options.chunk_rebalance_threads = 0;
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), options).unwrap();
        let mut model = Model::new();
        for i in 0..40 {
            db.put(k(i * 10), value(i, 0)).unwrap();
            model.insert(k(i * 10), value(i, 0));
        }
        let snapshot = db.snapshot();
        let at_snapshot = model.clone();
        let splits = db.stats().chunk_splits;
        db.delete_range(k(0), k(400)).unwrap();
        model.clear();
        // Fill the gaps: the chunks split under the tombstone.
        for i in 0..400 {
            if i % 10 != 0 {
                db.put(k(i), value(i, 1)).unwrap();
                model.insert(k(i), value(i, 1));
            }
        }
        settle_builds(&db);
        assert!(db.stats().chunk_splits > splits + 2);
        let (in_tables, _) = tombstones_within_chunks(&db);
        assert!(in_tables > 2, "{in_tables} children carry the tombstone");
        check(&db, &model, None, "after the splits");
        check(
            &db,
            &at_snapshot,
            Some(&snapshot),
            "snapshot before the tombstone",
        );
    }
}

/// One batch: puts before the tombstone (covered), the tombstone over
/// several chunks, puts after it (kept); atomic like any batch.
#[test]
fn a_batch_with_a_tombstone_across_chunks() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), tiny()).unwrap();
    let mut model = Model::new();
    for i in 0..400 {
        db.put(k(i), value(i, 0)).unwrap();
        model.insert(k(i), value(i, 0));
    }
    // The splits are built by the build threads: wait for them.
    settle_builds(&db);
    assert!(store(&db).default_space().chunk_set().chunks.len() > 3);
    let mut batch = WriteBatch::new();
    batch.put(k(20), b"covered").unwrap();
    batch.put(k(380), b"covered too").unwrap();
    batch.delete_range(k(10), k(390)).unwrap();
    batch.delete_range(k(5), k(1)).unwrap(); // empty: deletes nothing
    batch.put(k(200), b"kept").unwrap();
    db.write(batch).unwrap();
    model.retain(|key, _| !(k(10)..k(390)).contains(key));
    model.insert(k(200), b"kept".to_vec());
    check(&db, &model, None, "after the batch");
    drop(db);
    let db = Db::open(dir.path(), tiny()).unwrap();
    check(&db, &model, None, "after reopen");
}
