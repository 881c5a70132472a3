//! The `DB` class: a store handle with dict-like access.

use std::path::PathBuf;
use std::sync::RwLock;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use thicketdb::{Db, Options, Profile, StatValue};

use crate::batch::WriteBatch;
use crate::errors::{closed, to_py};
use crate::iter::{Bounds, Iterator};
use crate::keyspace::Keyspace;
use crate::snapshot::Snapshot;
use crate::target::{read_options, Target};

/// The options of a profile by name.
pub fn profile_options(profile: &str) -> PyResult<Options> {
    profile
        .parse::<Profile>()
        .map(Profile::options)
        .map_err(to_py)
}

/// An option value as `Options::set` reads it.
fn option_text(value: &Bound<'_, PyAny>) -> PyResult<String> {
    if let Ok(b) = value.extract::<bool>() {
        return Ok(b.to_string());
    }
    Ok(value.str()?.to_string())
}

/// The options of `profile` with the engine options `options` by name.
fn named_options(profile: &str, options: Option<&Bound<'_, PyDict>>) -> PyResult<Options> {
    let mut opts = profile_options(profile)?;
    if let Some(options) = options {
        for (name, value) in options.iter() {
            let name: String = name.extract()?;
            opts.set(&name, &option_text(&value)?).map_err(to_py)?;
        }
    }
    Ok(opts)
}

/// A ThicketDB store.
///
/// ``DB(path, profile="default", create_if_missing=True, **options)`` opens
/// (or creates) the store in directory ``path``. ``profile`` is one of
/// ``thicketdb.PROFILES``; ``options`` are engine
/// options by name (``write_buffer_size=1 << 20``, ``compression="lz4"``,
/// ``error_if_exists=True``, ...). Use it as a context manager, or call
/// ``close()``. Keys and values are ``bytes``.
#[pyclass(module = "thicketdb", frozen)]
pub struct DB {
    db: RwLock<Option<Db>>,
    path: PathBuf,
}

impl DB {
    /// A handle of the open store, or `ClosedError`.
    pub fn handle(&self) -> PyResult<Db> {
        self.db
            .read()
            .map_err(|_| closed())?
            .as_ref()
            .cloned()
            .ok_or_else(closed)
    }

    /// The store's default keyspace, or `ClosedError`.
    fn target(&self) -> PyResult<Target> {
        self.handle().map(|db| Target(db.default_keyspace()))
    }
}

#[pymethods]
impl DB {
    #[new]
    #[pyo3(signature = (path, profile = "default", create_if_missing = true, **options))]
    fn new(
        py: Python<'_>,
        path: PathBuf,
        profile: &str,
        create_if_missing: bool,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<DB> {
        let mut opts = named_options(profile, options)?;
        opts.create_if_missing = create_if_missing;
        let db = py.detach(|| Db::open(&path, opts)).map_err(to_py)?;
        Ok(DB {
            db: RwLock::new(Some(db)),
            path,
        })
    }

    /// The store's directory (a ``pathlib.Path``).
    #[getter]
    fn path(&self) -> PathBuf {
        self.path.clone()
    }

    /// Whether ``close()`` was called.
    #[getter]
    fn closed(&self) -> bool {
        self.db.read().map(|d| d.is_none()).unwrap_or(true)
    }

    /// Stops background work and releases the store. Iterators, batches and
    /// snapshots made from it fail afterwards; closing twice is allowed.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let db = self.db.write().map_err(|_| closed())?.take();
        match db {
            Some(db) => py.detach(|| db.close()).map_err(to_py),
            None => Ok(()),
        }
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, pyo3::types::PyTuple>) -> PyResult<bool> {
        self.close(py)?;
        Ok(false)
    }

