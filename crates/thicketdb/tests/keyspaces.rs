//! Keyspaces: independent namespaces with their own options, one shared
//! log (atomic cross-keyspace batches, also across power loss), store-wide
//! snapshots, durable create and drop, and space released by a drop.

mod common;

use std::sync::Arc;

use common::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use thicketdb::check::{check_store, check_store_with_fs};
use thicketdb::io::fault::FaultFs;
use thicketdb::{Db, Error, Keyspace, Options, Profile, ReadOptions, WriteBatch, WriteOptions};

fn small() -> Options {
    small_options()
}

/// Options of a keyspace that differ from the store's in every way a
/// keyspace may choose.
fn keyspace_options() -> Options {
    let mut o = Profile::Sifr.options();
    o.write_buffer_size = 64 << 10;
    o.target_table_size = 8 << 10;
    o.bloom_bits_per_key = 16;
    o.set("compression", "none").unwrap();
    o
}

/// A store's options and those of its keyspaces, in one layout.
struct Flavor {
    store: Options,
    /// Differs from the store's in every way a keyspace may choose.
    special: Options,
    /// A keyspace's default options.
    plain: Options,
    /// Checks that `special`'s choices stuck.
    special_kept: fn(&Options),
}

/// The LSM (`default` store, `sifr` keyspaces) and YoDB's chunked layout.
fn flavors() -> [Flavor; 2] {
    let mut yodb = Profile::YoDb.options();
    yodb.chunk_size = 16 << 10;
    yodb.funk_log_limit = 4 << 10;
    yodb.munk_cache_bytes = 64 << 10;
    yodb.row_cache_bytes = 16 << 10;
    let mut special = Profile::YoDb.options();
    special.chunk_size = 4 << 10;
    special.funk_log_limit = 1 << 10;
    special.bloom_bits_per_key = 16;
    special.set("compression", "none").unwrap();
    [
        Flavor {
            store: small(),
            special: keyspace_options(),
            plain: Options::default(),
            special_kept: |o| {
                assert_eq!((o.profile, o.bloom_bits_per_key), (Profile::Sifr, 16));
                assert_eq!(o.get("compression").as_deref(), Some("none"));
                assert_eq!(o.write_buffer_size, 64 << 10);
            },
        },
        Flavor {
            store: yodb.clone(),
            special,
            plain: Profile::YoDb.options(),
            special_kept: |o| {
                assert_eq!((o.profile, o.bloom_bits_per_key), (Profile::YoDb, 16));
                assert_eq!(o.get("compression").as_deref(), Some("none"));
                assert_eq!((o.chunk_size, o.funk_log_limit), (4 << 10, 1 << 10));
            },
        },
    ]
}

fn scan_keyspace(ks: &Keyspace) -> Model {
    ks.range::<&[u8], _>(..)
        .unwrap()
        .map(|pair| pair.unwrap())
        .collect()
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:05}").into_bytes()
}

#[test]
fn keyspaces_are_separate_namespaces_with_their_own_options_and_survive_reopen() {
    for f in flavors() {
        keyspaces_are_separate_namespaces_with_their_own_options_and_survive_reopen_in(&f);
    }
}

