//! `Db::sync_log`: a sync without a write. Oracles: the power-loss view of
//! `FaultFs` (what survives `drop_unsynced`) and its own `FaultStats`.

mod common;

use common::{open_fault, show};
use thicketdb::io::fault::{FaultFs, FaultKind};
use thicketdb::{Db, Durability, Layout, Options, Profile, WriteOptions};

fn key(i: u32) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

fn value(i: u32) -> Vec<u8> {
    format!("value {i} {}", "x".repeat(100)).into_bytes()
}

/// Every profile, plus the chunked layout's asynchronous durability; small
/// memtables (and chunk logs) so that the writes cross log switches.
fn every_configuration() -> Vec<(String, Options)> {
    let mut all: Vec<(String, Options)> = Profile::ALL
        .iter()
        .map(|p| (p.to_string(), p.options().write_buffer_size(64 << 10)))
        .collect();
    let mut async_yodb = Profile::YoDb.options().write_buffer_size(64 << 10);
    async_yodb.durability = Durability::Async;
    all.push(("yodb durability=async".into(), async_yodb));
    all
}

fn write_unsynced(db: &Db, range: std::ops::Range<u32>) {
    for i in range {
        db.put_opt(key(i), value(i), WriteOptions { sync: false })
            .unwrap();
    }
}

#[test]
fn writes_before_a_sync_log_survive_power_loss_on_every_profile() {
    for (name, options) in every_configuration() {
        let fs = FaultFs::new();
        let db = open_fault(&fs, options.clone()).unwrap();
        // About 30 memtables' worth before the sync: the switches leave
        // logs unsynced, which the sync must cover too.
        write_unsynced(&db, 0..3_000);
        db.sync_log().unwrap();
        write_unsynced(&db, 3_000..3_500);
        fs.drop_unsynced();
        drop(db);
        let db = open_fault(&fs, options).unwrap();
        for i in 0..3_000 {
            let got = db.get(key(i)).unwrap();
            assert_eq!(
                got.as_deref(),
                Some(&value(i)[..]),
                "{name}: write {i} came before the sync_log, and power loss lost it (got {:?})",
                got.as_deref().map(show)
            );
        }
        // The unsynced rest survives as a prefix, if at all.
        let survived = (3_000..3_500)
            .take_while(|&i| db.get(key(i)).unwrap().is_some())
            .count() as u32;
        for i in 3_000 + survived..3_500 {
            assert_eq!(
                db.get(key(i)).unwrap(),
                None,
                "{name}: write {i} survived, but write {} before it did not",
                3_000 + survived
            );
        }
    }
}

/// A store of each LSM profile on its own `FaultFs`, ten unsynced writes
/// in.
fn lsm_stores_with_ten_writes() -> impl Iterator<Item = (Profile, FaultFs, Db)> {
    Profile::ALL
        .iter()
        .filter(|p| p.options().layout == Layout::Lsm)
        .map(|&profile| {
            let fs = FaultFs::new();
            let db = open_fault(&fs, profile.options()).unwrap();
            write_unsynced(&db, 0..10);
            (profile, fs, db)
        })
}

#[test]
fn a_sync_log_appends_nothing_and_syncs_only_the_log() {
    for (profile, fs, db) in lsm_stores_with_ten_writes() {
        // The first sync also makes the new log's directory entry durable.
        db.sync_log().unwrap();
        write_unsynced(&db, 10..20);
        let before = fs.stats();
        db.sync_log().unwrap();
        let after = fs.stats();
        assert_eq!(
            after.bytes_appended, before.bytes_appended,
            "{profile}: sync_log wrote to a file"
        );
        assert_eq!(
            (
                after.syncs - before.syncs,
                after.dir_syncs - before.dir_syncs
            ),
            (1, 0),
            "{profile}: one fdatasync of the current log, nothing else"
        );
    }
}

#[test]
fn a_failed_sync_log_fails_the_writes_after_it() {
    for (profile, fs, db) in lsm_stores_with_ten_writes() {
        fs.set_write_error(Some(FaultKind::Io));
        assert!(db.sync_log().is_err(), "{profile}: the sync failed");
        fs.clear_faults();
        // The pages the failed fdatasync dropped may be gone: acknowledging
        // a later synced write would claim them durable.
        assert!(
            db.put_opt(b"after", b"x", WriteOptions { sync: true })
                .is_err(),
            "{profile}: a write after a failed sync_log was accepted"
        );
        assert!(db.sync_log().is_err(), "{profile}: a later sync_log passed");
    }
}

#[test]
fn a_read_only_store_refuses_sync_log() {
    let dir = tempfile::tempdir().unwrap();
    Db::open(dir.path(), Options::default())
        .unwrap()
        .close()
        .unwrap();
    let db = Db::open_read_only(dir.path(), Options::default()).unwrap();
    let err = db.sync_log().unwrap_err();
    assert!(
        err.to_string().contains("sync_log"),
        "the error names what was refused: {err}"
    );
}
