//! Repair (LevelDB's `RepairDB`): rebuilds the MANIFEST from the tables that
//! survive in the segment files.
//!
//! Segments do not list their tables, but every table ends with a footer
//! that starts with its magic number, is covered by a checksum and locates
//! the index block, which is the last block before the footer: a footer at
//! byte `end` therefore gives the table's start. Every table found is opened
//! and its checksums verified. From a table with damaged data blocks the
//! entries of the blocks that still verify are salvaged into a new table
//! (as LevelDB's repair does); a table whose footer, index or metadata is
//! damaged is dropped. The report names every damaged table and what was
//! lost. Survivors go to L0, one run each, ordered by their newest sequence
//! number, as LevelDB's repair does; compaction then rebuilds the tree. Logs
//! are left in place and replayed by the next open.
//!
//! Log tables (TRIAD-LOG) keep their values in logs: one is kept only when
//! every value it references reads back from its log (checksums verified),
//! and the new MANIFEST records its logs, so the store keeps them as long as
//! the table lives. A damaged log table's values that still read back are
//! salvaged into a regular table. Logs up to the newest one a kept log
//! table references were flushed (flushes go oldest first) and are not
//! replayed: replaying one would put its old versions above newer data in
//! the rebuilt L0. Without log tables the new MANIFEST's log number is 0.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use crate::compaction::output::{OutputSink, OutputSpec};
use crate::error::{Error, Result};
use crate::format::internal_key::ParsedKey;
use crate::format::range_tombstone::Fragments;
use crate::io::backing::Backings;
use crate::io::segment::{verify_header, SEGMENT_HEADER_LEN};
use crate::io::{FileSystem, PosixFs, RandomAccessFile};
use crate::iterator::{InternalIterator, VecIterator};
use crate::options::Options;
use crate::stats::Counters;
use crate::table::{
    is_put, BlockIter, Footer, Table, TableContext, TableOptions, BLOCK_TRAILER_LEN, FOOTER_LEN,
    TABLE_MAGIC,
};
use crate::version::edit::KeyspaceDef;
use crate::version::files::{
    current_path, lock_path, options_path, parse_file_name, segment_path, temp_path, FileKind,
};
use crate::version::log_values::StoreLogs;
use crate::version::set::RecoveredKeyspace;
use crate::version::{Sketch, TableMeta, Version, VersionEdit, VersionSet};

/// What a repair found and kept.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RepairReport {
    /// Segment files scanned.
    pub segments: usize,
    /// Tables recovered into the new MANIFEST.
    pub tables: usize,
    /// Entries (puts and deletions) in those tables.
    pub entries: u64,
    /// Bytes of those tables.
    pub bytes: u64,
    /// Log files left for the next open to replay.
    pub logs: usize,
    /// Tables (among `tables`) rebuilt from the intact blocks of a damaged
    /// table.
    pub salvaged: usize,
    /// Damage found: each damaged table or segment, and what was lost.
    pub dropped: Vec<String>,
}

impl fmt::Display for RepairReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "recovered {} tables ({} salvaged; {} entries, {} bytes) from {} segments; \
             {} logs to replay",
            self.tables, self.salvaged, self.entries, self.bytes, self.segments, self.logs
        )?;
        if !self.dropped.is_empty() {
            write!(f, "; dropped: {}", self.dropped.join("; "))?;
        }
        Ok(())
    }
}