fn keyspaces_are_separate_namespaces_with_their_own_options_and_survive_reopen_in(f: &Flavor) {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), f.store.clone()).unwrap();
    assert_eq!(db.list_keyspaces(), ["default"]);
    let users = db.create_keyspace("users", f.special.clone()).unwrap();
    let logs = db.create_keyspace("logs", f.plain.clone()).unwrap();
    assert!(matches!(
        db.create_keyspace("users", f.plain.clone()),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        db.create_keyspace("", f.plain.clone()),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        db.keyspace("nope"),
        Err(Error::KeyspaceNotFound(_))
    ));
    // The same keys in three keyspaces, with enough data to flush and
    // compact the small-memtable keyspace many times.
    for i in 0..3000 {
        db.put(key(i), format!("d{i}")).unwrap();
        users.put(key(i), format!("u{i}")).unwrap();
        if i % 3 == 0 {
            logs.put(key(i), format!("l{i}")).unwrap();
        }
    }
    users.delete(key(7)).unwrap();
    logs.delete_range(key(0), key(100)).unwrap();
    db.wait_for_compactions().unwrap();
    assert!(db.stats().tables > 0, "the small keyspace flushed");
    assert_eq!(db.stats().keyspaces, 3);
    let check = |db: &Db| {
        let users = db.keyspace("users").unwrap();
        let logs = db.keyspace("logs").unwrap();
        assert_eq!(db.list_keyspaces(), ["default", "users", "logs"]);
        assert_eq!(db.get(key(7)).unwrap(), Some(b"d7".to_vec()));
        assert_eq!(users.get(key(7)).unwrap(), None);
        assert_eq!(users.get(key(8)).unwrap(), Some(b"u8".to_vec()));
        assert_eq!(logs.get(key(99)).unwrap(), None);
        assert_eq!(logs.get(key(102)).unwrap(), Some(b"l102".to_vec()));
        assert_eq!(logs.get(key(103)).unwrap(), None);
        assert_eq!(scan_keyspace(&users).len(), 2999);
        assert_eq!(scan_keyspace(&logs).len(), 1000 - 34);
        assert_eq!(scan_model(db).unwrap().len(), 3000);
        (f.special_kept)(users.options());
    };
    check(&db);
    db.close().unwrap();
    check_store(dir.path()).unwrap();
    let db = Db::open(dir.path(), f.store.clone()).unwrap();
    check(&db);
    drop(db);
    let read_only = Db::open_read_only(dir.path(), f.store.clone()).unwrap();
    check(&read_only);
}

/// A checkpoint copies every keyspace: its tables, its unflushed writes
/// (in the copied logs) and its definition.
#[test]
fn a_checkpoint_holds_every_keyspace() {
    for f in flavors() {
        a_checkpoint_holds_every_keyspace_in(&f);
    }
}

fn a_checkpoint_holds_every_keyspace_in(f: &Flavor) {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), f.store.clone()).unwrap();
    let users = db.create_keyspace("users", f.special.clone()).unwrap();
    for i in 0..2000 {
        users.put(key(i), format!("u{i}")).unwrap();
    }
    db.flush().unwrap();
    users.put("unflushed", "yes").unwrap();
    db.put("default-key", "d").unwrap();
    let copy = dir.path().join("copy");
    db.checkpoint(&copy).unwrap();
    users.put("after", "no").unwrap();
    check_store(&copy).unwrap();
    let copied = Db::open(&copy, f.store.clone()).unwrap();
    let users = copied.keyspace("users").unwrap();
    assert_eq!(users.get("unflushed").unwrap(), Some(b"yes".to_vec()));
    assert_eq!(users.get("after").unwrap(), None);
    assert_eq!(users.get(key(1999)).unwrap(), Some(b"u1999".to_vec()));
    assert_eq!(scan_keyspace(&users).len(), 2001);
    assert_eq!(copied.get("default-key").unwrap(), Some(b"d".to_vec()));
}

#[test]
fn a_dropped_keyspace_stays_dropped_and_its_name_starts_empty_again() {
    for f in flavors() {
        a_dropped_keyspace_stays_dropped_and_its_name_starts_empty_again_in(&f);
    }
}

fn a_dropped_keyspace_stays_dropped_and_its_name_starts_empty_again_in(f: &Flavor) {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), f.store.clone()).unwrap();
    let doomed = db.create_keyspace("doomed", f.plain.clone()).unwrap();
    doomed.put("in-table", "1").unwrap();
    db.flush().unwrap();
    // Still only in the log when dropped: replay must skip it.
    doomed.put("in-log", "2").unwrap();
    db.drop_keyspace("doomed").unwrap();
    assert!(matches!(
        doomed.get("in-log"),
        Err(Error::KeyspaceNotFound(_))
    ));
    assert!(matches!(
        doomed.put("k", "v"),
        Err(Error::KeyspaceNotFound(_))
    ));
    assert!(matches!(
        db.drop_keyspace("doomed"),
        Err(Error::KeyspaceNotFound(_))
    ));
    assert!(matches!(
        db.drop_keyspace("default"),
        Err(Error::InvalidArgument(_))
    ));
    assert_eq!(db.list_keyspaces(), ["default"]);
    let again = db.create_keyspace("doomed", f.plain.clone()).unwrap();
    assert_eq!(again.get("in-log").unwrap(), None);
    again.put("fresh", "3").unwrap();
    drop((db, doomed, again));
    let db = Db::open(dir.path(), f.store.clone()).unwrap();
    let again = db.keyspace("doomed").unwrap();
    assert_eq!(
        scan_keyspace(&again).into_iter().collect::<Vec<_>>(),
        [(b"fresh".to_vec(), b"3".to_vec())]
    );
}

