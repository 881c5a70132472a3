//! ThicketDB: a persistent, ordered, write-optimized key-value store.
//!
//! ```no_run
//! use thicketdb::{Db, Options};
//! let db = Db::open("/tmp/example-db", Options::default())?;
//! db.put(b"hello", b"world")?;
//! assert_eq!(db.get(b"hello")?, Some(b"world".to_vec()));
//! # Ok::<(), thicketdb::Error>(())
//! ```
//!
//! Layers, lowest first (see `docs/architecture.md`): `error`, `format`,
//! `io`, `iterator`, `log`, `table`, `memtable`, `stats`, `options`,
//! `version`, `compaction`, `db`.

pub mod compaction;
pub mod db;
pub mod error;
pub mod format;
pub mod io;
pub mod iterator;
pub mod log;
pub mod memtable;
pub mod options;
pub mod stats;
pub mod table;
pub mod version;

pub use db::check;
pub use db::dump;
pub use db::{CheckpointReport, Db, DbIterator, Range, Snapshot, SpaceUsage, Stats, WriteBatch};
pub use db::{ReadOptions, WriteOptions};
pub use error::{Error, Result};
pub use format::{Comparator, KeyOrder};
pub use options::{Layout, Options, Profile};
pub use stats::StatValue;