/// Rebuilds the MANIFEST of the store in `dir` from its segment files. The
/// store must not be open. `options` is written as the store's `OPTIONS`
/// when that file is missing or damaged.
pub fn repair(dir: impl AsRef<Path>, options: &Options) -> Result<RepairReport> {
    let dir = dir.as_ref();
    let fs: Arc<dyn FileSystem> = Arc::new(PosixFs);
    if !dir.is_dir() {
        return Err(Error::InvalidArgument(format!(
            "no store directory {}",
            dir.display()
        )));
    }
    let _lock = fs.lock(&lock_path(dir))?;
    let names = fs.list(dir)?;
    let mut report = RepairReport::default();
    let mut segments = Vec::new();
    let mut manifests = Vec::new();
    let mut highest = 0;
    for name in &names {
        match parse_file_name(name) {
            Some(FileKind::Segment(n)) => segments.push(n),
            Some(FileKind::Manifest(n)) => manifests.push(n),
            Some(FileKind::Log(_)) => report.logs += 1,
            _ => {}
        }
        if let Some(FileKind::Segment(n) | FileKind::Manifest(n) | FileKind::Log(n)) =
            parse_file_name(name)
        {
            highest = highest.max(n);
        }
    }
    segments.sort_unstable();
    let next_file = Arc::new(AtomicU64::new(highest + 1));
    let new_number = || next_file.fetch_add(1, std::sync::atomic::Ordering::SeqCst);

    let logs = Arc::new(StoreLogs::new(dir, fs.clone(), 0));
    let mut tables = Vec::new();
    let mut salvaged = Vec::new();
    for &segment in &segments {
        report.segments += 1;
        let path = segment_path(dir, segment);
        let file = fs.open_random(&path)?;
        let data = read_all(file.as_ref())?;
        if let Err(e) = verify_header(&path, &data) {
            report.dropped.push(format!("segment header: {e}"));
        }
        for (offset, length) in table_candidates(&data) {
            let at = (segment, offset, length);
            match recover_table(file.clone(), &path, at, options, &logs) {
                Ok(Recovery::Intact(Some(found))) => tables.push(found),
                Ok(Recovery::Intact(None)) => {}
                Ok(Recovery::Damaged {
                    why,
                    keyspace,
                    entries,
                    range_dels,
                    lost_blocks,
                    blocks,
                }) => {
                    report.dropped.push(format!(
                        "{why}: salvaged {} entries, lost {lost_blocks} of {blocks} blocks",
                        entries.len()
                    ));
                    if !entries.is_empty() || !range_dels.is_empty() {
                        salvaged.push((keyspace, entries, range_dels));
                    }
                }
                Err(e) => report.dropped.push(format!("{e}: table dropped")),
            }
        }
    }
    for (keyspace, entries, range_dels) in salvaged {
        let written = write_salvaged(
            fs.as_ref(),
            dir,
            options,
            keyspace,
            entries,
            range_dels,
            &new_number,
        )?;
        report.salvaged += written.len();
        tables.extend(written.into_iter().map(|t| (keyspace, t)));
    }

    ensure_options(fs.as_ref(), dir, options)?;
    let mut known = known_keyspaces(fs.as_ref(), dir, options);
    let mut by_keyspace: BTreeMap<u32, Vec<TableMeta>> = BTreeMap::new();
    for (keyspace, t) in tables {
        by_keyspace.entry(keyspace).or_default().push(t);
    }
    if !known.manifest_read {
        // No MANIFEST to name them: every keyspace a table names comes
        // back, under a name of its id and the options given.
        for &id in by_keyspace.keys().filter(|&&id| id != 0) {
            let def = KeyspaceDef {
                name: format!("recovered-{id}"),
                options: options.encode(),
            };
            known.defs.push((id, def));
        }
    }
    let mut last_sequence = 0;
    let mut recovered = VersionSet::empty(options.comparator.clone());
    let default_tables = by_keyspace.remove(&0).unwrap_or_default();
    (recovered.version, recovered.log_number) = rebuild(
        default_tables,
        options,
        &new_number,
        &mut report,
        &mut last_sequence,
    )?;
    for (id, def) in known.defs {
        let tables = by_keyspace.remove(&id).unwrap_or_default();
        let (version, log_number) = rebuild(
            tables,
            options,
            &new_number,
            &mut report,
            &mut last_sequence,
        )?;
        recovered.next_keyspace_id = recovered.next_keyspace_id.max(id + 1);
        recovered.keyspaces.push(RecoveredKeyspace {
            id,
            def,
            version,
            log_number,
        });
    }
    for (id, tables) in by_keyspace {
        report.dropped.push(format!(
            "{} tables of keyspace {id}, which the MANIFEST does not name (dropped)",
            tables.len()
        ));
    }
    recovered.next_keyspace_id = recovered.next_keyspace_id.max(known.next_id);
    recovered.next_file_number = next_file.load(std::sync::atomic::Ordering::SeqCst);
    recovered.last_sequence = last_sequence;
    let set = VersionSet::open(
        fs.clone(),
        dir,
        Arc::new(Counters::default()),
        recovered,
        next_file.clone(),
        Arc::new(Backings::default()),
    )?;
    debug_assert!(fs.exists(&current_path(dir)));
    for old in manifests {
        if old != set.manifest_number() {
            // An old MANIFEST left behind is unused; the next repair or
            // destroy removes it.
            let _ = fs.remove(&dir.join(crate::version::files::manifest_name(old)));
        }
    }
    Ok(report)
}

