//! The `Iterator` class: a Python iterator over a range of the store.

use std::collections::VecDeque;
use std::sync::Mutex;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};
use thicketdb::{DbIterator, ReadOptions};

use crate::errors::{closed, raise, to_py};
use crate::target::Target;

/// The range an iterator covers.
pub struct Bounds {
    lower: Option<Vec<u8>>,
    upper: Option<Vec<u8>>,
    fill_cache: bool,
}

impl Default for Bounds {
    fn default() -> Bounds {
        Bounds {
            lower: None,
            upper: None,
            fill_cache: true,
        }
    }
}

/// The smallest key above every key starting with `prefix`; `None` when
/// there is none (the prefix is all 0xff bytes).
fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let keep = prefix.iter().rposition(|&b| b != 0xff)?;
    let mut end = prefix[..=keep].to_vec();
    end[keep] += 1;
    Some(end)
}

impl Bounds {
    pub fn new(
        start: Option<Vec<u8>>,
        stop: Option<Vec<u8>>,
        prefix: Option<Vec<u8>>,
        fill_cache: bool,
    ) -> PyResult<Bounds> {
        let (lower, upper) = match prefix {
            Some(prefix) => {
                if start.is_some() || stop.is_some() {
                    return Err(raise(
                        "InvalidArgumentError",
                        "prefix cannot be combined with start or stop".to_string(),
                    ));
                }
                let end = prefix_end(&prefix);
                (Some(prefix), end)
            }
            None => (start, stop),
        };
        Ok(Bounds {
            lower,
            upper,
            fill_cache,
        })
    }
}

/// Yields ``(key, value)`` tuples, or only keys (``values=False``), or only
/// values (``keys=False``), in key order or in reverse. It holds a handle
/// of the store and reads one consistent state.
#[pyclass(module = "thicketdb", frozen)]
pub struct Iterator {
    /// Locked only with the interpreter detached.
    cursor: Mutex<Cursor>,
    /// Entries read ahead, in order. Locked only with the interpreter
    /// attached and never across a detach, so neither lock is ever held by
    /// a thread waiting for the GIL while another waits for it.
    ahead: Mutex<VecDeque<Entry>>,
    keys: bool,
    values: bool,
}

/// Most entries one engine call reads ahead. Read-ahead is invisible: the
/// iterator reads one consistent state whenever it reads it.
const READ_AHEAD_MAX: usize = 256;

struct Cursor {
    iter: DbIterator,
    reverse: bool,
    started: bool,
    /// Entries the next read-ahead fetches: 1 at first (a single `next()`
    /// reads no more than it needs), doubling up to `READ_AHEAD_MAX`.
    chunk: usize,
    /// Keeps the store open while the iterator lives.
    _target: Target,
}

impl Iterator {
    pub fn new(
        target: Target,
        bounds: Bounds,
        reverse: bool,
        keys: bool,
        values: bool,
        snapshot: Option<thicketdb::Snapshot>,
    ) -> PyResult<Iterator> {
        let opts = ReadOptions {
            snapshot,
            lower_bound: bounds.lower,
            upper_bound: bounds.upper,
            fill_cache: bounds.fill_cache,
        };
        let iter = target.iter(opts).map_err(to_py)?;
        Ok(Iterator {
            cursor: Mutex::new(Cursor {
                iter,
                reverse,
                started: false,
                chunk: 1,
                _target: target,
            }),
            ahead: Mutex::new(VecDeque::new()),
            keys,
            values,
        })
    }
}

impl Iterator {
    /// Keys in order (``for key in db``).
    pub fn keys(target: Target) -> PyResult<Iterator> {
        Iterator::new(target, Bounds::default(), false, true, false, None)
    }
}

/// An entry's key and value, each copied only when asked for.
type Entry = (Option<Vec<u8>>, Option<Vec<u8>>);

impl Cursor {
    /// Moves to the next entry; returns whether there is one.
    fn advance(&mut self) -> thicketdb::Result<bool> {
        match (self.started, self.reverse) {
            (false, false) => self.iter.seek_to_first(),
            (false, true) => self.iter.seek_to_last(),
            (true, _) if !self.iter.valid() => return Ok(false),
            (true, false) => self.iter.next(),
            (true, true) => self.iter.prev(),
        }
        self.started = true;
        self.iter.status()?;
        Ok(self.iter.valid())
    }

    /// The next entries, up to the current read-ahead size.
    fn fetch(&mut self, keys: bool, values: bool) -> thicketdb::Result<Vec<Entry>> {
        let mut out = Vec::with_capacity(self.chunk);
        while out.len() < self.chunk && self.advance()? {
            let key = keys.then(|| self.iter.key().to_vec());
            let value = values.then(|| self.iter.value().to_vec());
            out.push((key, value));
        }
        self.chunk = (self.chunk * 2).min(READ_AHEAD_MAX);
        Ok(out)
    }
}

#[pymethods]
impl Iterator {
    fn __iter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let buffered = self.ahead.lock().map_err(|_| closed())?.pop_front();
        let entry = match buffered {
            Some(entry) => entry,
            None => {
                let fetched = py
                    .detach(|| {
                        let mut cursor =
                            self.cursor.lock().map_err(|_| thicketdb::Error::Closed)?;
                        cursor.fetch(self.keys, self.values)
                    })
                    .map_err(to_py)?;
                let mut ahead = self.ahead.lock().map_err(|_| closed())?;
                ahead.extend(fetched);
                match ahead.pop_front() {
                    Some(entry) => entry,
                    None => return Ok(None),
                }
            }
        };
        let item = match entry {
            (Some(k), Some(v)) => {
                PyTuple::new(py, [PyBytes::new(py, &k), PyBytes::new(py, &v)])?.into_any()
            }
            (Some(k), None) => PyBytes::new(py, &k).into_any(),
            (None, Some(v)) => PyBytes::new(py, &v).into_any(),
            (None, None) => py.None().into_bound(py),
        };
        Ok(Some(item))
    }
}

#[cfg(test)]
mod tests {
    use super::prefix_end;

    #[test]
    fn prefix_end_is_the_next_prefix() {
        assert_eq!(prefix_end(b"ab"), Some(b"ac".to_vec()));
        assert_eq!(prefix_end(b"a\xff"), Some(b"b".to_vec()));
        assert_eq!(prefix_end(b"\xff\xff"), None);
        assert_eq!(prefix_end(b""), None);
    }
}
