//! Repair (LevelDB's `RepairDB`): rebuilds the MANIFEST from the tables that
//! survive in the segment files.
//!
//! Segments do not list their tables, but every table ends with a footer
//! that starts with its magic number, is covered by a checksum and locates
//! the index block, which is the last block before the footer: a footer at
//! byte `end` therefore gives the table's start. Every table found is opened
//! and its checksums verified; damaged ones are dropped (their keys are
//! lost) and named in the report. Survivors go to L0, one run each, ordered
//! by their newest sequence number, as LevelDB's repair does; compaction
//! then rebuilds the tree. Logs are left in place and replayed by the next
//! open (the new MANIFEST's log number is 0).

use std::fmt;
use std::path::Path;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::io::backing::Backings;
use crate::io::segment::{verify_header, SEGMENT_HEADER_LEN};
use crate::io::{FileSystem, PosixFs, RandomAccessFile};
use crate::options::Options;
use crate::stats::Counters;
use crate::table::{Footer, Table, BLOCK_TRAILER_LEN, FOOTER_LEN, TABLE_MAGIC};
use crate::version::files::{
    current_path, lock_path, options_path, parse_file_name, segment_path, temp_path, FileKind,
};
use crate::version::set::Recovered;
use crate::version::{TableMeta, Version, VersionEdit, VersionSet};

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
    /// Damage found: each a table or segment that was dropped, and why.
    pub dropped: Vec<String>,
}

impl fmt::Display for RepairReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "recovered {} tables ({} entries, {} bytes) from {} segments; {} logs to replay",
            self.tables, self.entries, self.bytes, self.segments, self.logs
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

    let mut tables = Vec::new();
    for &segment in &segments {
        report.segments += 1;
        let path = segment_path(dir, segment);
        let file = fs.open_random(&path)?;
        let data = read_all(file.as_ref())?;
        if let Err(e) = verify_header(&path, &data) {
            report.dropped.push(format!("segment header: {e}"));
        }
        for (offset, length) in table_candidates(&data) {
            match recover_table(file.clone(), &path, segment, offset, length) {
                Ok(Some(t)) => tables.push(t),
                Ok(None) => {}
                Err(e) => report.dropped.push(e.to_string()),
            }
        }
    }

    tables.sort_by_key(|t: &TableMeta| (t.max_seq, t.min_seq));
    let mut edit = VersionEdit::default();
    let mut last_sequence = 0;
    for mut t in tables {
        t.id = new_number();
        report.tables += 1;
        report.entries += t.entries;
        report.bytes += t.length;
        last_sequence = t.max_seq.max(last_sequence);
        edit.add_table(0, new_number(), Arc::new(t));
    }
    let version = Version::default()
        .apply(&edit)
        .map_err(|why| Error::InvalidArgument(format!("recovered tables do not fit: {why}")))?;

    ensure_options(fs.as_ref(), dir, options)?;
    let recovered = Recovered {
        version,
        log_number: 0,
        next_file_number: next_file.load(std::sync::atomic::Ordering::SeqCst),
        last_sequence,
        stats: Vec::new(),
        manifest_number: 0,
        records: 0,
    };
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

/// Opens and verifies one table; `None` for an empty one.
fn recover_table(
    file: Arc<dyn RandomAccessFile>,
    path: &Path,
    segment: u64,
    offset: u64,
    length: u64,
) -> Result<Option<TableMeta>> {
    let table = Table::open(file, path.to_path_buf(), segment, offset, length, None)?;
    table.verify_checksums()?;
    let p = table.properties();
    if p.entries == 0 {
        return Ok(None);
    }
    Ok(Some(TableMeta {
        id: 0,
        segment,
        offset,
        length,
        smallest: p.smallest_key.clone(),
        largest: p.largest_key.clone(),
        entries: p.entries,
        min_seq: p.min_seq,
        max_seq: p.max_seq,
    }))
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
    fn repair_drops_a_damaged_table_and_says_so() {
        let dir = tempfile::tempdir().unwrap();
        fill(dir.path(), 5000);
        let healthy = repair(dir.path(), &options()).unwrap();
        let segment = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.extension().is_some_and(|e| e == "seg"))
            .unwrap();
        let mut bytes = std::fs::read(&segment).unwrap();
        bytes[SEGMENT_HEADER_LEN as usize + 100] ^= 0xff;
        std::fs::write(&segment, bytes).unwrap();
        let report = repair(dir.path(), &options()).unwrap();
        assert_eq!(report.tables, healthy.tables - 1, "{report}");
        assert_eq!(report.dropped.len(), 1, "{report}");
        assert!(report.to_string().contains("dropped"), "{report}");
        let db = Db::open(dir.path(), options()).unwrap();
        assert_eq!(db.get(b"key004999").unwrap(), Some(b"value4999".to_vec()));
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
