//! Golden on-disk fixtures: small stores committed under `tests/fixtures`,
//! one per profile (and YoDB's asynchronous durability, whose store has a
//! `CHECKPOINT`, and SifrDB mid-way through a journaled merge), in a
//! directory per generation of the on-disk formats
//! (`manifest<V>-chunks<V>`). Every later build must open them and read
//! back exactly the contents the generator wrote, so a format change that
//! breaks existing stores fails here (`docs/format.md`, *Golden
//! fixtures*).
//!
//! Regenerate (writes the current formats' fixtures that are missing; the
//! committed ones and older generations stay):
//! `cargo test --release -p thicketdb --test golden -- --ignored make_fixtures`.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use common::tiny_tree;

use thicketdb::check::check_store;
use thicketdb::io::fault::{FaultFs, FaultKind};
use thicketdb::io::FileSystem;
use thicketdb::{Db, Durability, Options, Printable, Profile, ReadOptions, WriteOptions};

/// Per keyspace, its keys and values.
type Contents = BTreeMap<String, BTreeMap<Vec<u8>, Vec<u8>>>;

fn fixtures_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// The directory of the current formats' generation.
fn generation() -> String {
    format!(
        "manifest{}-chunks{}",
        thicketdb::version::edit::MANIFEST_FORMAT_VERSION,
        thicketdb::internals::CHUNK_LIST_VERSION
    )
}

/// Small limits so that a few hundred writes make tables on several
/// levels (chunk splits and funk tables in the chunked layout).
fn small(options: Options) -> Options {
    // The shapes of tests/model.rs.
    let mut o = tiny_tree(options, 32 << 10)
        .level_size_multiplier(2)
        .lsbm_trim_interval(0);
    o.chunk_size = 8 << 10;
    o.funk_log_limit = 2 << 10;
    o.funk_log_limit_with_munk = 4 << 10;
    o.chunk_rebalance_threads = 0;
    o
}

/// Writes a fixture's store into a directory with the given options and
/// returns what it must hold.
type Writer = fn(&Path, &Options) -> Contents;

/// Every fixture: its name, the options it is written with and its writer.
fn fixtures() -> Vec<(String, Options, Writer)> {
    let mut all: Vec<(String, Options, Writer)> = Profile::ALL
        .iter()
        .map(|&p| {
            (
                p.name().to_string(),
                small(p.options()),
                write_store as Writer,
            )
        })
        .collect();
    all.push((
        "yodb-async".to_string(),
        small(Profile::YoDb.options()).durability(Durability::Async),
        write_store,
    ));
    all.push((
        MID_MERGE.to_string(),
        mid_merge_options(),
        write_mid_merge_store,
    ));
    all
}

/// SifrDB's store left in the middle of a journaled merge.
const MID_MERGE: &str = "sifr-mid-merge";

/// `sifr` checkpointing its merges every two tables; L0 holds every run
/// until a manual compaction merges them (as in `tests/compaction.rs`).
fn mid_merge_options() -> Options {
    small(Profile::Sifr.options())
        .early_cleaning_threshold(2)
        .disable_auto_compactions(true)
        .runs_per_level(1000)
        .l0_slowdown_writes_trigger(1000)
        .l0_stop_writes_trigger(1000)
        .l0_compaction_trigger(1000)
}

