//! `VersionSet`: the current version, the MANIFEST that makes each edit
//! durable, and the counters persisted with it.
//!
//! Every store open writes a fresh MANIFEST holding one snapshot edit and
//! points `CURRENT` at it with an atomic rename; later edits are appended
//! and synced before they take effect.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::edit::{VersionEdit, MANIFEST_FORMAT_VERSION};
use super::files::{current_path, manifest_name, temp_path};
use super::version::Version;
use crate::error::{Error, Result};
use crate::format::KeyOrder;
use crate::io::{Backings, FileSystem};
use crate::log::{LogReader, LogWriter, RecoveryMode};
use crate::stats::Counters;

/// A MANIFEST larger than this is rewritten as a snapshot on the next edit.
const MANIFEST_ROLL_BYTES: u64 = 64 << 20;

pub struct VersionSet {
    dir: PathBuf,
    fs: Arc<dyn FileSystem>,
    counters: Arc<Counters>,
    current: Arc<Version>,
    manifest: Option<LogWriter>,
    manifest_number: u64,
    /// Shared with the write path, which allocates log numbers.
    next_file_number: Arc<AtomicU64>,
    log_number: u64,
    last_sequence: u64,
    /// The store's file reference counts: every installed version pins its
    /// tables and their files until it drops.
    backings: Arc<Backings>,
    /// Versions whose MANIFEST write failed part-way: the edit may still be
    /// durable, so their files stay referenced until the store reopens.
    unsure: Vec<Arc<Version>>,
}

/// What recovery read from the MANIFEST.
pub struct Recovered {
    pub version: Version,
    pub log_number: u64,
    pub next_file_number: u64,
    pub last_sequence: u64,
    pub stats: Vec<(String, u64)>,
    pub manifest_number: u64,
    /// Records read from the MANIFEST.
    pub records: u64,
}

impl VersionSet {
    /// Reads `CURRENT` and replays the MANIFEST it names.
    pub fn recover(fs: &dyn FileSystem, dir: &Path, order: KeyOrder) -> Result<Recovered> {
        let current = current_path(dir);
        let name_bytes = fs.read_to_vec(&current)?;
        let name = std::str::from_utf8(&name_bytes)
            .ok()
            .and_then(|s| s.strip_suffix('\n'))
            .filter(|s| s.starts_with("MANIFEST-") && !s.contains('/'))
            .ok_or_else(|| Error::corruption(&current, 0, "CURRENT does not name a MANIFEST"))?;
        let manifest_number = name["MANIFEST-".len()..]
            .parse()
            .map_err(|_| Error::corruption(&current, 0, "bad MANIFEST number"))?;
        let path = dir.join(name);
        let mut reader = LogReader::new(
            fs.open_sequential(&path)?,
            path.clone(),
            RecoveryMode::TolerateTailCorruption,
        );
        let mut version = Version::empty(order.clone());
        let mut rec = Recovered {
            version: Version::empty(order),
            log_number: 0,
            next_file_number: 0,
            last_sequence: 0,
            stats: Vec::new(),
            manifest_number,
            records: 0,
        };
        let mut saw_format = false;
        while let Some((offset, record)) = reader.read_record()? {
            let edit = VersionEdit::decode(&record)
                .map_err(|why| Error::corruption(&path, offset, why))?;
            saw_format |= edit.format_version.is_some();
            rec.records += 1;
            version = version
                .apply(&edit)
                .map_err(|why| Error::corruption(&path, offset, why))?;
            if let Some(n) = edit.log_number {
                rec.log_number = n;
            }
            if let Some(n) = edit.next_file_number {
                rec.next_file_number = n;
            }
            if let Some(n) = edit.last_sequence {
                rec.last_sequence = n;
            }
            if !edit.stats.is_empty() {
                rec.stats = edit.stats;
            }
        }
        if !saw_format {
            return Err(Error::corruption(
                &path,
                0,
                "MANIFEST has no format version record",
            ));
        }
        rec.version = version;
        Ok(rec)
    }

    /// Starts a version set from recovered (or empty) state and writes a
    /// fresh MANIFEST for it.
    pub fn open(
        fs: Arc<dyn FileSystem>,
        dir: &Path,
        counters: Arc<Counters>,
        rec: Recovered,
        next_file_number: Arc<AtomicU64>,
        backings: Arc<Backings>,
    ) -> Result<VersionSet> {
        let mut set =
            VersionSet::without_manifest(fs, dir, counters, rec, next_file_number, backings);
        set.write_new_manifest()?;
        Ok(set)
    }

