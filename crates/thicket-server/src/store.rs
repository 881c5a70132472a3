//! The engine as the commands see it: the databases (keyspaces, each with
//! a companion keyspace for typed keys, see `meta`), striped key locks
//! that make every write command atomic against every other, and `Txn`,
//! the reads and buffered writes of one command (or one MULTI/EXEC)
//! committed as one engine batch, across databases too.

use std::collections::BTreeMap;
use std::hash::{BuildHasher, RandomState};
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::{Mutex, MutexGuard};
use thicketdb::{Db, DbIterator, Error, Keyspace, ReadOptions, Snapshot, WriteBatch};

use crate::resp::Reply;

/// The database a connection works in: `SELECT index` (0 is the store's
/// default keyspace, `i > 0` the keyspace `db<i>`, created by the first
/// write into it) or `THICKET.SELECT name` (an existing keyspace).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
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

    /// The companion keyspace that holds the database's typed keys.
    pub fn companion_name(&self) -> String {
        companion_name(&self.keyspace_name())
    }

    /// Numbered databases exist from their first write on; before, they
    /// read as empty. Named ones must have been created.
    fn created_on_write(&self) -> bool {
        matches!(self, Database::Index(_))
    }
}

/// Companion keyspaces are named by this prefix and their database's
/// keyspace; they are the server's own (hidden from THICKET.KEYSPACE LIST,
/// refused as a database name).
pub const COMPANION_PREFIX: &str = "thicket-types:";

pub fn companion_name(keyspace: &str) -> String {
    format!("{COMPANION_PREFIX}{keyspace}")
}

pub fn is_companion(keyspace: &str) -> bool {
    keyspace.starts_with(COMPANION_PREFIX)
}

/// Where a key lives: a database's keyspace holds plain strings, its
/// companion the metadata of typed keys and the members of collections
/// (under the prefixes of `meta`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Space {
    Main,
    Meta,
    Members,
}

impl Space {
    /// The byte every key of this space starts with in the companion.
    fn prefix(self) -> Option<u8> {
        match self {
            Space::Main => None,
            Space::Meta => Some(crate::meta::META_PREFIX),
            Space::Members => Some(crate::meta::MEMBER_PREFIX),
        }
    }

    fn engine_key(self, key: &[u8]) -> Vec<u8> {
        match self.prefix() {
            None => key.to_vec(),
            Some(p) => {
                let mut out = Vec::with_capacity(key.len() + 1);
                out.push(p);
                out.extend_from_slice(key);
                out
            }
        }
    }
}

