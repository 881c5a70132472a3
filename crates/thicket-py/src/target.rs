//! What the data methods of `DB` and `Keyspace` act on: the store's default
//! keyspace or one named keyspace, both an engine `Keyspace`, so the two
//! Python classes share one implementation.

use pyo3::prelude::*;
use pyo3::types::PyBytes;
use thicketdb::{DbIterator, ReadOptions, Snapshot, WriteOptions};

use crate::errors::{raise, to_py};

/// A keyspace: the store's own (`Db::default_keyspace`) or a named one.
#[derive(Clone)]
pub struct Target(pub thicketdb::Keyspace);

fn write_options(sync: bool) -> WriteOptions {
    WriteOptions { sync }
}

impl Target {
    /// The value of `key`, or `default` when absent.
    pub fn get<'py>(
        &self,
        py: Python<'py>,
        key: &[u8],
        default: Option<Bound<'py, PyAny>>,
        opts: ReadOptions,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let value = py.detach(|| self.get_opt(key, &opts)).map_err(to_py)?;
        Ok(match value {
            Some(v) => Some(PyBytes::new(py, &v).into_any()),
            None => default,
        })
    }

    /// `target[key]`: the value, or `NotFoundError`.
    pub fn get_item<'py>(&self, py: Python<'py>, key: &[u8]) -> PyResult<Bound<'py, PyBytes>> {
        let opts = ReadOptions::default();
        match py.detach(|| self.get_opt(key, &opts)).map_err(to_py)? {
            Some(v) => Ok(PyBytes::new(py, &v)),
            None => Err(raise(
                "NotFoundError",
                format!("{:?}", PyBytes::new(py, key)),
            )),
        }
    }

    pub fn contains(&self, py: Python<'_>, key: &[u8]) -> PyResult<bool> {
        let opts = ReadOptions::default();
        py.detach(|| self.get_opt(key, &opts))
            .map(|v| v.is_some())
            .map_err(to_py)
    }

    pub fn put(&self, py: Python<'_>, key: &[u8], value: &[u8], sync: bool) -> PyResult<()> {
        let opts = write_options(sync);
        py.detach(|| self.0.put_opt(key, value, opts))
            .map_err(to_py)
    }

    pub fn delete(&self, py: Python<'_>, key: &[u8], sync: bool) -> PyResult<()> {
        let opts = write_options(sync);
        py.detach(|| self.0.delete_opt(key, opts)).map_err(to_py)
    }

    pub fn delete_range(
        &self,
        py: Python<'_>,
        start: &[u8],
        end: &[u8],
        sync: bool,
    ) -> PyResult<()> {
        let opts = write_options(sync);
        py.detach(|| self.0.delete_range_opt(start, end, opts))
            .map_err(to_py)
    }

    pub fn compact_range(
        &self,
        py: Python<'_>,
        start: Option<&[u8]>,
        stop: Option<&[u8]>,
    ) -> PyResult<()> {
        py.detach(|| self.0.compact_range(start, stop))
            .map_err(to_py)
    }

    fn get_opt(&self, key: &[u8], opts: &ReadOptions) -> thicketdb::Result<Option<Vec<u8>>> {
        self.0.get_opt(key, opts)
    }

    pub fn iter(&self, opts: ReadOptions) -> thicketdb::Result<DbIterator> {
        self.0.iter(opts)
    }
}

/// Read options with a snapshot and `fill_cache`.
pub fn read_options(snapshot: Option<Snapshot>, fill_cache: bool) -> ReadOptions {
    ReadOptions {
        snapshot,
        fill_cache,
        ..ReadOptions::default()
    }
}
