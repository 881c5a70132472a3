//! The `Keyspace` class: one named keyspace of a store, with the data
//! methods of `DB`.

use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::iter::{Bounds, Iterator};
use crate::snapshot::Snapshot;
use crate::target::{read_options, Target};

/// An independent ordered namespace of a store (RocksDB's column family),
/// from ``DB.create_keyspace`` or ``DB.keyspace``: ``get``, ``put``,
/// ``delete``, ``delete_range``, ``iterator``, ``compact_range`` and the
/// mapping protocol, as on ``DB``, on this keyspace's keys. A batch of the
/// store writes to it with ``keyspace=``; snapshots of the store read it.
/// Once dropped, its methods raise ``KeyspaceNotFoundError``.
#[pyclass(module = "thicketdb", frozen)]
pub struct Keyspace {
    keyspace: thicketdb::Keyspace,
}

impl Keyspace {
    pub fn new(keyspace: thicketdb::Keyspace) -> Keyspace {
        Keyspace { keyspace }
    }

    /// The engine keyspace.
    pub fn engine(&self) -> &thicketdb::Keyspace {
        &self.keyspace
    }

    pub fn target(&self) -> Target {
        Target(self.keyspace.clone())
    }
}

#[pymethods]
impl Keyspace {
    /// The keyspace's name.
    #[getter]
    fn name(&self) -> &str {
        self.keyspace.name()
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
        self.target().get(py, key, default, opts)
    }

    /// Sets ``key`` to ``value``.
    #[pyo3(signature = (key, value, *, sync = false))]
    fn put(&self, py: Python<'_>, key: &[u8], value: &[u8], sync: bool) -> PyResult<()> {
        self.target().put(py, key, value, sync)
    }

    /// Removes ``key`` (no error when absent).
    #[pyo3(signature = (key, *, sync = false))]
    fn delete(&self, py: Python<'_>, key: &[u8], sync: bool) -> PyResult<()> {
        self.target().delete(py, key, sync)
    }

    /// Removes every key in ``[start, end)`` with one range tombstone.
    #[pyo3(signature = (start, end, *, sync = false))]
    fn delete_range(&self, py: Python<'_>, start: &[u8], end: &[u8], sync: bool) -> PyResult<()> {
        self.target().delete_range(py, start, end, sync)
    }

    fn __getitem__<'py>(&self, py: Python<'py>, key: &[u8]) -> PyResult<Bound<'py, PyBytes>> {
        self.target().get_item(py, key)
    }

    fn __setitem__(&self, py: Python<'_>, key: &[u8], value: &[u8]) -> PyResult<()> {
        self.put(py, key, value, false)
    }

    fn __delitem__(&self, py: Python<'_>, key: &[u8]) -> PyResult<()> {
        self.delete(py, key, false)
    }

    fn __contains__(&self, py: Python<'_>, key: &[u8]) -> PyResult<bool> {
        self.target().contains(py, key)
    }

    /// Keys in order.
    fn __iter__(&self) -> PyResult<Iterator> {
        Iterator::keys(self.target())
    }

    /// As ``DB.iterator``, over this keyspace.
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
        Iterator::new(self.target(), bounds, reverse, keys, values, snapshot)
    }

    /// As ``DB.compact_range``, in this keyspace.
    #[pyo3(signature = (start = None, stop = None))]
    fn compact_range(
        &self,
        py: Python<'_>,
        start: Option<&[u8]>,
        stop: Option<&[u8]>,
    ) -> PyResult<()> {
        self.target().compact_range(py, start, stop)
    }

    fn __repr__(&self) -> String {
        format!("<thicketdb.Keyspace {:?}>", self.keyspace.name())
    }
}