/// Most members one command reads from a collection (or keys from a
/// range); more is an error rather than an unbounded reply in memory.
pub const MAX_RANGE_READ: usize = 4_000_000;

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
    /// Database 0's companion, `None` until the first typed write creates
    /// it (only `companion_for_write` does, so this is always current and
    /// plain strings in database 0 never look it up by name).
    default_companion: Mutex<Option<Keyspace>>,
    stripes: Box<[Mutex<()>]>,
    /// Bumped by every committed write to a key of the stripe: WATCH
    /// compares them (a collision makes EXEC fail spuriously, never
    /// succeed wrongly).
    touched: Box<[AtomicU64]>,
    /// FLUSHDB and FLUSHALL so far: they fail the EXEC of a WATCH on a key
    /// that existed (and only those, as in Redis).
    flushes: AtomicU64,
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
            default_companion: Mutex::new(db.keyspace(&Database::Index(0).companion_name()).ok()),
            db,
            stripes: (0..STRIPES).map(|_| Mutex::new(())).collect(),
            touched: (0..STRIPES).map(|_| AtomicU64::new(0)).collect(),
            flushes: AtomicU64::new(0),
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

    /// `database`'s companion keyspace; `None` while it holds no typed key.
    pub fn companion(&self, database: &Database) -> Result<Option<Keyspace>, Reply> {
        if *database == Database::Index(0) {
            return Ok(self.default_companion.lock().clone());
        }
        match self.db.keyspace(&database.companion_name()) {
            Ok(keyspace) => Ok(Some(keyspace)),
            Err(Error::KeyspaceNotFound(_)) => Ok(None),
            Err(e) => Err(engine_error(e)),
        }
    }

    /// `database`'s companion keyspace to write into, created by the first
    /// typed write (with the database's options, or the store's).
    pub fn companion_for_write(&self, database: &Database) -> Result<Keyspace, Reply> {
        if let Some(keyspace) = self.companion(database)? {
            return Ok(keyspace);
        }
        let _creating = self.creating.lock();
        if let Some(keyspace) = self.companion(database)? {
            return Ok(keyspace);
        }
        let options = match self.keyspace(database)? {
            Some(main) => main.options().clone(),
            None => self.db.options().clone(),
        };
        let keyspace = self
            .db
            .create_keyspace(&database.companion_name(), options)
            .map_err(engine_error)?;
        if *database == Database::Index(0) {
            *self.default_companion.lock() = Some(keyspace.clone());
        }
        Ok(keyspace)
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

    fn stripe(&self, key: &[u8]) -> usize {
        (self.hasher.hash_one(key) as usize) % STRIPES
    }

    /// The write count of `key`'s stripe (WATCH).
    pub fn touched(&self, key: &[u8]) -> u64 {
        self.touched[self.stripe(key)].load(Ordering::Acquire)
    }

    /// Marks `keys` as written (by a committed write, under their locks).
    pub fn touch<'k>(&self, keys: impl IntoIterator<Item = &'k [u8]>) {
        for key in keys {
            self.touched[self.stripe(key)].fetch_add(1, Ordering::AcqRel);
        }
    }

    pub fn flushes(&self) -> u64 {
        self.flushes.load(Ordering::Acquire)
    }

    /// Counts a FLUSHDB or FLUSHALL (under every key lock).
    pub fn note_flush(&self) {
        self.flushes.fetch_add(1, Ordering::AcqRel);
    }

    /// Marks every key as written (THICKET.DELRANGE).
    pub fn touch_all(&self) {
        for t in self.touched.iter() {
            t.fetch_add(1, Ordering::AcqRel);
        }
    }

    /// Locks the stripes of `keys` in increasing stripe order (so two
    /// commands locking overlapping sets cannot deadlock).
    pub fn lock<'k>(&self, keys: impl IntoIterator<Item = &'k [u8]>) -> KeyLocks<'_> {
        let mut stripes: Vec<usize> = keys.into_iter().map(|k| self.stripe(k)).collect();
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

/// The keyspaces of one database as a transaction found them
/// (`Some(None)`: looked up, does not exist yet).
#[derive(Default)]
struct Resolved {
    main: Option<Option<Keyspace>>,
    companion: Option<Option<Keyspace>>,
}

/// The reads and writes of one command or transaction. Reads see the
/// transaction's own earlier writes; writes reach the engine in `commit`.
pub struct Txn<'s> {
    store: &'s Store,
    database: Database,
    resolved: Resolved,
    batch: WriteBatch,
    /// Writes so far, so that later reads of the same command or MULTI see
    /// them.
    overlay: Overlay,
    snapshot: Option<Snapshot>,
    /// The time (Unix milliseconds) expiry is judged at: one instant for
    /// the whole command or transaction, as in Redis.
    pub now: u64,
}

type OverlayKey = (Database, Space, Vec<u8>);
/// A range deletion `[start, end)` (`None`: to the end of the space).
type RangeDeletion = (Database, Space, Vec<u8>, Option<Vec<u8>>);
/// Keys (or members) with their values, in order.
pub type Pairs = Vec<(Vec<u8>, Vec<u8>)>;

