//! `VersionSet`: the current version, the MANIFEST that makes each edit
//! durable, and the counters persisted with it.
//!
//! Every store open writes a fresh MANIFEST holding one snapshot edit and
//! points `CURRENT` at it with an atomic rename; later edits are appended
//! and synced before they take effect.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::edit::{KeyspaceDef, VersionEdit, MANIFEST_FORMAT_VERSION};
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
    /// Every live keyspace's tree by id; 0, the default keyspace, always.
    trees: BTreeMap<u32, TreeState>,
    next_keyspace_id: u32,
    manifest: Option<LogWriter>,
    manifest_number: u64,
    /// Shared with the write path, which allocates log numbers.
    next_file_number: Arc<AtomicU64>,
    last_sequence: u64,
    /// The store's file reference counts: every installed version pins its
    /// tables and their files until it drops.
    backings: Arc<Backings>,
    /// Versions whose MANIFEST write failed part-way: the edit may still be
    /// durable, so their files stay referenced until the store reopens.
    unsure: Vec<Arc<Version>>,
}

/// One keyspace's tree as the MANIFEST records it.
#[derive(Clone)]
struct TreeState {
    /// `None` for the default keyspace (its options are the `OPTIONS` file).
    def: Option<KeyspaceDef>,
    current: Arc<Version>,
    /// Logs numbered below this hold nothing of this keyspace that is not in
    /// its tables.
    log_number: u64,
}

/// A keyspace other than the default one, as recovery read it.
pub struct RecoveredKeyspace {
    pub id: u32,
    pub def: KeyspaceDef,
    pub version: Version,
    pub log_number: u64,
}

/// What recovery read from the MANIFEST.
pub struct Recovered {
    /// The default keyspace's version and log number.
    pub version: Version,
    pub log_number: u64,
    /// The other keyspaces, by id.
    pub keyspaces: Vec<RecoveredKeyspace>,
    pub next_keyspace_id: u32,
    pub next_file_number: u64,
    pub last_sequence: u64,
    pub stats: Vec<(String, u64)>,
    pub manifest_number: u64,
    /// Records read from the MANIFEST.
    pub records: u64,
}

impl Recovered {
    /// Every keyspace's version, the default one first.
    pub fn versions(&self) -> impl Iterator<Item = &Version> {
        std::iter::once(&self.version).chain(self.keyspaces.iter().map(|k| &k.version))
    }

    /// The oldest log any keyspace still needs.
    pub fn min_log_number(&self) -> u64 {
        self.log_numbers()
            .into_iter()
            .map(|(_, n)| n)
            .min()
            .unwrap_or(0)
    }

    /// Every keyspace's id and log number, the default one first.
    pub fn log_numbers(&self) -> Vec<(u32, u64)> {
        let others = self.keyspaces.iter().map(|k| (k.id, k.log_number));
        std::iter::once((0, self.log_number))
            .chain(others)
            .collect()
    }
}

