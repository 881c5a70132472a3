//! Keyspaces (RocksDB's column families): independent ordered namespaces
//! of one store, each a tree of its own (`lsm/tree.rs`) with its own
//! options, all sharing the store's log, sequence numbers and snapshots, so a
//! `WriteBatch` across keyspaces is atomic and a snapshot reads them all at
//! one point. The MANIFEST records each keyspace's creation (id, name,
//! options), its table changes and its drop (`docs/format.md`). In a
//! chunked store a keyspace is a chunk list of its own instead
//! (`chunked/keyspaces.rs`), recorded in `CHUNKS`.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::chunked::ChunkSpace;
use super::keyspace_rules::{keyspace_options, DEFAULT_KEYSPACE_NAME, MAX_KEYSPACE_NAME};
use super::lsm::obsolete::collect_obsolete_files;
use super::lsm::tree::{memtable_on_log, Tree};
use super::lsm::{DbInner, SuperVersion};
use super::{range, Engine, Target};
use super::{Db, DbIterator, Range, ReadOptions, WriteBatch, WriteOptions};
use crate::error::{Error, Result};
use crate::memtable::Memtable;
use crate::options::Options;
use crate::version::edit::KeyspaceDef;
use crate::version::{Version, VersionEdit};

/// A handle on one keyspace of a store: the data API of `Db`, on this
/// keyspace's keys. Cheap to clone; keeps the store open like a `Db`.
/// Once the keyspace is dropped, every call returns
/// `Error::KeyspaceNotFound`.
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// let db = thicketdb::Db::open(dir.path(), thicketdb::Options::default())?;
/// let mut options = thicketdb::Options::default();
/// options.bloom_bits_per_key = 16;
/// let users = db.create_keyspace("users", options)?;
/// users.put("alice", "1")?;
/// assert_eq!(users.get("alice")?, Some(b"1".to_vec()));
/// assert_eq!(db.get("alice")?, None, "the default keyspace is another namespace");
/// assert_eq!(db.list_keyspaces(), ["default", "users"]);
/// # Ok::<(), thicketdb::Error>(())
/// ```
#[derive(Clone)]
pub struct Keyspace {
    db: Db,
    space: Space,
}

/// A keyspace in either engine.
#[derive(Clone)]
enum Space {
    /// The store's LSM engine and the keyspace's tree.
    Tree(Arc<DbInner>, Arc<Tree>),
    /// The keyspace's chunks (the store is `db`'s chunked engine).
    Chunked(Arc<ChunkSpace>),
}

impl std::fmt::Debug for Keyspace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Keyspace")
            .field("name", &self.name())
            .finish()
    }
}

impl Keyspace {
    /// The default keyspace of `db`.
    pub(super) fn default_of(db: &Db) -> Keyspace {
        let space = match &db.engine {
            Engine::Lsm(h) => Space::Tree(h.inner.clone(), h.inner.default.clone()),
            Engine::Chunked(c) => Space::Chunked(c.0.default_space().clone()),
        };
        Keyspace {
            db: db.clone(),
            space,
        }
    }

    /// The keyspace's name.
    pub fn name(&self) -> &str {
        match &self.space {
            Space::Tree(_, tree) => &tree.name,
            Space::Chunked(space) => &space.name,
        }
    }

    /// The options the keyspace runs with (store-wide ones, such as the
    /// log, caches and threads, are the store's).
    pub fn options(&self) -> &Options {
        match &self.space {
            Space::Tree(_, tree) => &tree.options,
            Space::Chunked(space) => &space.options,
        }
    }

    /// The keyspace's id in batches, the MANIFEST and `CHUNKS`.
    pub(crate) fn id(&self) -> u32 {
        match &self.space {
            Space::Tree(_, tree) => tree.id,
            Space::Chunked(space) => space.id,
        }
    }

    /// The open store the keyspace belongs to ([`Db`]'s `instance`).
    pub(crate) fn store(&self) -> u64 {
        self.db.instance
    }

    /// For `data_api!`: the store the keyspace is in.
    pub(super) fn db(&self) -> &Db {
        &self.db
    }

    /// For `data_api!`: this keyspace's tree or chunks.
    fn target(&self) -> Target<'_> {
        match (&self.space, &self.db.engine) {
            (Space::Tree(inner, tree), _) => Target::Tree(inner, tree),
            (Space::Chunked(space), Engine::Chunked(c)) => Target::Chunked(&c.0, space),
            (Space::Chunked(_), Engine::Lsm(_)) => unreachable!("chunks belong to a chunked store"),
        }
    }

    /// For `data_api!`: this handle.
    fn handle(&self) -> Keyspace {
        self.clone()
    }

    data_api!();
}

