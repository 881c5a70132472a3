//! Every profile under concurrency: histories of concurrent puts, gets and
//! scans, recorded while a background thread forces flushes and
//! compactions (chunk splits and checkpoints in YoDB's layout), are
//! linearizable by Wing & Gong's check (`common/linearizability.rs`).

mod common;

use common::linearizability::{filler_key, linearizable, round, write_initial, Call, Event, State};
use common::tiny_tree;
use thicketdb::{Db, Options, Profile};

/// The smallest memtables, tiny tables, levels and chunks: the forced
/// flushes make tables of a few entries, compactions run through several
/// levels, a few filler writes split a chunk.
fn tiny(profile: Profile) -> Options {
    let mut o = tiny_tree(profile.options(), 16 << 10).level_size_multiplier(2);
    o.chunk_size = 4 << 10;
    o.funk_log_limit = 1 << 10;
    o.funk_log_limit_with_munk = 2 << 10;
    o
}

/// One step of the background thread: ten filler keys between the tracked
/// ones, then a flush; every other step a full compaction as well.
fn force_flushes_and_compactions(db: &Db, round: u64, step: u64) {
    for n in step * 10..(step + 1) * 10 {
        db.put(filler_key(round, n), [b'f'; 300]).unwrap();
    }
    db.flush().unwrap();
    if step % 2 == 1 {
        db.compact_range(None, None).unwrap();
    }
}

#[test]
fn every_profile_is_linearizable_while_flushes_and_compactions_run() {
    for &profile in Profile::ALL {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), tiny(profile)).unwrap();
        for r in 0..8u64 {
            let initial = write_initial(&db, r);
            let history = round(&db, r, 4, 20, move |db, step| {
                force_flushes_and_compactions(db, r, step)
            });
            assert!(
                linearizable(&history, &initial),
                "{profile}, round {r}: not linearizable: {history:#?}"
            );
        }
        // The background steps did run during the rounds (each round spans
        // four of them: the workers wait for them).
        let stats = db.stats();
        if profile == Profile::YoDb {
            assert!(stats.chunk_splits > 0, "{profile}: {stats:?}");
        } else {
            assert!(
                stats.flushes >= 32 && stats.compactions_merge > 0,
                "{profile}: {stats:?}"
            );
        }
        db.close().unwrap();
    }
}

/// The checker rejects what it must: a get that sees a put invoked after
/// it returned, and a scan that sees a later put but not an earlier one.
#[test]
fn the_checker_rejects_non_linearizable_histories() {
    let v = |s: &str| s.as_bytes().to_vec();
    let initial: State = [(0, v("a0")), (1, v("b0"))].into();
    let event = |call, invoked, returned| Event {
        call,
        invoked,
        returned,
    };
    let from_the_future = [
        event(Call::Get(0, Some(v("a1"))), 0, 1),
        event(Call::Put(vec![(0, v("a1"))]), 2, 3),
    ];
    assert!(!linearizable(&from_the_future, &initial));
    let torn_scan = [
        event(Call::Put(vec![(0, v("a1"))]), 0, 1),
        event(Call::Put(vec![(1, v("b1"))]), 2, 3),
        event(Call::Scan([(0, v("a0")), (1, v("b1"))].into()), 4, 5),
    ];
    assert!(!linearizable(&torn_scan, &initial));
    let torn_batch = [
        event(Call::Put(vec![(0, v("a1")), (1, v("b1"))]), 0, 3),
        event(Call::Scan([(0, v("a1")), (1, v("b0"))].into()), 1, 2),
    ];
    assert!(!linearizable(&torn_batch, &initial));
    // Overlapping calls may take either order.
    let concurrent = [
        event(Call::Put(vec![(0, v("a1"))]), 0, 3),
        event(Call::Get(0, Some(v("a0"))), 1, 2),
        event(Call::Get(0, Some(v("a1"))), 4, 5),
    ];
    assert!(linearizable(&concurrent, &initial));
}
