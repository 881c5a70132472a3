//! YoDB's chunked layout under concurrency: a linearizability check (the
//! shared checker, `common/linearizability.rs`) of
//! concurrent puts, gets and scans while chunks split and rebalance, and
//! concurrent puts across splits losing nothing.

mod common;

use std::thread;

use common::linearizability::{filler_key, linearizable, round, write_initial};
use thicketdb::{Db, Options, Profile, ReadOptions};

/// `yodb` with limits that make chunks split, funks and munks rebalance and
/// munks and rows come and go constantly.
fn tiny(caches: bool) -> Options {
    let mut o = Profile::YoDb.options();
    o.chunk_size = 4 << 10;
    o.funk_log_limit = 1 << 10;
    o.funk_log_limit_with_munk = 2 << 10;
    o.log_filter_parts = 4;
    o.block_size = 512;
    o.munk_cache_bytes = if caches { 16 << 10 } else { 0 };
    o.row_cache_bytes = if caches { 2 << 10 } else { 0 };
    o
}

#[test]
fn concurrent_puts_gets_and_scans_are_linearizable_across_splits() {
    // The last: writers build funk rebalances themselves (no build thread).
    for (caches, array_list, builders) in [
        (false, false, 1),
        (true, false, 1),
        (true, true, 1),
        (true, false, 0),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let mut options = tiny(caches);
        options.munk_array_list = array_list;
        options.chunk_rebalance_threads = builders;
        let db = Db::open(dir.path(), options).unwrap();
        for r in 0..25u64 {
            let initial = write_initial(&db, r);
            // Enough new keys between the tracked ones to split a few
            // chunks in every round.
            let history = round(&db, r, 4, 20, move |db, step| {
                for n in step * 15..(step + 1) * 15 {
                    db.put(filler_key(r, n), [b'f'; 300]).unwrap();
                }
            });
            assert!(
                linearizable(&history, &initial),
                "caches {caches}, array-list munks {array_list}, build threads {builders}, \
                 round {r}: not linearizable: {history:#?}"
            );
        }
        let stats = db.stats();
        assert!(stats.chunk_splits > 20, "{stats:?}");
        if caches {
            assert!(stats.chunk_munk_loads > 0 && stats.chunk_gets_from_munk > 0);
        }
        if caches && !array_list {
            assert!(stats.chunk_gets_from_row_cache > 0);
        }
    }
}

#[test]
fn concurrent_puts_across_splits_lose_nothing() {
    for (caches, builders) in [(false, 1), (true, 1), (true, 0)] {
        let dir = tempfile::tempdir().unwrap();
        let mut options = tiny(caches);
        options.chunk_rebalance_threads = builders;
        let db = Db::open(dir.path(), options).unwrap();
        let writers: Vec<_> = (0..4u64)
            .map(|t| {
                let db = db.clone();
                thread::spawn(move || {
                    for n in 0..1500u64 {
                        // Interleaved key ranges: every writer splits
                        // chunks the others write to.
                        let key = format!("key{:08}", n * 4 + t);
                        db.put(&key, format!("{key}-value")).unwrap();
                    }
                })
            })
            .collect();
        for w in writers {
            w.join().unwrap();
        }
        // Puts go on while a chunk's new funks are built, so one split
        // may cut a chunk into many, and how many depends on the timing:
        // ask only that the data was split well past one chunk.
        let stats = db.stats();
        assert!(stats.chunk_splits > 0 && stats.chunks > 10, "{stats:?}");
        let mut it = db.iter(ReadOptions::default()).unwrap();
        it.seek_to_first();
        let mut n = 0u64;
        while it.valid() {
            let key = format!("key{n:08}");
            assert_eq!(it.key(), key.as_bytes());
            assert_eq!(it.value(), format!("{key}-value").as_bytes());
            n += 1;
            it.next();
        }
        it.status().unwrap();
        assert_eq!(n, 6000, "caches {caches}, build threads {builders}");
        for n in (0..6000u64).step_by(7) {
            let key = format!("key{n:08}");
            assert_eq!(
                db.get(&key).unwrap(),
                Some(format!("{key}-value").into_bytes())
            );
        }
    }
}