/// Writes a store whose L0 merge ran out of disk space after a few of its
/// checkpoints: the MANIFEST holds the merge journal (the interim run, the
/// inputs released, where to resume) that opening must honour. Written on
/// a `FaultFs` (where the disk fills on cue), then copied to `dir` as a
/// process exit leaves it.
fn write_mid_merge_store(dir: &Path, options: &Options) -> Contents {
    let fs = FaultFs::new();
    let at = PathBuf::from("db");
    let db = Db::open_with_fs(&at, options.clone(), Arc::new(fs.clone())).unwrap();
    let mut model = BTreeMap::new();
    for round in 0..2u32 {
        for i in (0..1200u32).filter(|i| round == 0 || i % 3 == 0) {
            db.put(key(i), value(i, round)).unwrap();
            model.insert(key(i), value(i, round));
        }
        for i in (0..1200u32).filter(|i| i % (11 + round) == 0) {
            db.delete(key(i)).unwrap();
            model.remove(&key(i));
        }
        db.flush().unwrap();
    }
    assert!(db.stats().runs_per_level[0] > 2, "{:?}", db.stats());
    // Room for a few checkpoints of the L0 merge, not for all of it.
    fs.fail_after_bytes(80 << 10, FaultKind::NoSpace);
    let err = db.compact_range(None, None).unwrap_err();
    assert!(err.is_no_space(), "{err}");
    assert!(db.stats().merge_checkpoints > 0, "{:?}", db.stats());
    drop(db);
    fs.clear_faults();
    std::fs::create_dir_all(dir).unwrap();
    for file in fs.file_names() {
        let name = file.file_name().unwrap();
        if name != "LOCK" {
            std::fs::write(dir.join(name), fs.read_to_vec(&file).unwrap()).unwrap();
        }
    }
    [("default".to_string(), model)].into()
}

fn value(i: u32, round: u32) -> Vec<u8> {
    let pad = "abcdefghijklmnopq".repeat((i % 5) as usize);
    format!("value-{i:04}-round{round}-{pad}").into_bytes()
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:04}").into_bytes()
}

/// Writes the fixture store into `dir` with fixed writes (puts,
/// overwrites, deletions, a range deletion, a second keyspace, flushes and
/// a compaction, and synced writes left in the log); returns what it must
/// hold, from a model of those writes.
fn write_store(dir: &Path, options: &Options) -> Contents {
    let db = Db::open(dir, options.clone()).unwrap();
    let other = db.create_keyspace("other", options.clone()).unwrap();
    let mut model = Contents::new();
    let (main, side) = ("default".to_string(), "other".to_string());
    for round in 0..3u32 {
        for i in (0..400u32).filter(|i| round == 0 || i % (round + 2) == 0) {
            db.put(key(i), value(i, round)).unwrap();
            model
                .entry(main.clone())
                .or_default()
                .insert(key(i), value(i, round));
        }
        for i in (0..400u32).filter(|i| i % (7 + round) == 0) {
            db.delete(key(i)).unwrap();
            model.entry(main.clone()).or_default().remove(&key(i));
        }
        db.flush().unwrap();
    }
    db.delete_range(key(100), key(120)).unwrap();
    model
        .entry(main.clone())
        .or_default()
        .retain(|k, _| !(key(100)..key(120)).contains(k));
    for i in 0..60u32 {
        other.put(key(i), value(i, 9)).unwrap();
        model
            .entry(side.clone())
            .or_default()
            .insert(key(i), value(i, 9));
    }
    db.compact_range(None, None).unwrap();
    // Synced writes after the last flush: recovered from the log.
    for i in 400..420u32 {
        db.put_opt(key(i), value(i, 0), WriteOptions { sync: true })
            .unwrap();
        model
            .entry(main.clone())
            .or_default()
            .insert(key(i), value(i, 0));
    }
    db.close().unwrap();
    model
}

/// Every keyspace's keys and values, read through `db`.
fn read_all(db: &Db) -> Contents {
    let mut contents = Contents::new();
    for name in db.list_keyspaces() {
        let keyspace = db.keyspace(&name).unwrap();
        let mut it = keyspace.iter(ReadOptions::default()).unwrap();
        it.seek_to_first();
        let entries = contents.entry(name).or_default();
        while it.valid() {
            entries.insert(it.key().to_vec(), it.value().to_vec());
            it.next();
        }
        it.status().unwrap();
    }
    contents
}