impl Db {
    /// Creates keyspace `name` with its own `options` for what a keyspace
    /// may choose (profile and compaction policy, compression, Bloom bits,
    /// table and block sizes, memtable size, LSbM, TRIAD-DISK, ...; in a
    /// chunked store chunk size, funk log limits, compression, Bloom bits,
    /// table sizes); the store-wide ones (key order, log, caches, threads)
    /// are the store's. The keyspace is durable once this returns.
    /// `InvalidArgument` when the name is taken, empty or longer than 255
    /// bytes, or when `options` are of another layout than the store's.
    pub fn create_keyspace(&self, name: &str, options: Options) -> Result<Keyspace> {
        let inner = match &self.engine {
            Engine::Lsm(h) => &h.inner,
            Engine::Chunked(c) => {
                let space = c.0.create_keyspace(name, &options)?;
                return Ok(Keyspace {
                    db: self.clone(),
                    space: Space::Chunked(space),
                });
            }
        };
        inner.check_open()?;
        inner.check_writable("create_keyspace")?;
        if name.is_empty() || name.len() > MAX_KEYSPACE_NAME {
            return Err(Error::InvalidArgument(format!(
                "keyspace name {name:?} must be 1 to {MAX_KEYSPACE_NAME} bytes"
            )));
        }
        options.validate()?;
        if options.layout != crate::options::Layout::Lsm {
            return Err(Error::InvalidArgument(format!(
                "a keyspace of an LSM store is an LSM tree: profile {} asks for layout {}, \
                 and the layout is chosen per store",
                options.profile, options.layout
            )));
        }
        // The tree runs with the store's store-wide options (the log,
        // TRIAD-LOG, ...) beside the requested ones, so that mix is what
        // must validate: an `lsbm` keyspace of a `triad_log` store would
        // keep log tables in its compaction buffer, which `validate`
        // refuses.
        let tree_options = keyspace_options(&inner.options, &options);
        tree_options.validate().map_err(|e| {
            Error::InvalidArgument(format!(
                "keyspace {name:?} with the store's store-wide options: {e}"
            ))
        })?;
        // Under `log` no write group is mid-commit and no memtable switch
        // runs: the keyspace's first log is the current one.
        let log = inner.log.lock();
        let mut versions = inner.versions.lock();
        if self.find(name).is_some() {
            return Err(Error::InvalidArgument(format!(
                "keyspace {name:?} already exists"
            )));
        }
        let id = versions.new_keyspace_id();
        let edit = VersionEdit {
            keyspace: id,
            create_keyspace: Some(KeyspaceDef {
                name: name.to_string(),
                options: tree_options.encode(),
            }),
            log_number: Some(log.number),
            ..VersionEdit::default()
        };
        let version = versions
            .log_and_apply(edit)?
            .ok_or_else(|| Error::invariant("a created keyspace has no version"))?;
        let mem = memtable_on_log(&tree_options, &inner.backings, log.number);
        let tree = Tree::new(id, name.to_string(), tree_options, version, mem, Vec::new());
        let tree = Arc::new(tree);
        Arc::make_mut(&mut inner.trees.write()).push(tree.clone());
        Ok(Keyspace {
            db: self.clone(),
            space: Space::Tree(inner.clone(), tree),
        })
    }

    /// A handle on the store's default keyspace, the one `Db`'s own data
    /// methods act on: bindings and callers that serve both the default and
    /// named keyspaces write each operation once, against [`Keyspace`].
    pub fn default_keyspace(&self) -> Keyspace {
        Keyspace::default_of(self)
    }

    /// A handle on keyspace `name` (`"default"` is the store's default
    /// keyspace); `KeyspaceNotFound` when there is none.
    pub fn keyspace(&self, name: &str) -> Result<Keyspace> {
        let not_found = || Error::KeyspaceNotFound(format!("{name:?}"));
        let space = match &self.engine {
            Engine::Lsm(h) => {
                h.inner.check_open()?;
                Space::Tree(h.inner.clone(), self.find(name).ok_or_else(not_found)?)
            }
            Engine::Chunked(c) => Space::Chunked(c.0.find_space(name).ok_or_else(not_found)?),
        };
        Ok(Keyspace {
            db: self.clone(),
            space,
        })
    }

    /// The names of every keyspace, the default one first, then in order
    /// of creation.
    pub fn list_keyspaces(&self) -> Vec<String> {
        match &self.engine {
            Engine::Lsm(h) => h.inner.trees().iter().map(|t| t.name.clone()).collect(),
            Engine::Chunked(c) => c.0.keyspace_names(),
        }
    }

    /// Drops keyspace `name` and all its data, durably: its tables' space
    /// is released as soon as no reader holds them, and its writes never
    /// come back, after a reopen or a crash either. Handles on it get
    /// `KeyspaceNotFound` from then on; a batch op for it written after
    /// the drop is discarded. The default keyspace cannot be dropped.
    pub fn drop_keyspace(&self, name: &str) -> Result<()> {
        let inner = match &self.engine {
            Engine::Lsm(h) => &h.inner,
            Engine::Chunked(c) => return c.0.drop_keyspace(name),
        };
        inner.check_open()?;
        inner.check_writable("drop_keyspace")?;
        if name == DEFAULT_KEYSPACE_NAME {
            return Err(Error::InvalidArgument(
                "the default keyspace cannot be dropped".into(),
            ));
        }
        {
            let _log = inner.log.lock();
            let mut versions = inner.versions.lock();
            let tree = self
                .find(name)
                .ok_or_else(|| Error::KeyspaceNotFound(format!("{name:?}")))?;
            versions.log_and_apply(VersionEdit {
                keyspace: tree.id,
                drop_keyspace: true,
                ..VersionEdit::default()
            })?;
            tree.dropped.store(true, Ordering::Release);
            Arc::make_mut(&mut inner.trees.write()).retain(|t| !Arc::ptr_eq(t, &tree));
            // Handles may outlive the drop: let go of the memtables (and
            // their logs) and the version (and its tables) now.
            *tree.super_version.write() = Arc::new(SuperVersion {
                mem: Arc::new(Memtable::new(0, tree.options.comparator.clone())),
                imms: Vec::new(),
                version: Arc::new(Version::empty(tree.options.comparator.clone())),
                pending_compaction_bytes: 0,
            });
        }
        collect_obsolete_files(inner);
        Ok(())
    }

    fn find(&self, name: &str) -> Option<Arc<Tree>> {
        self.lsm()?.trees().iter().find(|t| t.name == name).cloned()
    }
}
