//! `thicketdb._thicketdb`: the native half of the `thicketdb` Python package
//! (the Python half, in `python/thicketdb`, defines the exceptions and
//! re-exports these classes).
//!
//! Every engine call runs with the interpreter detached (the GIL released),
//! so other Python threads run meanwhile; the classes are safe to share
//! between threads. Iterators, batches and snapshots hold a handle of the
//! store, so they keep it alive.

mod batch;
mod db;
mod errors;
mod iter;
mod keyspace;
mod snapshot;
mod target;

use pyo3::prelude::*;

/// Deletes the store in `path` (its files, then the directory when empty).
#[pyfunction]
fn destroy(py: Python<'_>, path: std::path::PathBuf) -> PyResult<()> {
    py.detach(|| thicketdb::destroy(&path))
        .map_err(errors::to_py)
}

/// Rebuilds the MANIFEST of the store in `path` from the tables that
/// survive; returns a description of what was recovered and dropped.
#[pyfunction]
#[pyo3(signature = (path, profile = "default"))]
fn repair(py: Python<'_>, path: std::path::PathBuf, profile: &str) -> PyResult<String> {
    let options = db::profile_options(profile)?;
    py.detach(|| thicketdb::repair(&path, &options))
        .map(|report| report.to_string())
        .map_err(errors::to_py)
}

#[pymodule]
fn _thicketdb(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<db::DB>()?;
    m.add_class::<batch::WriteBatch>()?;
    m.add_class::<iter::Iterator>()?;
    m.add_class::<snapshot::Snapshot>()?;
    m.add_class::<keyspace::Keyspace>()?;
    m.add_function(wrap_pyfunction!(destroy, m)?)?;
    m.add_function(wrap_pyfunction!(repair, m)?)?;
    // The profile names `DB(profile=...)` accepts, in the CLI's order.
    let profiles: Vec<&str> = thicketdb::Profile::ALL.iter().map(|p| p.name()).collect();
    m.add("PROFILES", pyo3::types::PyTuple::new(m.py(), profiles)?)?;
    Ok(())
}
