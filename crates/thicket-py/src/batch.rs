//! The `WriteBatch` class.

use std::sync::Mutex;

use pyo3::prelude::*;
use pyo3::types::PyTuple;
use thicketdb::{Db, WriteOptions};

use crate::errors::{closed, to_py};
use crate::keyspace::Keyspace;

/// Updates applied atomically by ``write()``, or on leaving a ``with``
/// block without an exception (an exception discards them).
#[pyclass(module = "thicketdb", frozen)]
pub struct WriteBatch {
    db: Db,
    sync: bool,
    /// `None` once written or discarded.
    batch: Mutex<Option<thicketdb::WriteBatch>>,
}

impl WriteBatch {
    pub fn new(db: Db, sync: bool) -> WriteBatch {
        WriteBatch {
            db,
            sync,
            batch: Mutex::new(Some(thicketdb::WriteBatch::new())),
        }
    }

    fn with<T>(&self, f: impl FnOnce(&mut thicketdb::WriteBatch) -> PyResult<T>) -> PyResult<T> {
        let mut guard = self.batch.lock().map_err(|_| closed())?;
        match guard.as_mut() {
            Some(batch) => f(batch),
            None => Err(crate::errors::raise(
                "Error",
                "the batch was already written or discarded".to_string(),
            )),
        }
    }
}

#[pymethods]
impl WriteBatch {
    /// Sets ``key`` to ``value`` in ``keyspace`` (default: the store's
    /// default keyspace); one batch may span keyspaces and stays atomic.
    #[pyo3(signature = (key, value, *, keyspace = None))]
    fn put(&self, key: &[u8], value: &[u8], keyspace: Option<PyRef<'_, Keyspace>>) -> PyResult<()> {
        self.with(|b| match keyspace {
            Some(ks) => b.put_in(ks.engine(), key, value).map_err(to_py),
            None => b.put(key, value).map_err(to_py),
        })
    }

    /// Removes ``key`` from ``keyspace`` (default: the default keyspace).
    #[pyo3(signature = (key, *, keyspace = None))]
    fn delete(&self, key: &[u8], keyspace: Option<PyRef<'_, Keyspace>>) -> PyResult<()> {
        self.with(|b| match keyspace {
            Some(ks) => b.delete_in(ks.engine(), key).map_err(to_py),
            None => b.delete(key).map_err(to_py),
        })
    }

    /// Removes every key in ``[start, end)`` of ``keyspace`` (default: the
    /// default keyspace) when the batch is written.
    #[pyo3(signature = (start, end, *, keyspace = None))]
    fn delete_range(
        &self,
        start: &[u8],
        end: &[u8],
        keyspace: Option<PyRef<'_, Keyspace>>,
    ) -> PyResult<()> {
        self.with(|b| match keyspace {
            Some(ks) => b.delete_range_in(ks.engine(), start, end).map_err(to_py),
            None => b.delete_range(start, end).map_err(to_py),
        })
    }

    /// Removes every update from the batch.
    fn clear(&self) -> PyResult<()> {
        self.with(|b| {
            b.clear();
            Ok(())
        })
    }

    fn __len__(&self) -> PyResult<usize> {
        self.with(|b| Ok(b.len()))
    }

    /// Applies the updates atomically; the batch cannot be used afterwards.
    fn write(&self, py: Python<'_>) -> PyResult<()> {
        let batch = self.batch.lock().map_err(|_| closed())?.take();
        let Some(batch) = batch else {
            return Err(crate::errors::raise(
                "Error",
                "the batch was already written or discarded".to_string(),
            ));
        };
        let opts = WriteOptions { sync: self.sync };
        py.detach(|| self.db.write_opt(batch, opts)).map_err(to_py)
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (exc_type, *_rest))]
    fn __exit__(
        &self,
        py: Python<'_>,
        exc_type: Option<Bound<'_, PyAny>>,
        _rest: &Bound<'_, PyTuple>,
    ) -> PyResult<bool> {
        if exc_type.is_some_and(|t| !t.is_none()) {
            self.batch.lock().map_err(|_| closed())?.take();
        } else {
            self.write(py)?;
        }
        Ok(false)
    }
}