fn read_all(file: &dyn RandomAccessFile) -> Result<Vec<u8>> {
    let len = usize::try_from(file.len()?)
        .map_err(|_| Error::InvalidArgument("segment larger than memory".to_string()))?;
    let mut data = vec![0; len];
    file.read_exact_at(0, &mut data)?;
    Ok(data)
}

/// `(offset, length)` of every table whose footer checks out in `data`.
fn table_candidates(data: &[u8]) -> Vec<(u64, u64)> {
    let magic = TABLE_MAGIC.to_le_bytes();
    let magic_in_footer = FOOTER_LEN - 12;
    let mut found = Vec::new();
    let mut end = SEGMENT_HEADER_LEN as usize + FOOTER_LEN;
    while end <= data.len() {
        let footer = &data[end - FOOTER_LEN..end];
        if footer[magic_in_footer..magic_in_footer + 8] == magic {
            if let Ok(f) = Footer::decode(footer) {
                let length = f
                    .index
                    .offset
                    .checked_add(f.index.size)
                    .and_then(|n| n.checked_add((BLOCK_TRAILER_LEN + FOOTER_LEN) as u64));
                if let Some(start) = length.and_then(|l| (end as u64).checked_sub(l)) {
                    if start >= SEGMENT_HEADER_LEN {
                        found.push((start, end as u64 - start));
                        end += FOOTER_LEN;
                        continue;
                    }
                }
            }
        }
        end += 1;
    }
    found
}

/// Internal keys and values, in order.
type Entries = Vec<(Vec<u8>, Vec<u8>)>;

/// What a table found in a segment yields.
enum Recovery {
    /// Every block verified (`None` for an empty table), with the table's
    /// keyspace id.
    Intact(Option<(u32, TableMeta)>),
    /// Some data blocks failed: the entries of the others, in order.
    Damaged {
        why: Error,
        keyspace: u32,
        entries: Entries,
        /// The table's range tombstones (their block verified at open).
        range_dels: Fragments,
        lost_blocks: usize,
        blocks: usize,
    },
}

/// Opens and verifies one table; an error means its footer, index or
/// metadata blocks are damaged.
fn recover_table(
    file: Arc<dyn RandomAccessFile>,
    path: &Path,
    (segment, offset, length): (u64, u64, u64),
    options: &Options,
    logs: &Arc<StoreLogs>,
) -> Result<Recovery> {
    let context = TableContext {
        order: options.comparator.clone(),
        value_log: Some(logs.clone()),
        ..TableContext::default()
    };
    let table = Table::open(file, path.to_path_buf(), segment, offset, length, context)?;
    if let Err(why) = table.verify_checksums() {
        let (entries, lost_blocks) = salvage(&table);
        return Ok(Recovery::Damaged {
            why,
            keyspace: table.properties().keyspace,
            entries,
            range_dels: Fragments::clone(table.range_deletions()),
            lost_blocks,
            blocks: table.index().len(),
        });
    }
    let p = table.properties();
    if p.entries == 0 && table.range_deletions().is_empty() {
        return Ok(Recovery::Intact(None));
    }
    Ok(Recovery::Intact(Some((
        p.keyspace,
        TableMeta {
            id: 0,
            segment,
            offset,
            length,
            smallest: p.smallest_key.clone(),
            largest: p.largest_key.clone(),
            entries: p.entries,
            min_seq: p.min_seq,
            max_seq: p.max_seq,
            // Read from the table's properties when a policy asks, as after
            // any reopen.
            sketch: Sketch::default(),
            logs: p.log_refs.clone(),
        },
    ))))
}