/// A keyspace's state while the MANIFEST is replayed.
struct Replaying {
    def: Option<KeyspaceDef>,
    version: Version,
    log_number: u64,
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
        let mut trees = BTreeMap::new();
        trees.insert(
            0,
            Replaying {
                def: None,
                version: Version::empty(order.clone()),
                log_number: 0,
            },
        );
        let mut rec = VersionSet::empty(order.clone());
        rec.next_file_number = 0;
        rec.manifest_number = manifest_number;
        let mut saw_format = false;
        while let Some((offset, record)) = reader.read_record()? {
            let corrupt = |why: String| Error::corruption(&path, offset, why);
            let edit = VersionEdit::decode(&record).map_err(corrupt)?;
            saw_format |= edit.format_version.is_some();
            rec.records += 1;
            let id = edit.keyspace;
            if let Some(def) = &edit.create_keyspace {
                if id == 0 || trees.contains_key(&id) {
                    return Err(corrupt(format!("keyspace {id} created twice")));
                }
                let version = Version::empty(order.clone());
                let def = Some(def.clone());
                trees.insert(
                    id,
                    Replaying {
                        def,
                        version,
                        log_number: 0,
                    },
                );
                rec.next_keyspace_id = rec.next_keyspace_id.max(id + 1);
            }
            if edit.drop_keyspace {
                if id == 0 || trees.remove(&id).is_none() {
                    return Err(corrupt(format!(
                        "drop of keyspace {id}, which does not exist"
                    )));
                }
            } else {
                let tree = trees.get_mut(&id).ok_or_else(|| {
                    corrupt(format!("edit of keyspace {id}, which does not exist"))
                })?;
                tree.version = tree.version.apply(&edit).map_err(corrupt)?;
                if let Some(n) = edit.log_number {
                    tree.log_number = n;
                }
            }
            if let Some(n) = edit.next_keyspace_id {
                rec.next_keyspace_id = rec.next_keyspace_id.max(n);
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
        for (id, tree) in trees {
            match tree.def {
                None => {
                    rec.version = tree.version;
                    rec.log_number = tree.log_number;
                }
                Some(def) => rec.keyspaces.push(RecoveredKeyspace {
                    id,
                    def,
                    version: tree.version,
                    log_number: tree.log_number,
                }),
            }
        }
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
        let pinned = |mut version: Version| {
            version.pin(backings.clone());
            Arc::new(version)
        };
        let mut trees = BTreeMap::new();
        for k in rec.keyspaces {
            let tree = TreeState {
                def: Some(k.def),
                current: pinned(k.version),
                log_number: k.log_number,
            };
            trees.insert(k.id, tree);
        }
        let default = TreeState {
            def: None,
            current: pinned(rec.version),
            log_number: rec.log_number,
        };
        trees.insert(0, default);
        next_file_number.fetch_max(rec.next_file_number, Ordering::SeqCst);
        VersionSet {
            dir: dir.to_path_buf(),
            fs,
            counters,
            trees,
            next_keyspace_id: rec.next_keyspace_id,
            manifest: None,
            manifest_number: rec.manifest_number,
            next_file_number,
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
            keyspaces: Vec::new(),
            next_keyspace_id: 1,
            next_file_number: 1,
            last_sequence: 0,
            stats: Vec::new(),
            manifest_number: 0,
            records: 0,
        }
    }

    /// The default keyspace's current version.
    pub fn current(&self) -> Arc<Version> {
        self.trees[&0].current.clone()
    }

    /// Keyspace `id`'s current version; `None` once it is dropped.
    pub fn current_of(&self, id: u32) -> Option<Arc<Version>> {
        self.trees.get(&id).map(|t| t.current.clone())
    }

    /// Every live keyspace's current version, by id.
    pub fn currents(&self) -> impl Iterator<Item = (u32, &Arc<Version>)> {
        self.trees.iter().map(|(&id, t)| (id, &t.current))
    }

    /// The store's file reference counts.
    pub fn backings(&self) -> &Arc<Backings> {
        &self.backings
    }

    /// The oldest log any keyspace still needs: logs below it hold nothing
    /// that is not in tables.
    pub fn log_number(&self) -> u64 {
        self.trees.values().map(|t| t.log_number).min().unwrap_or(0)
    }

    /// The log number of keyspace `id` (`None`: no such keyspace).
    pub fn log_number_of(&self, id: u32) -> Option<u64> {
        self.trees.get(&id).map(|t| t.log_number)
    }

    /// The keyspaces other than the default one: id, name and options.
    pub fn keyspace_defs(&self) -> Vec<(u32, KeyspaceDef)> {
        self.trees
            .iter()
            .filter_map(|(&id, t)| Some((id, t.def.clone()?)))
            .collect()
    }

    /// Hands out a keyspace id (never one used before: the create edit
    /// persists the next one).
    pub fn new_keyspace_id(&mut self) -> u32 {
        let id = self.next_keyspace_id;
        self.next_keyspace_id += 1;
        id
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
    /// produces for the edit's keyspace (none when it drops the keyspace).
    /// On a MANIFEST write error nothing changes and the next edit starts a
    /// new MANIFEST. An edit of a keyspace that was dropped meanwhile (a
    /// flush or compaction that raced the drop) is `Error::KeyspaceNotFound`.
    pub fn log_and_apply(&mut self, mut edit: VersionEdit) -> Result<Option<Arc<Version>>> {
        let id = edit.keyspace;
        let previous = match (&edit.create_keyspace, self.trees.get(&id)) {
            (Some(_), None) => None,
            (Some(_), Some(_)) => {
                return Err(Error::invariant(format!("keyspace {id} created twice")))
            }
            (None, Some(tree)) => Some(tree.clone()),
            (None, None) => return Err(Error::KeyspaceNotFound(format!("id {id}"))),
        };
        let base = match &previous {
            Some(tree) => tree.current.clone(),
            None => Arc::new(Version::empty(self.current().order.clone())),
        };
        let base_log = previous.as_ref().map_or(0, |t| t.log_number);
        let next = base
            .apply(&edit)
            .map_err(|why| Error::invariant(format!("edit does not apply: {why}")))?;
        if let Some(n) = edit.log_number {
            debug_assert!(n >= base_log);
        }
        if let Some(n) = edit.last_sequence {
            self.last_sequence = self.last_sequence.max(n);
        }
        edit.last_sequence = Some(self.last_sequence);
        edit.log_number = Some(edit.log_number.unwrap_or(base_log));
        edit.next_file_number = Some(self.next_file_number.load(Ordering::SeqCst));
        edit.next_keyspace_id = Some(self.next_keyspace_id);
        edit.stats = self.counters.persisted();
        let too_big = self
            .manifest
            .as_ref()
            .is_none_or(|m| m.len() > MANIFEST_ROLL_BYTES);
        let mut next = next;
        next.pin(self.backings.clone());
        let next = Arc::new(next);
        let state = TreeState {
            def: previous
                .as_ref()
                .map_or(edit.create_keyspace.clone(), |t| t.def.clone()),
            current: next.clone(),
            log_number: edit.log_number.unwrap_or(base_log),
        };
        let installed = match edit.drop_keyspace {
            true => None,
            false => Some(state),
        };
        // Installed first: a rolled MANIFEST snapshots the new state.
        let undo = match installed {
            Some(state) => self.trees.insert(id, state),
            None => self.trees.remove(&id),
        };
        let written = match too_big {
            true => self.write_new_manifest(),
            false => self.append(&edit),
        };
        if let Err(e) = written {
            match undo {
                Some(tree) => self.trees.insert(id, tree),
                None => self.trees.remove(&id),
            };
            self.unsure.push(next);
            return Err(e);
        }
        Ok(self.current_of(id))
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

    /// Writes a MANIFEST holding a snapshot of the current state (one
    /// record for the default keyspace, then one creating each other
    /// keyspace with its tables) and points `CURRENT` at it.
    fn write_new_manifest(&mut self) -> Result<()> {
        let number = self.new_file_number();
        let name = manifest_name(number);
        let path = self.dir.join(&name);
        let mut writer = LogWriter::new(self.fs.create(&path)?);
        for (&id, tree) in &self.trees {
            let mut edit = tree.current.snapshot_edit();
            edit.keyspace = id;
            edit.create_keyspace = tree.def.clone();
            edit.log_number = Some(tree.log_number);
            if id == 0 {
                edit.format_version = Some(MANIFEST_FORMAT_VERSION);
                edit.last_sequence = Some(self.last_sequence);
                edit.next_file_number = Some(self.next_file_number.load(Ordering::SeqCst));
                edit.next_keyspace_id = Some(self.next_keyspace_id);
                edit.stats = self.counters.persisted();
            }
            writer.add_record(&edit.encode())?;
        }
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
