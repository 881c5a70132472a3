//! `Db::open_read_only`: a complete view (tables and unflushed logs) that
//! writes nothing, on a full disk too, beside other openers.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use thicketdb::io::fault::{FaultFs, FaultKind};
use thicketdb::{Db, Error, Options, ReadOptions, WriteBatch};

fn options() -> Options {
    Options::default()
        .write_buffer_size(64 << 10)
        .target_table_size(8 << 10)
        .block_size(512)
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:05}").into_bytes()
}

fn value(i: u32, round: u32) -> Vec<u8> {
    format!("value-{i}-{round}-{}", "x".repeat(40)).into_bytes()
}

/// Writes keys 0..400 and flushes them into tables, then overwrites the
/// even ones and deletes every fifth one without flushing (those writes
/// live only in the log). Returns what a reader must see.
fn fill(db: &Db) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut expected = BTreeMap::new();
    for i in 0..400 {
        db.put(key(i), value(i, 0)).unwrap();
        expected.insert(key(i), value(i, 0));
    }
    db.flush().unwrap();
    for i in (0..400).step_by(2) {
        db.put(key(i), value(i, 1)).unwrap();
        expected.insert(key(i), value(i, 1));
    }
    for i in (0..400).step_by(5) {
        db.delete(key(i)).unwrap();
        expected.remove(&key(i));
    }
    expected
}

fn scan(db: &Db) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut iter = db.iter(ReadOptions::default()).unwrap();
    iter.seek_to_first();
    let mut out = BTreeMap::new();
    while iter.valid() {
        out.insert(iter.key().to_vec(), iter.value().to_vec());
        iter.next();
    }
    iter.status().unwrap();
    out
}

fn assert_sees(db: &Db, expected: &BTreeMap<Vec<u8>, Vec<u8>>) {
    assert_eq!(&scan(db), expected);
    for i in 0..400 {
        assert_eq!(db.get(key(i)).unwrap().as_ref(), expected.get(&key(i)));
    }
}

fn assert_read_only(err: Error) {
    assert!(matches!(err, Error::ReadOnly(_)), "{err}");
}

#[test]
fn a_store_on_a_full_disk_is_readable() {
    let fs = FaultFs::new();
    let dir = Path::new("db");
    let db = Db::open_with_fs(dir, options(), Arc::new(fs.clone())).unwrap();
    let expected = fill(&db);
    db.close().unwrap();

    fs.set_write_error(Some(FaultKind::NoSpace));
    let err = Db::open_with_fs(dir, options(), Arc::new(fs.clone())).unwrap_err();
    assert!(err.is_no_space(), "a read-write open writes: {err}");
    let before = fs.stats();
    let files = fs.file_names();

    let db = Db::open_read_only_with_fs(dir, options(), Arc::new(fs.clone())).unwrap();
    assert!(db.is_read_only());
    assert_sees(&db, &expected);
    db.stats();
    db.space_usage().unwrap();
    assert_read_only(db.put(b"k", b"v").unwrap_err());
    db.close().unwrap();

    let after = fs.stats();
    assert_eq!(after.creates, before.creates);
    assert_eq!(after.appends, before.appends);
    assert_eq!(after.bytes_written, before.bytes_written);
    assert_eq!(after.syncs, before.syncs);
    assert_eq!(after.dir_syncs, before.dir_syncs);
    assert_eq!(after.renames, before.renames);
    assert_eq!(after.removes, before.removes);
    assert_eq!(fs.file_names(), files);
}

/// Name, length, modification time and bytes of every file in `dir`.
fn directory_state(dir: &Path) -> BTreeMap<String, (u64, std::time::SystemTime, Vec<u8>)> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| {
            let entry = entry.unwrap();
            let meta = entry.metadata().unwrap();
            let name = entry.file_name().into_string().unwrap();
            let bytes = std::fs::read(entry.path()).unwrap();
            (name, (meta.len(), meta.modified().unwrap(), bytes))
        })
        .collect()
}

#[test]
fn reading_leaves_the_directory_byte_for_byte_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options()).unwrap();
    let expected = fill(&db);
    db.close().unwrap();
    let before = directory_state(dir.path());

    let db = Db::open_read_only(dir.path(), options()).unwrap();
    assert_sees(&db, &expected);
    let stats = db.stats();
    assert!(stats.tables > 0, "part of the data is in tables");
    db.space_usage().unwrap();
    db.wait_for_compactions().unwrap();
    assert_read_only(db.flush().unwrap_err());
    assert_read_only(db.compact_range(None, None).unwrap_err());
    assert_read_only(db.delete(b"k").unwrap_err());
    let mut batch = WriteBatch::new();
    batch.put(b"k", b"v").unwrap();
    assert_read_only(db.write(batch).unwrap_err());
    db.close().unwrap();
    thicketdb::check::check_store(dir.path()).unwrap();

    assert_eq!(directory_state(dir.path()), before);
}