#[test]
fn dropping_a_keyspace_frees_its_space() {
    for f in flavors() {
        dropping_a_keyspace_frees_its_space_in(&f);
    }
}

fn dropping_a_keyspace_frees_its_space_in(f: &Flavor) {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), f.store.clone()).unwrap();
    db.put("keep", "me").unwrap();
    db.flush().unwrap();
    let tables = db.stats().tables;
    let big = db.create_keyspace("big", f.plain.clone()).unwrap();
    let value = vec![7u8; 1000];
    for i in 0..4000 {
        big.put(key(i), &value).unwrap();
    }
    db.flush().unwrap();
    let before = db.space_usage().unwrap().disk_bytes;
    assert!(
        before > 4_000_000,
        "the keyspace's tables are on disk: {before}"
    );
    drop(big);
    db.drop_keyspace("big").unwrap();
    let after = db.space_usage().unwrap().disk_bytes;
    assert!(
        after < before / 4,
        "dropping released the space: {before} bytes before, {after} after"
    );
    assert_eq!(
        db.stats().tables,
        tables,
        "only the default keyspace's tables"
    );
    assert_eq!(db.get("keep").unwrap(), Some(b"me".to_vec()));
}

#[test]
fn a_snapshot_reads_every_keyspace_at_one_point() {
    for f in flavors() {
        a_snapshot_reads_every_keyspace_at_one_point_in(&f);
    }
}

fn a_snapshot_reads_every_keyspace_at_one_point_in(f: &Flavor) {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), f.store.clone()).unwrap();
    let a = db.create_keyspace("a", f.plain.clone()).unwrap();
    let mut batch = WriteBatch::new();
    batch.put("k", "old").unwrap();
    batch.put_in(&a, "k", "old-a").unwrap();
    db.write(batch).unwrap();
    let snapshot = db.snapshot();
    let mut batch = WriteBatch::new();
    batch.put("k", "new").unwrap();
    batch.delete_in(&a, "k").unwrap();
    db.write(batch).unwrap();
    db.flush().unwrap();
    let at = ReadOptions {
        snapshot: Some(snapshot),
        ..ReadOptions::default()
    };
    assert_eq!(db.get_opt("k", &at).unwrap(), Some(b"old".to_vec()));
    assert_eq!(a.get_opt("k", &at).unwrap(), Some(b"old-a".to_vec()));
    assert_eq!(db.get("k").unwrap(), Some(b"new".to_vec()));
    assert_eq!(a.get("k").unwrap(), None);
}

