//! ThicketDB: a persistent, ordered, write-optimized key-value store.
//!
//! ```
//! use thicketdb::{Db, Options, Profile};
//! # let dir = tempfile::tempdir().unwrap();
//! # let path = dir.path();
//! // A profile picks the techniques; builder methods tune the rest.
//! let db = Db::open(path, Profile::Default.options().write_buffer_size(4 << 20))?;
//! db.put("hello", "world")?;
//! assert_eq!(db.get("hello")?.as_deref(), Some(&b"world"[..]));
//! db.delete("hello")?;
//! assert_eq!(db.get("hello")?, None);
//! db.close()?;
//!
//! // The store remembers its profile: reopen with its defaults.
//! let db = Db::open(path, Options::default())?;
//! assert!(db.get("hello")?.is_none());
//! # Ok::<(), thicketdb::Error>(())
//! ```
//!
//! The API is what this crate root exports: [`Db`] (reads, writes,
//! [`WriteBatch`], [`Snapshot`], the [`Range`] iterator and the
//! [`DbIterator`] cursor, checkpoints, statistics), [`Options`] and
//! [`Profile`], [`Error`]. Layers, lowest first (see
//! `docs/architecture.md`): `error`, `format`, `io`, `iterator`, `log`,
//! `table`, `memtable`, `stats`, `options`, `version`, `compaction`, `db`.

#![deny(missing_docs)]

// The API is what this file re-exports. The internal layers are public
// only with the `internals` feature, which the workspace's own tools (CLI,
// stress and fault tests, fuzz targets, examples) turn on; they are not
// part of the API and may change.
macro_rules! internal_modules {
    ($($name:ident),* $(,)?) => {$(
        #[cfg(feature = "internals")]
        #[doc(hidden)]
        pub mod $name;
        #[cfg(not(feature = "internals"))]
        #[allow(dead_code, unused_imports)]
        mod $name;
    )*};
}
internal_modules!(compaction, format, io, iterator, log, memtable, table, version);
mod db;
mod error;
mod options;
mod stats;

pub use db::check;
pub use db::dump;
pub use db::{destroy, repair, RepairReport};
pub use db::{CheckpointReport, Db, DbIterator, Range, Snapshot, SpaceUsage, Stats, WriteBatch};
pub use db::{Keyspace, DEFAULT_KEYSPACE_NAME, MAX_KEYSPACE_NAME};
pub use db::{ReadOptions, WriteOptions, MAX_KEY_SIZE, MAX_VALUE_SIZE};
pub use error::{Error, Printable, Result};
pub use format::{Comparator, KeyOrder};
pub use io::{
    FileLock, FileSyncer, FileSystem, PosixFs, RandomAccessFile, SequentialFile, WritableFile,
};
pub use log::RecoveryMode;
pub use options::{Durability, Layout, Options, PolicyKind, Profile};
pub use stats::StatValue;

pub use table::{BlockCache, CompressionType, FilterPolicy};

/// Internals the workspace's tests and tools reach; not part of the API.
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod internals {
    pub use crate::db::chunked::checkpoint_mark::CheckpointMark;
    pub use crate::db::chunked::closed::ClosedLogs;
    pub use crate::db::chunked::incarnations::Incarnations;
    pub use crate::db::chunked::manifest::{ChunkList, CHUNK_LIST_VERSION};
    pub use crate::db::chunked::munk_list::{MunkList, MunkListIterator};
    pub use crate::stats::Counters;
}
#[cfg(feature = "internals")]
#[doc(hidden)]
pub use internals::*;
