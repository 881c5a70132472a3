//! Engine errors as the package's exception classes (defined in Python, in
//! `thicketdb/_errors.py`, so that they can inherit from `KeyError`,
//! `ValueError` and `OSError` as well as `thicketdb.Error`).

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use thicketdb::Error;

/// The exception for an engine error.
pub fn to_py(e: Error) -> PyErr {
    let class = match &e {
        Error::Corruption { .. } => "CorruptionError",
        Error::InvalidArgument(_) => "InvalidArgumentError",
        Error::Locked(_) => "LockedError",
        Error::Closed => "ClosedError",
        Error::KeyspaceNotFound(_) => "KeyspaceNotFoundError",
        Error::NoSpace { .. } => "NoSpaceError",
        Error::Io { .. } => "IOError",
        Error::Background(inner) if inner.is_corruption() => "CorruptionError",
        Error::Background(inner) if inner.is_no_space() => "NoSpaceError",
        Error::Background(_) => "IOError",
        // An engine bug (`Invariant`) or a kind added later: the base class.
        _ => "Error",
    };
    raise(class, e.to_string())
}

/// An exception of the package's class `class` with `message`.
pub fn raise(class: &str, message: String) -> PyErr {
    Python::attach(|py| {
        let made = py
            .import("thicketdb._errors")
            .and_then(|m| m.getattr(class))
            .and_then(|c| c.call1((message.clone(),)));
        match made {
            Ok(exception) => PyErr::from_value(exception),
            Err(_) => PyRuntimeError::new_err(message),
        }
    })
}

pub fn closed() -> PyErr {
    raise("ClosedError", "the store is closed".to_string())
}
