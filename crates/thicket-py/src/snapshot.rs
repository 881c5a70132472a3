//! The `Snapshot` class.

use std::sync::Mutex;

use pyo3::prelude::*;
use pyo3::types::PyTuple;
use thicketdb::Db;

use crate::errors::{closed, raise};
use crate::iter::{Bounds, Iterator};
use crate::keyspace::Keyspace;
use crate::target::{read_options, Target};

/// A consistent read view: reads through it see the store as it was when
/// ``DB.snapshot()`` was called. Release it with ``release()`` or a
/// ``with`` block, so that compaction can drop the data it pins.
#[pyclass(module = "thicketdb", frozen)]
pub struct Snapshot {
    db: Db,
    snapshot: Mutex<Option<thicketdb::Snapshot>>,
}

impl Snapshot {
    pub fn new(db: Db) -> Snapshot {
        let snapshot = db.snapshot();
        Snapshot {
            db,
            snapshot: Mutex::new(Some(snapshot)),
        }
    }

    /// `keyspace`, or the store's default keyspace.
    fn target(&self, keyspace: Option<PyRef<'_, Keyspace>>) -> Target {
        match keyspace {
            Some(ks) => ks.target(),
            None => Target(self.db.default_keyspace()),
        }
    }

    /// The engine snapshot (a new pin of the same sequence).
    pub fn engine(&self) -> PyResult<thicketdb::Snapshot> {
        self.snapshot
            .lock()
            .map_err(|_| closed())?
            .clone()
            .ok_or_else(|| raise("Error", "the snapshot was released".to_string()))
    }
}

#[pymethods]
impl Snapshot {
    /// The value of ``key`` as of the snapshot, or ``default``; in
    /// ``keyspace`` when given, else in the default keyspace.
    #[pyo3(signature = (key, default = None, *, keyspace = None))]
    fn get<'py>(
        &self,
        py: Python<'py>,
        key: &[u8],
        default: Option<Bound<'py, PyAny>>,
        keyspace: Option<PyRef<'_, Keyspace>>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let opts = read_options(Some(self.engine()?), true);
        self.target(keyspace).get(py, key, default, opts)
    }

    /// As ``DB.iterator`` (or ``Keyspace.iterator`` with ``keyspace``),
    /// reading as of the snapshot.
    #[pyo3(signature = (*, start = None, stop = None, prefix = None, reverse = false,
                        keys = true, values = true, fill_cache = true, keyspace = None))]
    #[allow(clippy::too_many_arguments)]
    fn iterator(
        &self,
        start: Option<Vec<u8>>,
        stop: Option<Vec<u8>>,
        prefix: Option<Vec<u8>>,
        reverse: bool,
        keys: bool,
        values: bool,
        fill_cache: bool,
        keyspace: Option<PyRef<'_, Keyspace>>,
    ) -> PyResult<Iterator> {
        let bounds = Bounds::new(start, stop, prefix, fill_cache)?;
        Iterator::new(
            self.target(keyspace),
            bounds,
            reverse,
            keys,
            values,
            Some(self.engine()?),
        )
    }

    /// Unpins the snapshot; later reads through it fail.
    fn release(&self) -> PyResult<()> {
        self.snapshot.lock().map_err(|_| closed())?.take();
        Ok(())
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, _args: &Bound<'_, PyTuple>) -> PyResult<bool> {
        self.release()?;
        Ok(false)
    }
}