/// A transaction's writes as its later reads see them.
#[derive(Default)]
struct Overlay {
    /// Point writes (`None`: deleted), newer than any range in `ranges`.
    points: BTreeMap<OverlayKey, Option<Vec<u8>>>,
    /// Range deletions `[start, end)` (`None`: to the end of the space).
    ranges: Vec<RangeDeletion>,
}

impl Overlay {
    fn covered(&self, database: &Database, space: Space, key: &[u8]) -> bool {
        self.ranges.iter().any(|(d, s, start, end)| {
            d == database
                && *s == space
                && start.as_slice() <= key
                && end.as_ref().is_none_or(|end| key < end.as_slice())
        })
    }

    /// `Some(value)` when the transaction decided the key's value.
    fn get(&self, database: &Database, space: Space, key: &[u8]) -> Option<Option<Vec<u8>>> {
        if self.points.is_empty() && self.ranges.is_empty() {
            return None;
        }
        if let Some(written) = self.points.get(&(database.clone(), space, key.to_vec())) {
            return Some(written.clone());
        }
        self.covered(database, space, key).then_some(None)
    }

    fn delete_range(
        &mut self,
        database: &Database,
        space: Space,
        start: &[u8],
        end: Option<&[u8]>,
    ) {
        self.points.retain(|(d, s, key), _| {
            !(d == database
                && *s == space
                && start <= key.as_slice()
                && end.is_none_or(|end| key.as_slice() < end))
        });
        self.ranges.push((
            database.clone(),
            space,
            start.to_vec(),
            end.map(<[u8]>::to_vec),
        ));
    }
}

