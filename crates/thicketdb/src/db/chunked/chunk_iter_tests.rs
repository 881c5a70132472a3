//! A scan reads only the chunks its cursor reaches (`chunk_views.rs`):
//! after a clean reopen no chunk log is indexed, and a short scan indexes
//! the log of the chunk it reads, not those of every chunk up to the end
//! of the key space.

use super::tests::{store, tiny_uncached};
use crate::db::{Db, ReadOptions};

fn k(i: u32) -> Vec<u8> {
    format!("k{i:05}").into_bytes()
}

fn v(i: u32) -> Vec<u8> {
    format!("value-{i}-{}", "x".repeat(60)).into_bytes()
}

/// The indexes of the chunks whose logs a read has indexed so far.
fn indexed_logs(db: &Db) -> Vec<usize> {
    let set = store(db).default_space().chunk_set();
    let indexed = set.chunks.iter().enumerate();
    indexed
        .filter(|(_, c)| c.log.index_bytes() > 0)
        .map(|(i, _)| i)
        .collect()
}

#[test]
fn short_scans_read_only_the_chunks_they_reach() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), tiny_uncached()).unwrap();
    for i in 0..3000 {
        db.put(k(i), v(i)).unwrap();
    }
    // A few records in every chunk's log (too few for a funk rebuild).
    for i in (0..3000).step_by(9) {
        db.put(k(i), v(i)).unwrap();
    }
    db.close().unwrap();
    let db = Db::open(dir.path(), tiny_uncached()).unwrap();
    let chunks = store(&db).default_space().chunk_set().chunks.len();
    assert!(chunks >= 20, "{chunks} chunks");
    let set = store(&db).default_space().chunk_set();
    let logged = set.chunks.iter().filter(|c| c.log.len() > 0).count();
    assert!(
        logged * 10 >= chunks * 9,
        "{logged} of {chunks} logs hold records"
    );
    assert_eq!(indexed_logs(&db), Vec::<usize>::new(), "the open indexed");

    let mut it = db.iter(ReadOptions::default()).unwrap();
    it.seek(&k(1500));
    for i in 1500..1503 {
        assert!(it.valid(), "{:?}", it.status());
        assert_eq!((it.key(), it.value()), (&k(i)[..], &v(i)[..]));
        it.next();
    }
    let forward = indexed_logs(&db);
    assert!(
        (1..=2).contains(&forward.len()),
        "a 3-entry scan read chunks {forward:?} of {chunks}"
    );

    // From the end backwards: the last chunks only.
    it.seek_to_last();
    for i in (2997..3000).rev() {
        assert!(it.valid(), "{:?}", it.status());
        assert_eq!(it.key(), &k(i)[..]);
        it.prev();
    }
    let both = indexed_logs(&db);
    let backward: Vec<_> = both.iter().filter(|i| !forward.contains(i)).collect();
    assert!(
        backward.iter().all(|&&i| i >= chunks - 2),
        "a 3-entry reverse scan read chunks {backward:?} of {chunks}"
    );
    drop(it);
    db.close().unwrap();
}