/// One line per entry: keyspace, key and value, tab-separated, escaped.
fn listing(contents: &Contents) -> String {
    let mut out = String::new();
    for (keyspace, entries) in contents {
        for (k, v) in entries {
            out += &format!("{keyspace}\t{}\t{}\n", Printable(k), Printable(v));
        }
    }
    out
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

/// Options a fixture's `OPTIONS` records (opening with others is refused).
fn recorded_options(dir: &Path) -> Options {
    let path = dir.join("OPTIONS");
    Options::decode(&path.display().to_string(), &std::fs::read(&path).unwrap()).unwrap()
}

#[test]
#[ignore = "writes the fixtures of the current formats into the source tree"]
fn make_fixtures() {
    let root = fixtures_root().join(generation());
    for (name, options, write) in fixtures() {
        let fixture = root.join(&name);
        // A committed fixture is the reference: only missing ones (a new
        // profile, a new generation) are written. Delete one to rewrite it.
        if fixture.exists() {
            continue;
        }
        let store = fixture.join("store");
        let model = write(&store, &options);
        // The LOCK file is the store's, not data: a fresh open makes it.
        let _ = std::fs::remove_file(store.join("LOCK"));
        std::fs::write(fixture.join("contents.txt"), listing(&model)).unwrap();
        check_fixture(&fixture);
    }
}

/// Opens a copy of `fixture`'s store: it checks clean before the open and
/// reads back `contents.txt`, after the open and after a reopen.
fn check_fixture(fixture: &Path) {
    let scratch = tempfile::tempdir().unwrap();
    let store = scratch.path().join("store");
    copy_dir(&fixture.join("store"), &store);
    let what = fixture.display();
    if let Err(e) = check_store(&store) {
        panic!("{what}: check_store: {e}");
    }
    let want = std::fs::read_to_string(fixture.join("contents.txt")).unwrap();
    let options = recorded_options(&store);
    for open in ["open", "reopen"] {
        let db =
            Db::open(&store, options.clone()).unwrap_or_else(|e| panic!("{what}: {open}: {e}"));
        let got = listing(&read_all(&db));
        assert!(
            got == want,
            "{what}: {open}: contents differ from contents.txt ({} against {} lines)",
            got.lines().count(),
            want.lines().count()
        );
        db.close().unwrap();
    }
}

#[test]
fn every_fixture_opens_and_reads_back_what_was_written() {
    let root = fixtures_root();
    let mut generations: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    generations.sort();
    assert!(
        generations.iter().any(|g| g.ends_with(generation())),
        "no fixtures of the current formats ({}): run make_fixtures",
        generation()
    );
    for generation in generations {
        let current = generation.ends_with(self::generation());
        for (name, ..) in fixtures() {
            let fixture = generation.join(&name);
            // An older generation may predate a fixture (a new profile).
            if !current && !fixture.exists() {
                continue;
            }
            assert!(fixture.is_dir(), "{} is missing", fixture.display());
            check_fixture(&fixture);
        }
    }
}

/// The mid-merge fixture still is one: its store holds an interrupted
/// journaled merge, which a manual compaction resumes (before anything
/// else) and finishes, leaving the contents as they were.
#[test]
fn the_mid_merge_fixture_resumes_its_journaled_merge() {
    let fixture = fixtures_root().join(generation()).join(MID_MERGE);
    let scratch = tempfile::tempdir().unwrap();
    let store = scratch.path().join("store");
    copy_dir(&fixture.join("store"), &store);
    // Before the open: the check sees the interim run and the journal that
    // names it (a MANIFEST decoder that dropped the journal fails here).
    check_store(&store).unwrap_or_else(|e| panic!("check of the mid-merge fixture: {e}"));
    // No background compaction (the flag is not recorded in OPTIONS): one
    // would resume the merge at open, racing the first `stats` below.
    let options = recorded_options(&store).disable_auto_compactions(true);
    let db = Db::open(&store, options).unwrap();
    let before = db.stats();
    assert!(before.merge_in_progress, "{before:?}");
    db.compact_range(None, None).unwrap();
    let after = db.stats();
    assert!(!after.merge_in_progress, "{after:?}");
    assert_eq!(after.merges_resumed, before.merges_resumed + 1, "{after:?}");
    let want = std::fs::read_to_string(fixture.join("contents.txt")).unwrap();
    assert!(listing(&read_all(&db)) == want);
    db.close().unwrap();
    check_store(&store).unwrap();
}