impl<'s> Txn<'s> {
    pub fn new(store: &'s Store, database: &Database) -> Txn<'s> {
        Txn {
            store,
            database: database.clone(),
            resolved: Resolved::default(),
            batch: WriteBatch::new(),
            overlay: Overlay::default(),
            snapshot: None,
            now: crate::meta::now_ms(),
        }
    }

    pub fn database(&self) -> &Database {
        &self.database
    }

    /// Later commands work in `database` (a SELECT inside MULTI).
    pub fn select(&mut self, database: &Database) {
        if *database != self.database {
            self.database = database.clone();
            self.resolved = Resolved::default();
        }
    }

    /// Reads from here on see one point in time (MGET, collection reads).
    pub fn pin_snapshot(&mut self) {
        if self.snapshot.is_none() {
            self.snapshot = Some(self.store.db.snapshot());
        }
    }

    fn read_opts(&self) -> ReadOptions {
        ReadOptions {
            snapshot: self.snapshot.clone(),
            ..ReadOptions::default()
        }
    }

    fn read_keyspace(&mut self, space: Space) -> Result<Option<Keyspace>, Reply> {
        let (slot, companion) = match space {
            Space::Main => (&mut self.resolved.main, false),
            _ => (&mut self.resolved.companion, true),
        };
        if slot.is_none() {
            *slot = Some(if companion {
                self.store.companion(&self.database)?
            } else {
                self.store.keyspace(&self.database)?
            });
        }
        Ok(slot.clone().flatten())
    }

    fn write_keyspace(&mut self, space: Space) -> Result<Keyspace, Reply> {
        let (slot, companion) = match space {
            Space::Main => (&mut self.resolved.main, false),
            _ => (&mut self.resolved.companion, true),
        };
        if let Some(Some(keyspace)) = slot {
            return Ok(keyspace.clone());
        }
        let keyspace = if companion {
            self.store.companion_for_write(&self.database)?
        } else {
            self.store.keyspace_for_write(&self.database)?
        };
        *slot = Some(Some(keyspace.clone()));
        Ok(keyspace)
    }

    pub fn get(&mut self, space: Space, key: &[u8]) -> Result<Option<Vec<u8>>, Reply> {
        if let Some(written) = self.overlay.get(&self.database, space, key) {
            return Ok(written);
        }
        let Some(keyspace) = self.read_keyspace(space)? else {
            return Ok(None);
        };
        let opts = self.read_opts();
        match space.prefix() {
            None => keyspace.get_opt(key, &opts),
            Some(_) => keyspace.get_opt(space.engine_key(key), &opts),
        }
        .map_err(engine_error)
    }

    pub fn put(&mut self, space: Space, key: &[u8], value: &[u8]) -> Result<(), Reply> {
        let keyspace = self.write_keyspace(space)?;
        let written = match space.prefix() {
            None => self.batch.put_in(&keyspace, key, value),
            Some(_) => self.batch.put_in(&keyspace, space.engine_key(key), value),
        };
        written.map_err(|e| Reply::error(format!("ERR {e}")))?;
        let at = (self.database.clone(), space, key.to_vec());
        self.overlay.points.insert(at, Some(value.to_vec()));
        Ok(())
    }

    pub fn delete(&mut self, space: Space, key: &[u8]) -> Result<(), Reply> {
        let keyspace = self.write_keyspace(space)?;
        self.batch
            .delete_in(&keyspace, space.engine_key(key))
            .map_err(|e| Reply::error(format!("ERR {e}")))?;
        let at = (self.database.clone(), space, key.to_vec());
        self.overlay.points.insert(at, None);
        Ok(())
    }

    /// Deletes every key in `[start, end)` of `space` with one range
    /// tombstone (`end` `None`: to the end of the space). The caller holds
    /// the locks of every key in it (`Store::lock_all` for user keys).
    pub fn delete_range(
        &mut self,
        space: Space,
        start: &[u8],
        end: Option<&[u8]>,
    ) -> Result<(), Reply> {
        let keyspace = match space {
            Space::Main => self.write_keyspace(space)?,
            // No companion: nothing typed to delete.
            _ => match self.read_keyspace(space)? {
                Some(keyspace) => keyspace,
                None => return Ok(()),
            },
        };
        let engine_start = space.engine_key(start);
        let engine_end = match (end, space.prefix()) {
            (Some(end), _) => space.engine_key(end),
            (None, Some(p)) => vec![p + 1],
            (None, None) => return Err(Reply::error("ERR thicket: an open range of user keys")),
        };
        self.batch
            .delete_range_in(&keyspace, engine_start, engine_end)
            .map_err(|e| Reply::error(format!("ERR {e}")))?;
        self.overlay.delete_range(&self.database, space, start, end);
        Ok(())
    }

    /// The keys of `space` in `[start, end)` with their values, in order,
    /// as this transaction sees them.
    pub fn range(&mut self, space: Space, start: &[u8], end: &[u8]) -> Result<Pairs, Reply> {
        let mut found: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
        if let Some(keyspace) = self.read_keyspace(space)? {
            let strip = usize::from(space.prefix().is_some());
            let opts = ReadOptions {
                lower_bound: Some(space.engine_key(start)),
                upper_bound: Some(space.engine_key(end)),
                ..self.read_opts()
            };
            let mut iter = keyspace.iter(opts).map_err(engine_error)?;
            iter.seek_to_first();
            while iter.valid() {
                let key = &iter.key()[strip..];
                if !self.overlay.covered(&self.database, space, key) {
                    found.insert(key.to_vec(), iter.value().to_vec());
                }
                if found.len() > MAX_RANGE_READ {
                    return Err(too_big());
                }
                iter.next();
            }
            iter.status().map_err(engine_error)?;
        }
        let from = (self.database.clone(), space, start.to_vec());
        let to = (self.database.clone(), space, end.to_vec());
        for ((_, _, key), value) in self.overlay.points.range(from..to) {
            match value {
                Some(value) => found.insert(key.clone(), value.clone()),
                None => found.remove(key),
            };
        }
        if found.len() > MAX_RANGE_READ {
            return Err(too_big());
        }
        Ok(found.into_iter().collect())
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

fn too_big() -> Reply {
    Reply::error(format!(
        "ERR thicket: the command would read more than {MAX_RANGE_READ} members"
    ))
}
