//! The engine as the commands see it: striped key locks that make every
//! write command atomic against every other, and `Txn`, the reads and
//! buffered writes of one command (or one MULTI/EXEC) committed as one
//! engine batch.

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};

use parking_lot::{Mutex, MutexGuard};
use thicketdb::{Db, ReadOptions, Snapshot, WriteBatch};

use crate::durability::SYNC_MARKER_KEY;
use crate::resp::Reply;

/// Lock stripes; keys hash onto them. Many more than concurrent writers,
/// so unrelated keys rarely wait for each other.
const STRIPES: usize = 4096;

pub struct Store {
    db: Db,
    stripes: Box<[Mutex<()>]>,
    hasher: RandomState,
}

/// Locks held for the keys of one write command or transaction.
pub struct KeyLocks<'a> {
    _guards: Vec<MutexGuard<'a, ()>>,
}

impl Store {
    pub fn new(db: Db) -> Store {
        Store {
            db,
            stripes: (0..STRIPES).map(|_| Mutex::new(())).collect(),
            hasher: RandomState::new(),
        }
    }

    pub fn db(&self) -> &Db {
        &self.db
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
}

/// Errors of the engine as replies.
pub fn engine_error(e: thicketdb::Error) -> Reply {
    Reply::error(format!("ERR thicket: {e}"))
}

/// The reads and writes of one command or transaction. Reads see the
/// transaction's own earlier writes; writes reach the engine in `commit`.
pub struct Txn<'s> {
    store: &'s Store,
    batch: WriteBatch,
    /// Writes so far, for reads in later commands of a MULTI (a single
    /// command reads before it writes and needs none).
    overlay: Option<HashMap<Vec<u8>, Option<Vec<u8>>>>,
    snapshot: Option<Snapshot>,
}

impl<'s> Txn<'s> {
    pub fn new(store: &'s Store) -> Txn<'s> {
        Txn {
            store,
            batch: WriteBatch::new(),
            overlay: None,
            snapshot: None,
        }
    }

    /// A transaction of several commands, whose reads see earlier writes.
    pub fn multi(store: &'s Store) -> Txn<'s> {
        Txn {
            overlay: Some(HashMap::new()),
            ..Txn::new(store)
        }
    }

    /// Reads from here on see one point in time (MGET).
    pub fn pin_snapshot(&mut self) {
        if self.snapshot.is_none() {
            self.snapshot = Some(self.store.db.snapshot());
        }
    }

    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, Reply> {
        if let Some(written) = self.overlay.as_ref().and_then(|o| o.get(key)) {
            return Ok(written.clone());
        }
        let result = match &self.snapshot {
            Some(snapshot) => {
                let opts = ReadOptions {
                    snapshot: Some(snapshot.clone()),
                    ..ReadOptions::default()
                };
                self.store.db.get_opt(key, &opts)
            }
            None => self.store.db.get(key),
        };
        result.map_err(engine_error)
    }

    pub fn put(&mut self, key: &[u8], value: &[u8]) -> Result<(), Reply> {
        check_writable(key)?;
        self.batch
            .put(key, value)
            .map_err(|e| Reply::error(format!("ERR {e}")))?;
        if let Some(overlay) = &mut self.overlay {
            overlay.insert(key.to_vec(), Some(value.to_vec()));
        }
        Ok(())
    }

    pub fn delete(&mut self, key: &[u8]) -> Result<(), Reply> {
        check_writable(key)?;
        self.batch
            .delete(key)
            .map_err(|e| Reply::error(format!("ERR {e}")))?;
        if let Some(overlay) = &mut self.overlay {
            overlay.insert(key.to_vec(), None);
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