    /// A version set over recovered state that writes nothing: no MANIFEST
    /// is created (for `Db::open_read_only`, whose file system refuses every
    /// write should an edit ever be attempted).
    pub fn without_manifest(
        fs: Arc<dyn FileSystem>,
        dir: &Path,
        counters: Arc<Counters>,
        rec: Recovered,
        next_file_number: Arc<AtomicU64>,
        backings: Arc<Backings>,
    ) -> VersionSet {
        let mut current = rec.version;
        current.pin(backings.clone());
        next_file_number.fetch_max(rec.next_file_number, Ordering::SeqCst);
        VersionSet {
            dir: dir.to_path_buf(),
            fs,
            counters,
            current: Arc::new(current),
            manifest: None,
            manifest_number: rec.manifest_number,
            next_file_number,
            log_number: rec.log_number,
            last_sequence: rec.last_sequence,
            backings,
            unsure: Vec::new(),
        }
    }

    /// State of a store that has no MANIFEST yet.
    pub fn empty(order: KeyOrder) -> Recovered {
        Recovered {
            version: Version::empty(order),
            log_number: 0,
            next_file_number: 1,
            last_sequence: 0,
            stats: Vec::new(),
            manifest_number: 0,
            records: 0,
        }
    }

    pub fn current(&self) -> Arc<Version> {
        self.current.clone()
    }

    /// The store's file reference counts.
    pub fn backings(&self) -> &Arc<Backings> {
        &self.backings
    }

    pub fn log_number(&self) -> u64 {
        self.log_number
    }

    pub fn last_sequence(&self) -> u64 {
        self.last_sequence
    }

    pub fn manifest_number(&self) -> u64 {
        self.manifest_number
    }

    pub fn new_file_number(&self) -> u64 {
        self.next_file_number.fetch_add(1, Ordering::SeqCst)
    }

    /// Makes `edit` durable in the MANIFEST, then installs the version it
    /// produces. On a MANIFEST write error nothing changes and the next edit
    /// starts a new MANIFEST.
    pub fn log_and_apply(&mut self, mut edit: VersionEdit) -> Result<Arc<Version>> {
        let next = self
            .current
            .apply(&edit)
            .map_err(|why| Error::invariant(format!("edit does not apply: {why}")))?;
        if let Some(n) = edit.log_number {
            debug_assert!(n >= self.log_number);
        }
        if let Some(n) = edit.last_sequence {
            self.last_sequence = self.last_sequence.max(n);
        }
        edit.last_sequence = Some(self.last_sequence);
        edit.log_number = Some(edit.log_number.unwrap_or(self.log_number));
        edit.next_file_number = Some(self.next_file_number.load(Ordering::SeqCst));
        edit.stats = self.counters.snapshot();
        let too_big = self
            .manifest
            .as_ref()
            .is_none_or(|m| m.len() > MANIFEST_ROLL_BYTES);
        let mut next = next;
        next.pin(self.backings.clone());
        let next = Arc::new(next);
        let written = if too_big {
            let log_number = edit.log_number.unwrap_or(self.log_number);
            let previous = std::mem::replace(&mut self.current, next.clone());
            let previous_log = std::mem::replace(&mut self.log_number, log_number);
            let written = self.write_new_manifest();
            if written.is_err() {
                self.current = previous;
                self.log_number = previous_log;
            }
            written
        } else {
            let written = self.append(&edit);
            if written.is_ok() {
                self.current = next.clone();
                self.log_number = edit.log_number.unwrap_or(self.log_number);
            }
            written
        };
        if let Err(e) = written {
            self.unsure.push(next);
            return Err(e);
        }
        Ok(self.current.clone())
    }

    /// Persists the counters (at close) without changing the version.
    pub fn persist_counters(&mut self) -> Result<()> {
        self.log_and_apply(VersionEdit::default()).map(|_| ())
    }

    fn append(&mut self, edit: &VersionEdit) -> Result<()> {
        let record = edit.encode();
        let manifest = self.manifest.as_mut().ok_or(Error::Closed)?;
        let result = manifest
            .add_record(&record)
            .and_then(|_offset| manifest.sync());
        match result {
            Ok(()) => {
                Counters::add(
                    &self.counters.manifest_bytes_written,
                    record.len() as u64 + 7,
                );
                Counters::add(&self.counters.fsyncs_manifest, 1);
                Ok(())
            }
            Err(e) => {
                self.manifest = None;
                Err(e)
            }
        }
    }

