//! The engine as the commands see it: the databases (keyspaces), striped
//! key locks that make every write command atomic against every other, and
//! `Txn`, the reads and buffered writes of one command (or one MULTI/EXEC)
//! committed as one engine batch, across databases too.

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};

use parking_lot::{Mutex, MutexGuard};
use thicketdb::{Db, DbIterator, Error, Keyspace, ReadOptions, Snapshot, WriteBatch};

use crate::durability::SYNC_MARKER_KEY;
use crate::resp::Reply;

/// The database a connection works in: `SELECT index` (0 is the store's
/// default keyspace, `i > 0` the keyspace `db<i>`, created by the first
/// write into it) or `THICKET.SELECT name` (an existing keyspace).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Database {
    Index(u32),
    Named(String),
}

impl Database {
    /// The keyspace that holds the database's keys.
    pub fn keyspace_name(&self) -> String {
        match self {
            Database::Index(0) => thicketdb::DEFAULT_KEYSPACE_NAME.to_string(),
            Database::Index(i) => index_keyspace_name(*i),
            Database::Named(name) => name.clone(),
        }
    }

    /// Numbered databases exist from their first write on; before, they
    /// read as empty. Named ones must have been created.
    fn created_on_write(&self) -> bool {
        matches!(self, Database::Index(_))
    }
}

/// The keyspace of `SELECT index` for `index > 0`.
pub fn index_keyspace_name(index: u32) -> String {
    format!("db{index}")
}

/// Lock stripes; keys hash onto them. Many more than concurrent writers,
/// so unrelated keys rarely wait for each other.
pub const STRIPES: usize = 4096;

pub struct Store {
    db: Db,
    /// Database 0's keyspace, kept: most commands work in it.
    default: Keyspace,
    stripes: Box<[Mutex<()>]>,
    hasher: RandomState,
    /// Held while a numbered database's keyspace is created, so that two
    /// first writes create it once.
    creating: Mutex<()>,
}

/// Locks held for the keys of one write command or transaction.
pub struct KeyLocks<'a> {
    _guards: Vec<MutexGuard<'a, ()>>,
}

impl Store {
    pub fn new(db: Db) -> thicketdb::Result<Store> {
        Ok(Store {
            default: db.keyspace(thicketdb::DEFAULT_KEYSPACE_NAME)?,
            db,
            stripes: (0..STRIPES).map(|_| Mutex::new(())).collect(),
            hasher: RandomState::new(),
            creating: Mutex::new(()),
        })
    }

    pub fn db(&self) -> &Db {
        &self.db
    }

    /// The keyspace of `database`; `None` for a numbered database nobody
    /// has written yet (it reads as empty).
    pub fn keyspace(&self, database: &Database) -> Result<Option<Keyspace>, Reply> {
        if *database == Database::Index(0) {
            return Ok(Some(self.default.clone()));
        }
        match self.db.keyspace(&database.keyspace_name()) {
            Ok(keyspace) => Ok(Some(keyspace)),
            Err(Error::KeyspaceNotFound(_)) if database.created_on_write() => Ok(None),
            Err(e) => Err(engine_error(e)),
        }
    }

    /// The keyspace of `database` to write into, created (with the store's
    /// options) when it is a numbered database that does not exist yet.
    pub fn keyspace_for_write(&self, database: &Database) -> Result<Keyspace, Reply> {
        if let Some(keyspace) = self.keyspace(database)? {
            return Ok(keyspace);
        }
        let _creating = self.creating.lock();
        if let Some(keyspace) = self.keyspace(database)? {
            return Ok(keyspace);
        }
        self.db
            .create_keyspace(&database.keyspace_name(), self.db.options().clone())
            .map_err(engine_error)
    }

    /// An iterator over `database`'s keys; `None` when it does not exist.
    pub fn iter(
        &self,
        database: &Database,
        opts: ReadOptions,
    ) -> Result<Option<DbIterator>, Reply> {
        match self.keyspace(database)? {
            Some(keyspace) => keyspace.iter(opts).map(Some).map_err(engine_error),
            None => Ok(None),
        }
    }

    /// Locks the stripes of `keys` in increasing stripe order (so two
    /// commands locking overlapping sets cannot deadlock).
    pub fn lock<'k>(&self, keys: impl IntoIterator<Item = &'k [u8]>) -> KeyLocks<'_> {
        let mut stripes: Vec<usize> = keys
            .into_iter()
            .map(|k| (self.hasher.hash_one(k) as usize) % STRIPES)
            .collect();
        stripes.sort_unstable();
        stripes.dedup();
        KeyLocks {
            _guards: stripes
                .into_iter()
                .map(|i| self.stripes[i].lock())
                .collect(),
        }
    }

    /// How many stripes are locked now (for tests of who locks what).
    #[cfg(test)]
    pub fn locked_stripes(&self) -> usize {
        self.stripes.iter().filter(|s| s.is_locked()).count()
    }

    /// Locks every stripe, in order: a range deletion's keys are not known,
    /// so it excludes every other write command.
    pub fn lock_all(&self) -> KeyLocks<'_> {
        KeyLocks {
            _guards: self.stripes.iter().map(|s| s.lock()).collect(),
        }
    }
}

/// Errors of the engine as replies.
pub fn engine_error(e: thicketdb::Error) -> Reply {
    Reply::error(format!("ERR thicket: {e}"))
}

