//! `check_store` finds each defect its key and shape checks look for: a
//! store written by the engine checks clean, then one planted defect (a
//! table written by hand and installed through the MANIFEST, or an edited
//! chunk list) makes it fail, naming the file and the key.

use std::cmp::Ordering;
use std::path::Path;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use crate::compaction::output::meta;
use crate::db::check::check_store;
use crate::db::chunked::manifest::ChunkList;
use crate::db::Db;
use crate::error::Error;
use crate::format::internal_key::{InternalKey, ValueKind};
use crate::format::{Comparator, KeyOrder};
use crate::io::segment::encode_header;
use crate::io::{Backings, FileSystem, PosixFs};
use crate::options::{Layout, Options, PolicyKind};
use crate::stats::Counters;
use crate::table::{TableBuilder, TableOptions};
use crate::version::files::segment_path;
use crate::version::{TableMeta, VersionEdit, VersionSet};

/// Segment and table numbers of planted tables: far above any the small
/// stores below use.
const PLANTED: u64 = 9000;

fn options(policy: PolicyKind) -> Options {
    Options {
        write_buffer_size: 64 << 10,
        compaction_policy: policy,
        ..Options::default()
    }
}

/// A store the engine wrote: keys `key000`..`key199`, flushed and compacted
/// (so deeper levels hold runs), which checks clean.
fn engine_store(dir: &Path, policy: PolicyKind) {
    let db = Db::open(dir, options(policy)).unwrap();
    for i in 0..200 {
        db.put(format!("key{i:03}"), format!("value{i}")).unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    db.close().unwrap();
    check_store(dir).unwrap();
}

/// An order that reverses bytewise order, to build a table whose keys are
/// out of order for the store.
struct Reverse;

impl Comparator for Reverse {
    fn name(&self) -> &str {
        "thicketdb.test.Reverse"
    }
    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        b.cmp(a)
    }
}

/// Writes segment `number` holding one table of `entries` (user key,
/// sequence), added in `order`; returns its metadata as a flush records it.
fn planted_table(dir: &Path, number: u64, entries: &[(&str, u64)], order: KeyOrder) -> TableMeta {
    let mut file = PosixFs.create(&segment_path(dir, number)).unwrap();
    file.append(&encode_header()).unwrap();
    let options = TableOptions {
        order,
        ..TableOptions::DEFAULT
    };
    let mut builder = TableBuilder::new(&options, file.as_mut());
    for &(key, seq) in entries {
        let key = InternalKey::new(key.as_bytes(), seq, ValueKind::Value);
        builder.add(key.encoded(), b"planted").unwrap();
    }
    let s = builder.finish().unwrap();
    file.sync().unwrap();
    meta(number, number, s)
}

/// Installs `tables` (level, run, metadata) in the store's MANIFEST, as a
/// flush or compaction would, without touching the last sequence.
fn install(dir: &Path, tables: Vec<(usize, u64, TableMeta)>) {
    let fs: Arc<dyn FileSystem> = Arc::new(PosixFs);
    let recovered = VersionSet::recover(fs.as_ref(), dir, KeyOrder::Bytewise).unwrap();
    let mut set = VersionSet::open(
        fs,
        dir,
        Arc::new(Counters::default()),
        recovered,
        Arc::new(AtomicU64::new(PLANTED * 2)),
        Arc::new(Backings::default()),
    )
    .unwrap();
    let mut edit = VersionEdit::default();
    for (level, run, meta) in tables {
        edit.add_table(level, run, Arc::new(meta));
    }
    set.log_and_apply(edit).unwrap();
}

/// The check fails with corruption in segment `number` whose reason
/// contains `reason`.
fn assert_caught(dir: &Path, number: u64, reason: &str) {
    match check_store(dir) {
        Err(Error::Corruption {
            file, reason: why, ..
        }) => {
            let segment = segment_path(dir, number).display().to_string();
            assert_eq!(file, segment, "{why}");
            assert!(why.contains(reason), "{why}");
        }
        other => panic!("check_store: {other:?}, expected corruption: {reason}"),
    }
}

