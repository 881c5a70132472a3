//! Write batches. The C batch keeps its updates as a list so that it can be
//! iterated, appended to and written any number of times; the engine batch
//! is built at write time.

use libc::{c_char, c_void, size_t};
use thicketdb::WriteBatch;

use crate::ffi::{bytes, guard_quiet};

#[derive(Clone)]
enum Update {
    Put(Vec<u8>, Vec<u8>),
    Delete(Vec<u8>),
    /// `[start, end)`.
    DeleteRange(Vec<u8>, Vec<u8>),
}

#[derive(Default)]
pub struct leveldb_writebatch_t {
    updates: Vec<Update>,
}

impl leveldb_writebatch_t {
    /// The engine batch; a key or value over the engine's limits is the
    /// write's error, as LevelDB reports batch problems at write time.
    pub(crate) fn to_engine(&self) -> Result<WriteBatch, String> {
        let mut batch = WriteBatch::new();
        for u in &self.updates {
            match u {
                Update::Put(k, v) => batch.put(k, v),
                Update::Delete(k) => batch.delete(k),
                Update::DeleteRange(start, end) => batch.delete_range(start, end),
            }
            .map_err(|e| crate::ffi::status(&e))?;
        }
        Ok(batch)
    }
}

/// Runs `f` on the batch behind `b` (ignored for NULL).
fn with_batch(b: *mut leveldb_writebatch_t, f: impl FnOnce(&mut leveldb_writebatch_t)) {
    guard_quiet((), || {
        // SAFETY: `b` is NULL or a live batch not used concurrently.
        if let Some(b) = unsafe { b.as_mut() } {
            f(b)
        }
    })
}

#[no_mangle]
pub extern "C" fn leveldb_writebatch_create() -> *mut leveldb_writebatch_t {
    Box::into_raw(Box::default())
}

#[no_mangle]
pub unsafe extern "C" fn leveldb_writebatch_destroy(b: *mut leveldb_writebatch_t) {
    if !b.is_null() {
        // SAFETY: `b` came from `leveldb_writebatch_create`, destroyed once.
        drop(unsafe { Box::from_raw(b) });
    }
}

#[no_mangle]
pub unsafe extern "C" fn leveldb_writebatch_clear(b: *mut leveldb_writebatch_t) {
    with_batch(b, |b| b.updates.clear());
}

#[no_mangle]
pub unsafe extern "C" fn leveldb_writebatch_put(
    b: *mut leveldb_writebatch_t,
    key: *const c_char,
    klen: size_t,
    val: *const c_char,
    vlen: size_t,
) {
    // SAFETY: keys and values are valid for their lengths.
    let (key, val) = unsafe { (bytes(key, klen), bytes(val, vlen)) };
    with_batch(b, |b| {
        b.updates.push(Update::Put(key.to_vec(), val.to_vec()))
    });
}

#[no_mangle]
pub unsafe extern "C" fn leveldb_writebatch_delete(
    b: *mut leveldb_writebatch_t,
    key: *const c_char,
    klen: size_t,
) {
    // SAFETY: the key is valid for its length.
    let key = unsafe { bytes(key, klen) };
    with_batch(b, |b| b.updates.push(Update::Delete(key.to_vec())));
}

/// An extension (RocksDB's `rocksdb_writebatch_delete_range`): deletes
/// every key in `[start, end)` when the batch is written.
#[no_mangle]
pub unsafe extern "C" fn leveldb_writebatch_delete_range(
    b: *mut leveldb_writebatch_t,
    start: *const c_char,
    start_len: size_t,
    end: *const c_char,
    end_len: size_t,
) {
    // SAFETY: both keys are valid for their lengths.
    let (start, end) = unsafe { (bytes(start, start_len), bytes(end, end_len)) };
    with_batch(b, |b| {
        b.updates
            .push(Update::DeleteRange(start.to_vec(), end.to_vec()))
    });
}

pub type PutFn =
    Option<unsafe extern "C" fn(*mut c_void, *const c_char, size_t, *const c_char, size_t)>;
pub type DeletedFn = Option<unsafe extern "C" fn(*mut c_void, *const c_char, size_t)>;
pub type DeletedRangeFn =
    Option<unsafe extern "C" fn(*mut c_void, *const c_char, size_t, *const c_char, size_t)>;

/// Calls `put` or `deleted` for every update, in order; range deletions
/// (which LevelDB's batches cannot hold) are passed over: use
/// `leveldb_writebatch_iterate_ranges` to see them.
#[no_mangle]
pub unsafe extern "C" fn leveldb_writebatch_iterate(
    b: *const leveldb_writebatch_t,
    state: *mut c_void,
    put: PutFn,
    deleted: DeletedFn,
) {
    // SAFETY: the caller's contract, passed on.
    unsafe { leveldb_writebatch_iterate_ranges(b, state, put, deleted, None) }
}

/// An extension: `leveldb_writebatch_iterate` that also calls
/// `deleted_range` for every range deletion, in order.
#[no_mangle]
pub unsafe extern "C" fn leveldb_writebatch_iterate_ranges(
    b: *const leveldb_writebatch_t,
    state: *mut c_void,
    put: PutFn,
    deleted: DeletedFn,
    deleted_range: DeletedRangeFn,
) {
    guard_quiet((), || {
        // SAFETY: `b` is NULL or a live batch.
        let Some(b) = (unsafe { b.as_ref() }) else {
            return;
        };
        for u in &b.updates {
            match u {
                // SAFETY: the user's callbacks, given their state and
                // buffers that live for the call.
                Update::Put(k, v) => unsafe {
                    if let Some(put) = put {
                        put(
                            state,
                            k.as_ptr().cast(),
                            k.len(),
                            v.as_ptr().cast(),
                            v.len(),
                        );
                    }
                },
                // SAFETY: as above.
                Update::Delete(k) => unsafe {
                    if let Some(deleted) = deleted {
                        deleted(state, k.as_ptr().cast(), k.len());
                    }
                },
                // SAFETY: as above.
                Update::DeleteRange(start, end) => unsafe {
                    if let Some(deleted_range) = deleted_range {
                        deleted_range(
                            state,
                            start.as_ptr().cast(),
                            start.len(),
                            end.as_ptr().cast(),
                            end.len(),
                        );
                    }
                },
            }
        }
    })
}

/// Appends the updates of `source` to `destination`.
#[no_mangle]
pub unsafe extern "C" fn leveldb_writebatch_append(
    destination: *mut leveldb_writebatch_t,
    source: *const leveldb_writebatch_t,
) {
    // SAFETY: `source` is NULL or a live batch.
    let Some(source) = (unsafe { source.as_ref() }) else {
        return;
    };
    let copied = source.updates.clone();
    with_batch(destination, |d| d.updates.extend(copied));
}