/// The reads and writes of one command or transaction. Reads see the
/// transaction's own earlier writes; writes reach the engine in `commit`.
pub struct Txn<'s> {
    store: &'s Store,
    database: Database,
    /// `database`'s keyspace once looked up (`Some(None)`: not created).
    keyspace: Option<Option<Keyspace>>,
    batch: WriteBatch,
    /// Writes so far, for reads in later commands of a MULTI (a single
    /// command reads before it writes and needs none).
    overlay: Option<Overlay>,
    snapshot: Option<Snapshot>,
}

/// A MULTI's writes as its later reads see them.
#[derive(Default)]
struct Overlay {
    /// Point writes (`None`: deleted), newer than any range in `ranges`.
    points: HashMap<(Database, Vec<u8>), Option<Vec<u8>>>,
    /// Range deletions `[start, end)`.
    ranges: Vec<(Database, Vec<u8>, Vec<u8>)>,
}

impl Overlay {
    /// `Some(value)` when the transaction decided the key's value.
    fn get(&self, database: &Database, key: &[u8]) -> Option<Option<Vec<u8>>> {
        if let Some(written) = self.points.get(&(database.clone(), key.to_vec())) {
            return Some(written.clone());
        }
        let covered = self.ranges.iter().any(|(d, start, end)| {
            d == database && start.as_slice() <= key && key < end.as_slice()
        });
        covered.then_some(None)
    }

    fn delete_range(&mut self, database: &Database, start: &[u8], end: &[u8]) {
        self.points.retain(|(d, key), _| {
            !(d == database && start <= key.as_slice() && key.as_slice() < end)
        });
        self.ranges
            .push((database.clone(), start.to_vec(), end.to_vec()));
    }
}

impl<'s> Txn<'s> {
    pub fn new(store: &'s Store, database: &Database) -> Txn<'s> {
        Txn {
            store,
            database: database.clone(),
            keyspace: None,
            batch: WriteBatch::new(),
            overlay: None,
            snapshot: None,
        }
    }

    /// A transaction of several commands, whose reads see earlier writes.
    pub fn multi(store: &'s Store, database: &Database) -> Txn<'s> {
        Txn {
            overlay: Some(Overlay::default()),
            ..Txn::new(store, database)
        }
    }

    /// Later commands work in `database` (a SELECT inside MULTI).
    pub fn select(&mut self, database: &Database) {
        if *database != self.database {
            self.database = database.clone();
            self.keyspace = None;
        }
    }

    /// Reads from here on see one point in time (MGET).
    pub fn pin_snapshot(&mut self) {
        if self.snapshot.is_none() {
            self.snapshot = Some(self.store.db.snapshot());
        }
    }

    fn read_keyspace(&mut self) -> Result<Option<Keyspace>, Reply> {
        if self.keyspace.is_none() {
            self.keyspace = Some(self.store.keyspace(&self.database)?);
        }
        Ok(self.keyspace.clone().flatten())
    }

    fn write_keyspace(&mut self) -> Result<Keyspace, Reply> {
        if let Some(Some(keyspace)) = &self.keyspace {
            return Ok(keyspace.clone());
        }
        let keyspace = self.store.keyspace_for_write(&self.database)?;
        self.keyspace = Some(Some(keyspace.clone()));
        Ok(keyspace)
    }

    pub fn get(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>, Reply> {
        if let Some(written) = self
            .overlay
            .as_ref()
            .and_then(|o| o.get(&self.database, key))
        {
            return Ok(written);
        }
        let Some(keyspace) = self.read_keyspace()? else {
            return Ok(None);
        };
        let opts = ReadOptions {
            snapshot: self.snapshot.clone(),
            ..ReadOptions::default()
        };
        keyspace.get_opt(key, &opts).map_err(engine_error)
    }

    pub fn put(&mut self, key: &[u8], value: &[u8]) -> Result<(), Reply> {
        check_writable(key)?;
        let keyspace = self.write_keyspace()?;
        self.batch
            .put_in(&keyspace, key, value)
            .map_err(|e| Reply::error(format!("ERR {e}")))?;
        if let Some(overlay) = &mut self.overlay {
            let at = (self.database.clone(), key.to_vec());
            overlay.points.insert(at, Some(value.to_vec()));
        }
        Ok(())
    }

    pub fn delete(&mut self, key: &[u8]) -> Result<(), Reply> {
        check_writable(key)?;
        let keyspace = self.write_keyspace()?;
        self.batch
            .delete_in(&keyspace, key)
            .map_err(|e| Reply::error(format!("ERR {e}")))?;
        if let Some(overlay) = &mut self.overlay {
            overlay
                .points
                .insert((self.database.clone(), key.to_vec()), None);
        }
        Ok(())
    }

    /// Deletes every key in `[start, end)` with one range tombstone. The
    /// caller holds every stripe lock (`Store::lock_all`).
    pub fn delete_range(&mut self, start: &[u8], end: &[u8]) -> Result<(), Reply> {
        let keyspace = self.write_keyspace()?;
        self.batch
            .delete_range_in(&keyspace, start, end)
            .map_err(|e| Reply::error(format!("ERR {e}")))?;
        if let Some(overlay) = &mut self.overlay {
            overlay.delete_range(&self.database, start, end);
        }
        Ok(())
    }

    /// Writes the buffered batch (without waiting for a log sync). Returns
    /// whether anything was written.
    pub fn commit(self) -> Result<bool, Reply> {
        if self.batch.is_empty() {
            return Ok(false);
        }
        self.store.db.write(self.batch).map_err(engine_error)?;
        Ok(true)
    }
}

/// The group-commit marker is the server's own key.
fn check_writable(key: &[u8]) -> Result<(), Reply> {
    if key == SYNC_MARKER_KEY {
        Err(Reply::error("ERR this key is reserved by thicket-server"))
    } else {
        Ok(())
    }
}