/// The entries of every data block of `table` that verifies (well-formed
/// internal keys in increasing order), and the number of blocks lost.
fn salvage(table: &Table) -> (Entries, usize) {
    let index = table.index();
    let mut entries: Entries = Vec::new();
    let mut lost = 0;
    for i in 0..index.len() {
        let Ok(block) = table.block(index.handle(i), false) else {
            lost += 1;
            continue;
        };
        let mut it = BlockIter::new(&block, table.order().clone());
        it.seek_to_first();
        while it.valid() {
            let in_order = entries
                .last()
                .is_none_or(|(last, _)| table.order().internal(last, it.key()).is_lt());
            if ParsedKey::parse(it.key()).is_some() && in_order {
                match table.value_log().filter(|_| is_put(it.key())) {
                    None => entries.push((it.key().to_vec(), it.value().to_vec())),
                    // A log table's value is salvaged only if it reads back.
                    Some(log) => {
                        let mut value = Vec::new();
                        if log
                            .read_value(it.value(), &mut value, (table.path(), 0))
                            .is_ok()
                        {
                            entries.push((it.key().to_vec(), value));
                        }
                    }
                }
            }
            it.next();
        }
        if it.status().is_err() {
            lost += 1;
        }
    }
    (entries, lost)
}

/// Writes salvaged entries as new tables in a new segment.
fn write_salvaged(
    fs: &dyn FileSystem,
    dir: &Path,
    options: &Options,
    keyspace: u32,
    entries: Entries,
    range_dels: Fragments,
    new_number: &dyn Fn() -> u64,
) -> Result<Vec<TableMeta>> {
    let mut source = VecIterator::new(entries, options.comparator.clone());
    source.seek_to_first();
    let mut sink = OutputSink::new(OutputSpec {
        fs,
        dir,
        table_options: TableOptions {
            keyspace,
            ..options.table_options()
        },
        target_table_size: options.target_table_size,
        segment_tables: usize::MAX,
        new_file_number: new_number,
        direct_writes: options.use_direct_io_for_flush_and_compaction,
        stop: None,
    });
    sink.set_range_deletions(range_dels, None);
    sink.add_stream(&mut source, &mut |_| true)?;
    let output = sink.finish()?;
    Ok(output.tables.iter().map(|t| TableMeta::clone(t)).collect())
}

/// One keyspace's recovered tables as its version: L0, one run each,
/// ordered by their newest sequence number; and its log number (past the
/// newest log its log tables reference). Counts them in `report`.
fn rebuild(
    mut tables: Vec<TableMeta>,
    options: &Options,
    new_number: &dyn Fn() -> u64,
    report: &mut RepairReport,
    last_sequence: &mut u64,
) -> Result<(Version, u64)> {
    tables.sort_by_key(|t: &TableMeta| (t.max_seq, t.min_seq));
    let flushed_logs = tables.iter().flat_map(|t| t.logs.iter().copied()).max();
    let mut edit = VersionEdit::default();
    for mut t in tables {
        t.id = new_number();
        report.tables += 1;
        report.entries += t.entries;
        report.bytes += t.length;
        *last_sequence = t.max_seq.max(*last_sequence);
        edit.add_table(0, new_number(), Arc::new(t));
    }
    let version = Version::empty(options.comparator.clone())
        .apply(&edit)
        .map_err(|why| Error::InvalidArgument(format!("recovered tables do not fit: {why}")))?;
    Ok((version, flushed_logs.map_or(0, |log| log + 1)))
}

/// The keyspaces the store's MANIFEST names, when it still reads.
struct KnownKeyspaces {
    defs: Vec<(u32, KeyspaceDef)>,
    next_id: u32,
    /// Whether the MANIFEST was read: then a keyspace it does not name was
    /// dropped; otherwise every keyspace found in a table is recovered.
    manifest_read: bool,
}

/// The keyspaces of the MANIFEST `CURRENT` names, if it reads; none if not.
fn known_keyspaces(fs: &dyn FileSystem, dir: &Path, options: &Options) -> KnownKeyspaces {
    match VersionSet::recover(fs, dir, options.comparator.clone()) {
        Ok(rec) => KnownKeyspaces {
            defs: rec.keyspaces.into_iter().map(|k| (k.id, k.def)).collect(),
            next_id: rec.next_keyspace_id,
            manifest_read: true,
        },
        Err(_) => KnownKeyspaces {
            defs: Vec::new(),
            next_id: 1,
            manifest_read: false,
        },
    }
}