/// Keyspace ids are per store: a batch holding another store's keyspace
/// is refused whole, and one batch cannot mix two stores' keyspaces, even
/// where both stores have a keyspace of that id.
#[test]
fn a_batch_of_another_stores_keyspace_is_refused() {
    let (dir_a, dir_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let a = Db::open(dir_a.path(), small()).unwrap();
    let b = Db::open(dir_b.path(), small()).unwrap();
    let in_a = a.create_keyspace("users", Options::default()).unwrap();
    let in_b = b.create_keyspace("users", Options::default()).unwrap();
    let mut batch = WriteBatch::new();
    batch.put("plain", "1").unwrap();
    batch.put_in(&in_a, "k", "for a").unwrap();
    let err = b.write(batch.clone()).unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
    assert_eq!(in_b.get("k").unwrap(), None);
    assert_eq!(b.get("plain").unwrap(), None, "nothing of it applied");
    let err = batch.put_in(&in_b, "k", "for b").unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
    a.write(batch).unwrap();
    assert_eq!(in_a.get("k").unwrap(), Some(b"for a".to_vec()));
    // A reopened store is another open: its old handles' batches too.
    drop((in_a, a));
    let a = Db::open(dir_a.path(), small()).unwrap();
    let dir_old = tempfile::tempdir().unwrap();
    let stale = {
        let old = Db::open(dir_old.path(), small()).unwrap();
        old.create_keyspace("users", Options::default()).unwrap()
    };
    let mut batch = WriteBatch::new();
    batch.delete_in(&stale, "k").unwrap();
    assert!(a.write(batch).is_err());
    assert_eq!(
        a.keyspace("users").unwrap().get("k").unwrap(),
        Some(b"for a".to_vec())
    );
    // Plain updates fit any store.
    let mut batch = WriteBatch::new();
    batch.put("plain", "2").unwrap();
    b.write(batch).unwrap();
}

fn triad(write_buffer_size: u64) -> Options {
    let mut o = Profile::Triad.options();
    o.write_buffer_size = write_buffer_size;
    o.target_table_size = 16 << 10;
    o
}

/// TRIAD-MEM (hot keys carried into the next memtable in a re-logged record
/// naming the keyspace) and FLUSH_TH (a log rewritten instead of a flush,
/// carrying every keyspace's memtable) in a non-default keyspace, in stores
/// of both profiles; every acknowledged write survives a process crash.
#[test]
fn triad_techniques_work_in_a_keyspace_across_crashes() {
    for store_profile in [Profile::Default, Profile::Triad] {
        let fs = FaultFs::new();
        let mut store_options = small();
        if store_profile == Profile::Triad {
            store_options = triad(64 << 10);
        }
        let mut models = vec![Model::new(), Model::new()];
        let mut rng = StdRng::seed_from_u64(7);
        for cycle in 0..3 {
            let db = open_fault(&fs, store_options.clone()).unwrap();
            let hot = db
                .keyspace("hot")
                .or_else(|_| db.create_keyspace("hot", triad(64 << 10)))
                .unwrap();
            for (space, model) in [db.keyspace("default").unwrap(), hot.clone()]
                .iter()
                .zip(&models)
            {
                assert!(
                    scan_keyspace(space) == *model,
                    "{store_profile} cycle {cycle} {}: {}",
                    space.name(),
                    diff(&scan_keyspace(space), model)
                );
            }
            for i in 0..4000u32 {
                // A few hot keys take most writes.
                let k = match rng.random_bool(0.9) {
                    true => key(rng.random_range(0..20)),
                    false => key(rng.random_range(0..2000)),
                };
                let v = format!("{cycle}.{i}.{}", "x".repeat(100)).into_bytes();
                let target = rng.random_range(0..2);
                let space = [db.keyspace("default").unwrap(), hot.clone()];
                space[target].put(&k, &v).unwrap();
                models[target].insert(k, v);
                if i % 100 == 0 {
                    // Flushes keep up, so hot keys are not in a newer
                    // immutable memtable (TRIAD-MEM carries none then).
                    db.wait_for_compactions().unwrap();
                }
            }
            let s = db.stats();
            assert!(
                s.hot_entries_kept + s.log_rewrites > 0,
                "{store_profile} cycle {cycle}: TRIAD kept keys in memory"
            );
            fs.crash_process();
            drop((db, hot));
        }
    }
}

/// The (cycle, write) a value `c{cycle}.{i}.vvv` was written at.
fn serial(value: &[u8]) -> (u32, u32) {
    let text = String::from_utf8_lossy(value);
    let mut parts = text.trim_start_matches('c').split('.');
    let mut number = || parts.next().and_then(|n| n.parse().ok()).expect("a serial");
    (number(), number())
}

/// Every batch writes the same serial number to one key in each of three
/// keyspaces (and a deletion in one of them); after power loss each key
/// holds the same serial in every keyspace (a batch is all or nothing),
/// the state is a prefix of the writes that includes every synced one, and
/// a keyspace dropped before the crash is not back.
#[test]
fn a_cross_keyspace_batch_is_all_or_nothing_after_power_loss() {
    for f in flavors() {
        a_cross_keyspace_batch_is_all_or_nothing_after_power_loss_in(&f);
    }
}

fn a_cross_keyspace_batch_is_all_or_nothing_after_power_loss_in(f: &Flavor) {
    for seed in 0..6u64 {
        let mut rng = StdRng::seed_from_u64(seed);
        let fs = FaultFs::new();
        let options = f.store.clone();
        let mut synced = vec![Model::new(); 3];
        for cycle in 0..3 {
            let db = open_fault(&fs, options.clone()).unwrap();
            let spaces: Vec<Keyspace> = ["default", "a", "b"]
                .iter()
                .map(|name| {
                    db.keyspace(name)
                        .or_else(|_| db.create_keyspace(name, f.special.clone()))
                        .unwrap()
                })
                .collect();
            assert_eq!(db.list_keyspaces(), ["default", "a", "b"]);
            let doomed = db.create_keyspace("doomed", f.plain.clone()).unwrap();
            let mut state: Vec<Model> = spaces.iter().map(scan_keyspace).collect();
            // Each key holds its last synced write or a later one (a
            // flush or funk rebalance makes unsynced writes durable too).
            for (space, want) in state.iter().zip(&synced) {
                for (k, v) in want {
                    let got = space.get(k).map(|x| serial(x));
                    assert!(
                        got.is_some_and(|got| got >= serial(v)),
                        "seed {seed} cycle {cycle}: a synced write was lost"
                    );
                }
            }
            for i in 0..rng.random_range(200..800) {
                let k = key(rng.random_range(0..100));
                let mut v = format!("c{cycle}.{i}.").into_bytes();
                v.resize(rng.random_range(20..300), b'v');
                let mut batch = WriteBatch::new();
                for space in &spaces {
                    batch.put_in(space, &k, &v).unwrap();
                }
                batch.put_in(&doomed, &k, &v).unwrap();
                let sync = rng.random_bool(0.1);
                db.write_opt(batch, WriteOptions { sync }).unwrap();
                for m in &mut state {
                    m.insert(k.clone(), v.clone());
                }
                if sync {
                    synced.clone_from(&state);
                }
                if i == 100 {
                    db.drop_keyspace("doomed").unwrap();
                }
            }
            fs.drop_unsynced();
            drop((db, spaces, doomed));
            let db = open_fault(&fs, options.clone()).unwrap();
            assert_eq!(
                db.list_keyspaces(),
                ["default", "a", "b"],
                "seed {seed} cycle {cycle}"
            );
            let got: Vec<Model> = ["default", "a", "b"]
                .iter()
                .map(|name| scan_keyspace(&db.keyspace(name).unwrap()))
                .collect();
            assert!(
                got[0] == got[1] && got[1] == got[2],
                "seed {seed} cycle {cycle}: keyspaces disagree: {}",
                diff(&got[1], &got[0])
            );
            db.close().unwrap();
            check_store_with_fs(&fault_dir(), Arc::new(fs.clone())).unwrap();
        }
    }
}

/// `Db::default_keyspace` is the store's own keyspace in both layouts:
/// what one writes the other reads, and it is listed first; `Db::exists`
/// and `Options::load` see the store once it is made.
#[test]
fn the_default_keyspace_handle_is_the_stores_own_data() {
    for f in flavors() {
        let dir = tempfile::tempdir().unwrap();
        assert!(!Db::exists(dir.path()));
        assert_eq!(Options::load(dir.path()).unwrap(), None);
        let db = Db::open(dir.path(), f.store.clone()).unwrap();
        assert!(Db::exists(dir.path()));
        let stored = Options::load(dir.path()).unwrap().expect("OPTIONS written");
        assert_eq!(
            (stored.profile, stored.layout),
            (f.store.profile, f.store.layout)
        );
        let default = db.default_keyspace();
        default.put(b"via-handle", b"1").unwrap();
        db.put(b"via-db", b"2").unwrap();
        assert_eq!(db.get(b"via-handle").unwrap().as_deref(), Some(&b"1"[..]));
        assert_eq!(default.get(b"via-db").unwrap().as_deref(), Some(&b"2"[..]));
        let other = db.create_keyspace("other", f.plain.clone()).unwrap();
        assert_eq!(other.get(b"via-db").unwrap(), None);
        assert_eq!(db.list_keyspaces()[0], default.name());
        db.close().unwrap();
        assert!(
            default.get(b"via-db").is_err(),
            "a closed store's handle reads nothing"
        );
    }
}