    /// Writes a MANIFEST holding a snapshot of the current state and points
    /// `CURRENT` at it.
    fn write_new_manifest(&mut self) -> Result<()> {
        let number = self.new_file_number();
        let name = manifest_name(number);
        let path = self.dir.join(&name);
        let mut edit = self.current.snapshot_edit();
        edit.format_version = Some(MANIFEST_FORMAT_VERSION);
        edit.log_number = Some(self.log_number);
        edit.last_sequence = Some(self.last_sequence);
        edit.next_file_number = Some(self.next_file_number.load(Ordering::SeqCst));
        edit.stats = self.counters.snapshot();
        let record = edit.encode();
        let mut writer = LogWriter::new(self.fs.create(&path)?);
        writer.add_record(&record)?;
        writer.sync()?;
        Counters::add(&self.counters.manifest_bytes_written, writer.len());
        Counters::add(&self.counters.fsyncs_manifest, 1);
        self.set_current(&name)?;
        let old = std::mem::replace(&mut self.manifest_number, number);
        self.manifest = Some(writer);
        if old != 0 && old != number {
            // The old MANIFEST is no longer referenced; a failure to delete it
            // only leaves garbage that the next open's sweep removes.
            let _ = self.fs.remove(&self.dir.join(manifest_name(old)));
        }
        Ok(())
    }

    fn set_current(&self, manifest: &str) -> Result<()> {
        let tmp = temp_path(&self.dir, self.new_file_number());
        self.fs
            .write_durably(&tmp, format!("{manifest}\n").as_bytes())?;
        self.fs.rename(&tmp, &current_path(&self.dir))?;
        self.fs.sync_dir(&self.dir)?;
        Counters::add(&self.counters.fsyncs_manifest, 2);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::PosixFs;
    use crate::version::meta::tests::table;

    #[test]
    fn a_table_is_released_when_the_last_version_holding_it_drops() {
        let dir = tempfile::tempdir().unwrap();
        let backings = Arc::new(Backings::default());
        let mut set = VersionSet::open(
            Arc::new(PosixFs),
            dir.path(),
            Arc::new(Counters::default()),
            VersionSet::empty(KeyOrder::Bytewise),
            Arc::new(AtomicU64::new(100)),
            backings.clone(),
        )
        .unwrap();
        let t = table(11, "a", "c");
        let mut add = VersionEdit::default();
        add.add_table(0, 10, t.clone());
        let reader = set.log_and_apply(add).unwrap();
        let mut delete = VersionEdit::default();
        delete.delete_table(0, 10, 11);
        set.log_and_apply(delete).unwrap();
        assert_eq!(
            backings.take_released(),
            Default::default(),
            "a reader still holds the version with the table"
        );
        assert!(backings.is_referenced(t.backing()));
        drop(reader);
        let released = backings.take_released();
        assert_eq!(released.extents, vec![t.extent()]);
        assert_eq!(released.files, vec![t.backing()]);
    }

    #[test]
    fn edits_survive_reopen_and_roll() {
        let dir = tempfile::tempdir().unwrap();
        let fs: Arc<dyn FileSystem> = Arc::new(PosixFs);
        let counters = Arc::new(Counters::default());
        let numbers = Arc::new(AtomicU64::new(1));
        let mut set = VersionSet::open(
            fs.clone(),
            dir.path(),
            counters.clone(),
            VersionSet::empty(KeyOrder::Bytewise),
            numbers.clone(),
            Arc::new(Backings::default()),
        )
        .unwrap();
        let mut e = VersionEdit::default();
        e.add_table(0, 10, table(11, "a", "c"));
        e.last_sequence = Some(42);
        e.log_number = Some(9);
        Counters::add(&counters.flushes, 1);
        set.log_and_apply(e).unwrap();
        drop(set);

        let rec = VersionSet::recover(fs.as_ref(), dir.path(), KeyOrder::Bytewise).unwrap();
        assert_eq!(rec.last_sequence, 42);
        assert_eq!(rec.log_number, 9);
        assert_eq!(rec.version.table_count(), 1);
        assert!(rec.stats.contains(&("flushes".to_string(), 1)));
        assert!(rec.next_file_number >= 3);

        let set = VersionSet::open(
            fs.clone(),
            dir.path(),
            Arc::new(Counters::default()),
            rec,
            Arc::new(AtomicU64::new(1)),
            Arc::new(Backings::default()),
        )
        .unwrap();
        let manifests: Vec<_> = fs
            .list(dir.path())
            .unwrap()
            .into_iter()
            .filter(|n| n.starts_with("MANIFEST-"))
            .collect();
        assert_eq!(manifests, vec![manifest_name(set.manifest_number())]);
        let again = VersionSet::recover(fs.as_ref(), dir.path(), KeyOrder::Bytewise).unwrap();
        assert_eq!(again.version.table_count(), 1);
    }

    #[test]
    fn corrupt_current_is_reported() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("CURRENT"), "garbage").unwrap();
        let err = VersionSet::recover(&PosixFs, dir.path(), KeyOrder::Bytewise)
            .err()
            .unwrap();
        assert!(err.is_corruption(), "{err}");
    }
}