#[test]
fn writes_only_in_the_log_are_visible() {
    let dir = tempfile::tempdir().unwrap();
    let roomy = options().write_buffer_size(4 << 20);
    let db = Db::open(dir.path(), roomy).unwrap();
    // Three rounds over the same keys, never flushed: the log holds several
    // of the read-only open's memtables' worth, replayed into memtables kept
    // in memory.
    let mut expected = BTreeMap::new();
    for round in 0..3 {
        for i in 0..400 {
            db.put(key(i), value(i, round)).unwrap();
            expected.insert(key(i), value(i, round));
        }
    }
    db.close().unwrap();

    let db = Db::open_read_only(dir.path(), options()).unwrap();
    let stats = db.stats();
    assert_eq!(stats.tables, 0, "nothing was flushed");
    assert!(
        stats.immutable_memtables >= 2,
        "the unflushed writes are in kept memtables: {stats:?}"
    );
    assert_sees(&db, &expected);
    assert_eq!(stats.last_sequence, 1200);
    db.close().unwrap();
}

#[test]
fn read_only_opens_do_not_contend_with_each_other_or_a_writer() {
    let dir = tempfile::tempdir().unwrap();
    let writer = Db::open(dir.path(), options()).unwrap();
    let expected = fill(&writer);

    let first = Db::open_read_only(dir.path(), options()).unwrap();
    let second = Db::open_read_only(dir.path(), options()).unwrap();
    assert_sees(&first, &expected);
    assert_sees(&second, &expected);

    // The writer goes on; the read-only views keep the state they opened.
    writer.put(key(1), b"later").unwrap();
    writer.flush().unwrap();
    assert_eq!(first.get(key(1)).unwrap().as_ref(), expected.get(&key(1)));
    first.close().unwrap();
    second.close().unwrap();
    assert_eq!(writer.get(key(1)).unwrap(), Some(b"later".to_vec()));
    writer.close().unwrap();
    thicketdb::check::check_store(dir.path()).unwrap();
}

#[test]
fn a_missing_store_is_an_error_and_nothing_is_created() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("absent");
    let err = Db::open_read_only(&path, options()).unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
    assert!(!path.exists());
}

#[test]
fn a_closed_read_only_store_refuses_reads() {
    let dir = tempfile::tempdir().unwrap();
    Db::open(dir.path(), options()).unwrap().close().unwrap();
    let db = Db::open_read_only(dir.path(), options()).unwrap();
    let other = db.clone();
    db.close().unwrap();
    assert_eq!(other.get(b"k").unwrap_err(), Error::Closed);
}

/// A small tmpfs mounted for one test, unmounted on drop.
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    /// `None` (the test is skipped) when mounting is not allowed here.
    fn mount(size: &str) -> Option<Tmpfs> {
        let dir = tempfile::tempdir().ok()?;
        let mounted = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        mounted.then_some(Tmpfs { dir })
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg(self.dir.path())
            .status();
    }
}

#[test]
fn a_store_on_a_full_tmpfs_is_readable() {
    let Some(tmpfs) = Tmpfs::mount("4m") else {
        eprintln!("skipped: cannot mount a tmpfs (needs root)");
        return;
    };
    let dir = tmpfs.dir.path().join("db");
    let db = Db::open(&dir, options()).unwrap();
    let mut acked = BTreeMap::new();
    for i in 0.. {
        let value = vec![b'a' + (i % 26) as u8; 2048];
        match db.put(key(i), &value) {
            Ok(()) => acked.insert(key(i), value),
            Err(e) => {
                assert!(e.is_no_space(), "{e}");
                break;
            }
        };
    }
    assert!(!acked.is_empty());
    drop(db);
    // Fill whatever room is left, so nothing more can be written.
    let filler = tmpfs.dir.path().join("filler");
    let mut file = std::fs::File::create(&filler).unwrap();
    let chunk = vec![0u8; 4096];
    while std::io::Write::write_all(&mut file, &chunk).is_ok() {}
    drop(file);

    let err = Db::open(&dir, options()).unwrap_err();
    assert!(err.is_no_space(), "a read-write open writes: {err}");
    let db = Db::open_read_only(&dir, options()).unwrap();
    assert_eq!(scan(&db), acked);
    db.close().unwrap();
}

#[test]
fn opens_beside_a_flushing_writer_see_a_prefix_of_its_writes() {
    let dir = tempfile::tempdir().unwrap();
    // No compactions: the writer deletes no table a view still reads; it
    // flushes (and deletes the flushed logs) all the time.
    let options = options()
        .disable_auto_compactions(true)
        .l0_slowdown_writes_trigger(10_000)
        .l0_stop_writes_trigger(10_000);
    let writer = Db::open(dir.path(), options.clone()).unwrap();
    let total = 30_000u32;
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let thread = {
        let (db, done) = (writer.clone(), done.clone());
        std::thread::spawn(move || {
            for i in 0..total {
                db.put(key(i), value(i, 0)).unwrap();
            }
            done.store(true, std::sync::atomic::Ordering::Release);
        })
    };
    let mut opens = 0;
    let mut last_seen = 0;
    while opens < 5 || !done.load(std::sync::atomic::Ordering::Acquire) {
        let view = Db::open_read_only(dir.path(), options.clone()).unwrap();
        let seen = scan(&view);
        let n = seen.len() as u32;
        let prefix: BTreeMap<_, _> = (0..n).map(|i| (key(i), value(i, 0))).collect();
        assert!(seen == prefix, "open {opens}: {n} keys, not the first {n}");
        assert!(n >= last_seen);
        last_seen = n;
        view.close().unwrap();
        opens += 1;
    }
    thread.join().unwrap();
    assert!(writer.stats().flushes > 5, "the writer flushed meanwhile");
    writer.close().unwrap();
}
