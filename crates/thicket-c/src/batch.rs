//! Write batches. The C batch keeps its updates as a list so that it can be
//! iterated, appended to and written any number of times; the engine batch
//! is built at write time.

use std::ffi::CString;

use libc::{c_char, c_void, size_t};
use thicketdb::{Keyspace, WriteBatch, DEFAULT_KEYSPACE_NAME};

use crate::ffi::{bytes, guard_quiet};
use crate::keyspace::{keyspace, leveldb_keyspace_t};

#[derive(Clone)]
enum Op {
    Put(Vec<u8>, Vec<u8>),
    Delete(Vec<u8>),
    /// `[start, end)`.
    DeleteRange(Vec<u8>, Vec<u8>),
}

/// One update: an op in a keyspace (`None`: the default one).
#[derive(Clone)]
struct Update {
    keyspace: Option<Keyspace>,
    op: Op,
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
        for Update { keyspace, op } in &self.updates {
            match (keyspace, op) {
                (None, Op::Put(k, v)) => batch.put(k, v),
                (None, Op::Delete(k)) => batch.delete(k),
                (None, Op::DeleteRange(start, end)) => batch.delete_range(start, end),
                (Some(ks), Op::Put(k, v)) => batch.put_in(ks, k, v),
                (Some(ks), Op::Delete(k)) => batch.delete_in(ks, k),
                (Some(ks), Op::DeleteRange(start, end)) => batch.delete_range_in(ks, start, end),
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

/// Adds `op` in the default keyspace to the batch behind `b`.
fn push(b: *mut leveldb_writebatch_t, op: Op) {
    with_batch(b, |b| b.updates.push(Update { keyspace: None, op }));
}

/// Adds `op` in the keyspace behind `handle` (ignored for NULL, as a NULL
/// batch is) to the batch behind `b`.
///
/// # Safety
/// `handle` is NULL or a live keyspace handle.
unsafe fn push_in(b: *mut leveldb_writebatch_t, handle: *const leveldb_keyspace_t, op: Op) {
    // SAFETY: forwarded from the caller.
    if let Ok(keyspace) = unsafe { keyspace(handle) } {
        let keyspace = Some(keyspace.clone());
        with_batch(b, |b| b.updates.push(Update { keyspace, op }));
    }
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
    push(b, Op::Put(key.to_vec(), val.to_vec()));
}

#[no_mangle]
pub unsafe extern "C" fn leveldb_writebatch_delete(
    b: *mut leveldb_writebatch_t,
    key: *const c_char,
    klen: size_t,
) {
    // SAFETY: the key is valid for its length.
    let key = unsafe { bytes(key, klen) };
    push(b, Op::Delete(key.to_vec()));
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
    push(b, Op::DeleteRange(start.to_vec(), end.to_vec()));
}

/// An extension (RocksDB's `rocksdb_writebatch_put_cf`): a put in the
/// keyspace `handle`; the batch stays atomic across keyspaces.
#[no_mangle]
pub unsafe extern "C" fn leveldb_writebatch_put_in(
    b: *mut leveldb_writebatch_t,
    handle: *mut leveldb_keyspace_t,
    key: *const c_char,
    klen: size_t,
    val: *const c_char,
    vlen: size_t,
) {
    // SAFETY: the handle is NULL or live; key and value valid for their
    // lengths.
    unsafe {
        let op = Op::Put(bytes(key, klen).to_vec(), bytes(val, vlen).to_vec());
        push_in(b, handle, op)
    }
}

/// An extension: a delete in the keyspace `handle`.
#[no_mangle]
pub unsafe extern "C" fn leveldb_writebatch_delete_in(
    b: *mut leveldb_writebatch_t,
    handle: *mut leveldb_keyspace_t,
    key: *const c_char,
    klen: size_t,
) {
    // SAFETY: the handle is NULL or live; the key valid for its length.
    unsafe { push_in(b, handle, Op::Delete(bytes(key, klen).to_vec())) }
}

/// An extension: deletes `[start, end)` of the keyspace `handle`.
#[no_mangle]
pub unsafe extern "C" fn leveldb_writebatch_delete_range_in(
    b: *mut leveldb_writebatch_t,
    handle: *mut leveldb_keyspace_t,
    start: *const c_char,
    start_len: size_t,
    end: *const c_char,
    end_len: size_t,
) {
    // SAFETY: the handle is NULL or live; both keys valid for their lengths.
    unsafe {
        let op = Op::DeleteRange(
            bytes(start, start_len).to_vec(),
            bytes(end, end_len).to_vec(),
        );
        push_in(b, handle, op)
    }
}

pub type PutFn =
    Option<unsafe extern "C" fn(*mut c_void, *const c_char, size_t, *const c_char, size_t)>;
pub type DeletedFn = Option<unsafe extern "C" fn(*mut c_void, *const c_char, size_t)>;
pub type DeletedRangeFn =
    Option<unsafe extern "C" fn(*mut c_void, *const c_char, size_t, *const c_char, size_t)>;

/// Calls `put` or `deleted` for every update of the default keyspace, in
/// order; range deletions (which LevelDB's batches cannot hold) are passed
/// over: use `leveldb_writebatch_iterate_ranges` to see them. Updates in
/// other keyspaces are passed over too (the callbacks have no keyspace;
/// `leveldb_writebatch_iterate_in` reports them).
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
/// `deleted_range` for every range deletion of the default keyspace, in
/// order.
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
        for op in b
            .updates
            .iter()
            .filter(|u| keyspace_name(u) == DEFAULT_KEYSPACE_NAME)
            .map(|u| &u.op)
        {
            match op {
                // SAFETY: the user's callbacks, given their state and
                // buffers that live for the call.
                Op::Put(k, v) => unsafe {
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
                Op::Delete(k) => unsafe {
                    if let Some(deleted) = deleted {
                        deleted(state, k.as_ptr().cast(), k.len());
                    }
                },
                // SAFETY: as above.
                Op::DeleteRange(start, end) => unsafe {
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

/// The keyspace an update is in.
fn keyspace_name(update: &Update) -> &str {
    update
        .keyspace
        .as_ref()
        .map_or(DEFAULT_KEYSPACE_NAME, Keyspace::name)
}

pub type PutInFn = Option<
    unsafe extern "C" fn(*mut c_void, *const c_char, *const c_char, size_t, *const c_char, size_t),
>;
pub type DeletedInFn =
    Option<unsafe extern "C" fn(*mut c_void, *const c_char, *const c_char, size_t)>;
pub type DeletedRangeInFn = PutInFn;

/// An extension: every update of every keyspace, in order, each callback
/// given the update's keyspace name (NUL-terminated, `"default"` for the
/// default keyspace's) before its keys; NULL callbacks are skipped.
#[no_mangle]
pub unsafe extern "C" fn leveldb_writebatch_iterate_in(
    b: *const leveldb_writebatch_t,
    state: *mut c_void,
    put: PutInFn,
    deleted: DeletedInFn,
    deleted_range: DeletedRangeInFn,
) {
    guard_quiet((), || {
        // SAFETY: `b` is NULL or a live batch.
        let Some(b) = (unsafe { b.as_ref() }) else {
            return;
        };
        for update in &b.updates {
            let Ok(name) = CString::new(keyspace_name(update)) else {
                continue; // A name with a NUL byte has no C form.
            };
            let name = name.as_ptr();
            match &update.op {
                // SAFETY: the user's callbacks, given their state and
                // buffers that live for the call.
                Op::Put(k, v) => unsafe {
                    if let Some(put) = put {
                        put(
                            state,
                            name,
                            k.as_ptr().cast(),
                            k.len(),
                            v.as_ptr().cast(),
                            v.len(),
                        );
                    }
                },
                // SAFETY: as above.
                Op::Delete(k) => unsafe {
                    if let Some(deleted) = deleted {
                        deleted(state, name, k.as_ptr().cast(), k.len());
                    }
                },
                // SAFETY: as above.
                Op::DeleteRange(start, end) => unsafe {
                    if let Some(deleted_range) = deleted_range {
                        deleted_range(
                            state,
                            name,
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