    /// The value of ``key``, or ``default`` when absent.
    #[pyo3(signature = (key, default = None, *, fill_cache = true))]
    fn get<'py>(
        &self,
        py: Python<'py>,
        key: &[u8],
        default: Option<Bound<'py, PyAny>>,
        fill_cache: bool,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let opts = read_options(None, fill_cache);
        self.target()?.get(py, key, default, opts)
    }

    /// Sets ``key`` to ``value``; ``sync=True`` makes it survive power loss.
    #[pyo3(signature = (key, value, *, sync = false))]
    fn put(&self, py: Python<'_>, key: &[u8], value: &[u8], sync: bool) -> PyResult<()> {
        self.target()?.put(py, key, value, sync)
    }

    /// Removes ``key`` (no error when absent).
    #[pyo3(signature = (key, *, sync = false))]
    fn delete(&self, py: Python<'_>, key: &[u8], sync: bool) -> PyResult<()> {
        self.target()?.delete(py, key, sync)
    }

    /// Removes every key in ``[start, end)`` with one range tombstone,
    /// however many keys the range holds (an empty range removes nothing).
    #[pyo3(signature = (start, end, *, sync = false))]
    fn delete_range(&self, py: Python<'_>, start: &[u8], end: &[u8], sync: bool) -> PyResult<()> {
        self.target()?.delete_range(py, start, end, sync)
    }

    fn __getitem__<'py>(&self, py: Python<'py>, key: &[u8]) -> PyResult<Bound<'py, PyBytes>> {
        self.target()?.get_item(py, key)
    }

    fn __setitem__(&self, py: Python<'_>, key: &[u8], value: &[u8]) -> PyResult<()> {
        self.put(py, key, value, false)
    }

    fn __delitem__(&self, py: Python<'_>, key: &[u8]) -> PyResult<()> {
        self.delete(py, key, false)
    }

    fn __contains__(&self, py: Python<'_>, key: &[u8]) -> PyResult<bool> {
        self.target()?.contains(py, key)
    }

    /// Keys in order (``for key in db``).
    fn __iter__(&self) -> PyResult<Iterator> {
        Iterator::keys(self.target()?)
    }

    /// A batch of updates applied atomically. As a context manager it is
    /// written when the block exits normally and discarded on an exception.
    #[pyo3(signature = (*, sync = false))]
    fn write_batch(&self, sync: bool) -> PyResult<WriteBatch> {
        Ok(WriteBatch::new(self.handle()?, sync))
    }

    /// An iterator over ``(key, value)`` pairs (or keys, or values) in key
    /// order: ``start`` inclusive, ``stop`` exclusive, or every key with
    /// ``prefix``; ``reverse=True`` goes from the end. With ``snapshot``, it
    /// reads as of that snapshot.
    #[pyo3(signature = (*, start = None, stop = None, prefix = None, reverse = false,
                        keys = true, values = true, snapshot = None, fill_cache = true))]
    #[allow(clippy::too_many_arguments)]
    fn iterator(
        &self,
        start: Option<Vec<u8>>,
        stop: Option<Vec<u8>>,
        prefix: Option<Vec<u8>>,
        reverse: bool,
        keys: bool,
        values: bool,
        snapshot: Option<PyRef<'_, Snapshot>>,
        fill_cache: bool,
    ) -> PyResult<Iterator> {
        let bounds = Bounds::new(start, stop, prefix, fill_cache)?;
        let snapshot = snapshot.map(|s| s.engine()).transpose()?;
        Iterator::new(self.target()?, bounds, reverse, keys, values, snapshot)
    }

    /// Creates keyspace ``name``: an independent ordered namespace of the
    /// store with its own options (``profile`` and engine options by name,
    /// as for ``DB``; store-wide ones stay the store's). Durable once it
    /// returns. ``InvalidArgumentError`` when the name is taken or empty.
    #[pyo3(signature = (name, profile = "default", **options))]
    fn create_keyspace(
        &self,
        py: Python<'_>,
        name: &str,
        profile: &str,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Keyspace> {
        let opts = named_options(profile, options)?;
        let db = self.handle()?;
        let keyspace = py
            .detach(|| db.create_keyspace(name, opts))
            .map_err(to_py)?;
        Ok(Keyspace::new(keyspace))
    }

    /// The keyspace ``name`` (``"default"`` is the store's own);
    /// ``KeyspaceNotFoundError`` when there is none.
    fn keyspace(&self, name: &str) -> PyResult<Keyspace> {
        let keyspace = self.handle()?.keyspace(name).map_err(to_py)?;
        Ok(Keyspace::new(keyspace))
    }

    /// Drops keyspace ``name`` and all its data, durably; its ``Keyspace``
    /// objects raise ``KeyspaceNotFoundError`` afterwards. The default
    /// keyspace cannot be dropped (``InvalidArgumentError``).
    fn drop_keyspace(&self, py: Python<'_>, name: &str) -> PyResult<()> {
        let db = self.handle()?;
        py.detach(|| db.drop_keyspace(name)).map_err(to_py)
    }

    /// The keyspace names, ``"default"`` first, then in order of creation.
    fn list_keyspaces(&self) -> PyResult<Vec<String>> {
        Ok(self.handle()?.list_keyspaces())
    }

    /// A consistent read view of the store as of now.
    fn snapshot(&self) -> PyResult<Snapshot> {
        let db = self.handle()?;
        Ok(Snapshot::new(db))
    }

    /// Engine statistics as a dict: every field of the engine's `Stats`
    /// (levels, tables, bytes written, write amplification, fsyncs,
    /// compactions, cache hits, ...).
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let db = self.handle()?;
        let s = py.detach(|| db.stats());
        let d = PyDict::new(py);
        // Every field, by the engine's own list: nothing to keep in sync.
        for (name, value) in s.fields() {
            match value {
                StatValue::U64(v) => d.set_item(name, v)?,
                StatValue::Usize(v) => d.set_item(name, v)?,
                StatValue::F64(v) => d.set_item(name, v)?,
                StatValue::Bool(v) => d.set_item(name, v)?,
                StatValue::U64List(v) => d.set_item(name, v)?,
                StatValue::UsizeList(v) => d.set_item(name, v)?,
                StatValue::Text(v) => d.set_item(name, v)?,
            }
        }
        Ok(d)
    }

    /// A LevelDB-style property (``leveldb.stats``, ``leveldb.sstables``,
    /// ``leveldb.num-files-at-level<N>``, ``leveldb.approximate-memory-usage``),
    /// or None for an unknown name.
    fn property(&self, name: &str) -> PyResult<Option<String>> {
        Ok(self.handle()?.property(name))
    }

    /// Approximate bytes of tables holding keys in ``[start, stop)``.
    fn approximate_size(&self, py: Python<'_>, start: &[u8], stop: &[u8]) -> PyResult<u64> {
        let db = self.handle()?;
        py.detach(|| db.approximate_size(start, stop))
            .map_err(to_py)
    }

    /// Compacts the tables overlapping ``[start, stop]`` (None: unbounded)
    /// into the bottom level, dropping overwritten values and deletions.
    #[pyo3(signature = (start = None, stop = None))]
    fn compact_range(
        &self,
        py: Python<'_>,
        start: Option<&[u8]>,
        stop: Option<&[u8]>,
    ) -> PyResult<()> {
        self.target()?.compact_range(py, start, stop)
    }

    /// Writes the memtable to a table.
    fn flush(&self, py: Python<'_>) -> PyResult<()> {
        let db = self.handle()?;
        py.detach(|| db.flush()).map_err(to_py)
    }

    fn __repr__(&self) -> String {
        let state = if self.closed() { "closed" } else { "open" };
        format!("<thicketdb.DB {} ({state})>", self.path.display())
    }
}