/// Keeps a readable `OPTIONS` file, or writes `options` in its place.
fn ensure_options(fs: &dyn FileSystem, dir: &Path, options: &Options) -> Result<()> {
    let path = options_path(dir);
    let readable = fs
        .read_to_vec(&path)
        .ok()
        .is_some_and(|text| Options::decode("OPTIONS", &text).is_ok());
    if readable {
        return Ok(());
    }
    let tmp = temp_path(dir, 0);
    fs.write_durably(&tmp, options.encode().as_bytes())?;
    fs.rename(&tmp, &path)?;
    fs.sync_dir(dir)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::Db;

    fn options() -> Options {
        Options {
            write_buffer_size: 64 << 10,
            target_table_size: 16 << 10,
            // No compaction: every table written survives, so the counts
            // below are exact.
            l0_compaction_trigger: 1000,
            l0_slowdown_writes_trigger: 1000,
            l0_stop_writes_trigger: 1000,
            ..Options::default()
        }
    }

    fn fill(dir: &Path, n: u32) {
        let db = Db::open(dir, options()).unwrap();
        for i in 0..n {
            db.put(
                format!("key{i:06}").as_bytes(),
                format!("value{i}").as_bytes(),
            )
            .unwrap();
        }
        db.delete(b"key000001").unwrap();
        db.flush().unwrap();
        db.close().unwrap();
    }

    fn remove_manifests(dir: &Path) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let name = entry.unwrap().file_name().into_string().unwrap();
            if name.starts_with("MANIFEST-") || name == "CURRENT" {
                std::fs::remove_file(dir.join(name)).unwrap();
            }
        }
    }

    fn count(it: &mut crate::db::DbIterator) -> usize {
        it.seek_to_first();
        let mut n = 0;
        while it.valid() {
            n += 1;
            it.next();
        }
        n
    }

    /// Tables record their keyspace: with the MANIFEST, repair puts them
    /// back in the keyspaces it names, and leaves out a dropped keyspace's
    /// (whose segments a crash kept from being deleted); without it, each
    /// keyspace a table names comes back as `recovered-ID`.
    #[test]
    fn repair_puts_every_table_back_in_its_keyspace() {
        for lose_manifest in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            let db = Db::open(dir.path(), options()).unwrap();
            let users = db.create_keyspace("users", options()).unwrap();
            let gone = db.create_keyspace("gone", options()).unwrap();
            for i in 0..2000 {
                let key = format!("key{i:06}");
                db.put(&key, "default").unwrap();
                users.put(&key, format!("user{i}")).unwrap();
                gone.put(&key, "gone").unwrap();
            }
            db.flush().unwrap();
            let segments: Vec<_> = std::fs::read_dir(dir.path())
                .unwrap()
                .map(|e| e.unwrap().path())
                .filter(|p| p.extension().is_some_and(|x| x == "seg"))
                .map(|p| (p.clone(), std::fs::read(&p).unwrap()))
                .collect();
            drop(gone);
            db.drop_keyspace("gone").unwrap();
            drop(users);
            db.close().unwrap();
            // A crash before the dropped keyspace's segments were deleted.
            for (path, bytes) in segments {
                if !path.exists() {
                    std::fs::write(path, bytes).unwrap();
                }
            }
            if lose_manifest {
                remove_manifests(dir.path());
            }
            let report = repair(dir.path(), &options()).unwrap();
            let db = Db::open(dir.path(), options()).unwrap();
            let users = match lose_manifest {
                false => db.keyspace("users").unwrap(),
                true => db.keyspace("recovered-1").unwrap(),
            };
            assert_eq!(users.get("key000005").unwrap(), Some(b"user5".to_vec()));
            assert_eq!(db.get("key000005").unwrap(), Some(b"default".to_vec()));
            assert_eq!(count(&mut users.iter(Default::default()).unwrap()), 2000);
            assert_eq!(count(&mut db.iter(Default::default()).unwrap()), 2000);
            let names = db.list_keyspaces();
            match lose_manifest {
                false => {
                    assert_eq!(names, ["default", "users"]);
                    assert!(
                        report.dropped.iter().any(|d| d.contains("keyspace 2")),
                        "{report}"
                    );
                }
                true => assert_eq!(names, ["default", "recovered-1", "recovered-2"]),
            }
        }
    }

    #[test]
    fn repair_rebuilds_a_lost_manifest() {
        let dir = tempfile::tempdir().unwrap();
        fill(dir.path(), 5000);
        remove_manifests(dir.path());
        let report = repair(dir.path(), &options()).unwrap();
        assert!(report.tables > 1, "{report}");
        assert!(report.dropped.is_empty(), "{report}");
        assert_eq!(report.entries, 5001, "{report}");
        let db = Db::open(dir.path(), options()).unwrap();
        for i in [0u32, 2, 777, 4999] {
            let key = format!("key{i:06}");
            assert_eq!(
                db.get(key.as_bytes()).unwrap(),
                Some(format!("value{i}").into_bytes()),
                "{key}"
            );
        }
        assert_eq!(db.get(b"key000001").unwrap(), None);
        let mut it = db.iter(Default::default()).unwrap();
        it.seek_to_first();
        let mut n = 0;
        while it.valid() {
            n += 1;
            it.next();
        }
        assert_eq!(n, 4999);
        db.put(b"after", b"repair").unwrap();
        db.close().unwrap();
    }

    #[test]
    fn repair_salvages_the_intact_blocks_of_a_damaged_table() {
        let dir = tempfile::tempdir().unwrap();
        fill(dir.path(), 5000);
        let healthy = repair(dir.path(), &options()).unwrap();
        // A middle flush: neither the first (which holds the put of
        // key000001) nor the last (which holds its deletion).
        let mut segments: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "seg"))
            .collect();
        segments.sort();
        assert!(segments.len() >= 3, "{healthy}");
        let segment = &segments[segments.len() / 2];
        let mut bytes = std::fs::read(segment).unwrap();
        bytes[SEGMENT_HEADER_LEN as usize + 100] ^= 0xff;
        std::fs::write(segment, bytes).unwrap();
        let report = repair(dir.path(), &options()).unwrap();
        assert_eq!(report.tables, healthy.tables, "{report}");
        assert_eq!(report.salvaged, 1, "{report}");
        assert_eq!(report.dropped.len(), 1, "{report}");
        assert!(report.to_string().contains("lost 1 of"), "{report}");
        let lost = healthy.entries - report.entries;
        assert!(lost > 0 && lost < 500, "{report}");
        let db = Db::open(dir.path(), options()).unwrap();
        assert_eq!(db.get(b"key004999").unwrap(), Some(b"value4999".to_vec()));
        let mut it = db.iter(Default::default()).unwrap();
        it.seek_to_first();
        let mut live = 0;
        while it.valid() {
            live += 1;
            it.next();
        }
        it.status().unwrap();
        assert_eq!(
            live as u64,
            4999 - lost,
            "4999 live keys less the lost ones"
        );
    }

    #[test]
    fn repair_keeps_range_tombstones_and_tables_of_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        fill(dir.path(), 50);
        let db = Db::open(dir.path(), options()).unwrap();
        let key = |i: u32| format!("key{i:06}");
        db.delete_range(key(10), key(20)).unwrap();
        db.flush().unwrap();
        db.close().unwrap();
        remove_manifests(dir.path());
        let report = repair(dir.path(), &options()).unwrap();
        assert!(report.dropped.is_empty(), "{report}");
        let db = Db::open(dir.path(), options()).unwrap();
        assert_eq!(
            db.get(key(15)).unwrap(),
            None,
            "the tombstone-only table came back"
        );
        assert!(db.get(key(9)).unwrap().is_some());
        assert!(db.get(key(20)).unwrap().is_some());
    }

    #[test]
    fn repair_refuses_a_missing_or_open_store() {
        let dir = tempfile::tempdir().unwrap();
        assert!(repair(dir.path().join("none"), &options()).is_err());
        let db = Db::open(dir.path(), options()).unwrap();
        assert!(matches!(
            repair(dir.path(), &options()),
            Err(Error::Locked(_))
        ));
        drop(db);
    }
}