#[test]
fn a_table_with_keys_out_of_order_fails_the_check() {
    let dir = tempfile::tempdir().unwrap();
    engine_store(dir.path(), PolicyKind::Leveled);
    let entries = [("x3", 5), ("x2", 5), ("x1", 5)];
    let meta = planted_table(
        dir.path(),
        PLANTED,
        &entries,
        KeyOrder::custom(Arc::new(Reverse)),
    );
    install(dir.path(), vec![(0, PLANTED, meta)]);
    assert_caught(dir.path(), PLANTED, "keys out of order");
}

#[test]
fn a_key_outside_its_table_s_recorded_range_fails_the_check() {
    let dir = tempfile::tempdir().unwrap();
    engine_store(dir.path(), PolicyKind::Leveled);
    let entries = [("x1", 5), ("x2", 5), ("x3", 5)];
    let mut meta = planted_table(dir.path(), PLANTED, &entries, KeyOrder::Bytewise);
    meta.smallest = InternalKey::new(b"x2", 5, ValueKind::Value).into_vec();
    install(dir.path(), vec![(0, PLANTED, meta)]);
    assert_caught(dir.path(), PLANTED, "key \"x1\" (sequence 5) lies outside");
}

/// Two tables of one run whose recorded ranges are disjoint, but the
/// first holds a key inside the second's range: keys do not increase
/// across the run.
#[test]
fn keys_out_of_order_across_the_tables_of_a_run_fail_the_check() {
    let dir = tempfile::tempdir().unwrap();
    engine_store(dir.path(), PolicyKind::Leveled);
    let mut first = planted_table(
        dir.path(),
        PLANTED,
        &[("x1", 5), ("x5", 5)],
        KeyOrder::Bytewise,
    );
    first.largest = InternalKey::new(b"x2", 5, ValueKind::Value).into_vec();
    let second = planted_table(
        dir.path(),
        PLANTED + 1,
        &[("x3", 5), ("x4", 5)],
        KeyOrder::Bytewise,
    );
    install(dir.path(), vec![(0, PLANTED, first), (0, PLANTED, second)]);
    assert_caught(dir.path(), PLANTED, "key \"x5\" (sequence 5) lies outside");
}

#[test]
fn a_sequence_above_the_store_s_last_fails_the_check() {
    let dir = tempfile::tempdir().unwrap();
    engine_store(dir.path(), PolicyKind::Leveled);
    let entries = [("x1", 5), ("x2", 1_000_000)];
    let meta = planted_table(dir.path(), PLANTED, &entries, KeyOrder::Bytewise);
    install(dir.path(), vec![(0, PLANTED, meta)]);
    assert_caught(
        dir.path(),
        PLANTED,
        "key \"x2\" has sequence 1000000 above the store's last sequence 200",
    );
}

/// Overlapping runs in a level below L0 are a defect under the leveled
/// policy, and the same store checks clean under the tiered one.
#[test]
fn overlapping_runs_of_a_leveled_level_fail_the_check() {
    for policy in [PolicyKind::Leveled, PolicyKind::Tiered] {
        let dir = tempfile::tempdir().unwrap();
        engine_store(dir.path(), policy);
        let older = planted_table(
            dir.path(),
            PLANTED,
            &[("x1", 5), ("x4", 5)],
            KeyOrder::Bytewise,
        );
        let newer = planted_table(
            dir.path(),
            PLANTED + 1,
            &[("x3", 6), ("x6", 6)],
            KeyOrder::Bytewise,
        );
        install(
            dir.path(),
            vec![(5, PLANTED, older), (5, PLANTED + 1, newer)],
        );
        match policy {
            PolicyKind::Leveled => assert_caught(dir.path(), PLANTED, "of L5 overlap"),
            PolicyKind::Tiered => {
                check_store(dir.path()).unwrap();
            }
        }
    }
}

/// A tiered run numbered below its table is a journaled merge's interim
/// run: without a merge journal naming it (one lost from the MANIFEST),
/// the check reports it; numbered at or above its table, it is a plain run.
#[test]
fn an_interim_run_without_its_merge_journal_fails_the_check() {
    let dir = tempfile::tempdir().unwrap();
    engine_store(dir.path(), PolicyKind::Tiered);
    let plain = planted_table(dir.path(), PLANTED, &[("x1", 5)], KeyOrder::Bytewise);
    install(dir.path(), vec![(0, PLANTED, plain)]);
    check_store(dir.path()).unwrap();
    let interim = planted_table(dir.path(), PLANTED + 2, &[("x2", 6)], KeyOrder::Bytewise);
    install(dir.path(), vec![(0, PLANTED + 1, interim)]);
    assert_caught(dir.path(), PLANTED + 2, "the journal was lost");
}

/// A chunked store whose first chunk has a table: written with inline
/// rebalances and no munk (whose log limit is larger), so the table exists
/// when the writes return.
fn chunked_store(dir: &Path) -> ChunkList {
    let options = Options {
        layout: Layout::Chunked,
        chunk_size: 64 << 10,
        funk_log_limit: 2 << 10,
        chunk_rebalance_threads: 0,
        munk_cache_bytes: 0,
        row_cache_bytes: 0,
        ..Options::default()
    };
    let db = Db::open(dir, options).unwrap();
    for i in 0..200 {
        db.put(format!("key{i:03}"), format!("value{i}")).unwrap();
    }
    db.close().unwrap();
    check_store(dir).unwrap();
    let list = read_chunk_list(dir);
    let chunks = &list.keyspaces[0].chunks;
    assert!(chunks.len() == 1 && chunks[0].table_number != 0, "{list:?}");
    list
}

fn read_chunk_list(dir: &Path) -> ChunkList {
    let path = crate::db::chunked::files::chunk_list_path(dir);
    ChunkList::decode(&path, &std::fs::read(&path).unwrap()).unwrap()
}

fn write_chunk_list(dir: &Path, list: &ChunkList) {
    let path = crate::db::chunked::files::chunk_list_path(dir);
    std::fs::write(path, list.encode()).unwrap();
}

fn funk_path(dir: &Path, number: u64) -> String {
    crate::db::chunked::files::funk_table_path(dir, number)
        .display()
        .to_string()
}

/// A chunk list that starts a second chunk at `key100`, without moving
/// the first chunk's keys from `key100` on out of its table.
#[test]
fn a_funk_key_outside_its_chunk_fails_the_check() {
    let dir = tempfile::tempdir().unwrap();
    let mut list = chunked_store(dir.path());
    let log_number = list.next_file_number;
    list.next_file_number += 1;
    let log = crate::db::chunked::files::chunk_log_path(dir.path(), log_number);
    std::fs::write(log, b"").unwrap();
    let table = list.keyspaces[0].chunks[0].table_number;
    list.keyspaces[0]
        .chunks
        .push(crate::db::chunked::manifest::ChunkRecord {
            start: b"key100".to_vec(),
            table_number: 0,
            log_number,
        });
    write_chunk_list(dir.path(), &list);
    match check_store(dir.path()) {
        Err(Error::Corruption { file, reason, .. }) => {
            assert_eq!(file, funk_path(dir.path(), table), "{reason}");
            assert!(reason.contains("key \"key100\""), "{reason}");
            assert!(reason.contains("outside the table's recorded"), "{reason}");
        }
        other => panic!("check_store: {other:?}"),
    }
}

#[test]
fn a_funk_sequence_above_the_chunk_list_s_last_fails_the_check() {
    let dir = tempfile::tempdir().unwrap();
    let mut list = chunked_store(dir.path());
    let table = list.keyspaces[0].chunks[0].table_number;
    list.last_sequence = 1;
    write_chunk_list(dir.path(), &list);
    match check_store(dir.path()) {
        Err(Error::Corruption { file, reason, .. }) => {
            assert_eq!(file, funk_path(dir.path(), table), "{reason}");
            assert!(
                reason.contains("above the store's last sequence 1"),
                "{reason}"
            );
        }
        other => panic!("check_store: {other:?}"),
    }
}
