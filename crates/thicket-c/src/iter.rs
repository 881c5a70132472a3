//! Iterators. Key and value pointers stay valid until the iterator moves or
//! is destroyed, as in LevelDB. Moving an iterator that is not valid is a
//! no-op here (undefined behaviour in LevelDB).

use libc::{c_char, c_uchar, size_t};
use thicketdb::DbIterator;

use crate::db::{default_keyspace, leveldb_t};
use crate::ffi::{bytes, guard_quiet, set_error};
use crate::keyspace::leveldb_create_iterator_in;
use crate::options::leveldb_readoptions_t;

pub struct leveldb_iterator_t {
    /// The cursor, or why it could not be created.
    iter: Result<DbIterator, String>,
}

#[no_mangle]
pub unsafe extern "C" fn leveldb_create_iterator(
    db: *mut leveldb_t,
    options: *const leveldb_readoptions_t,
) -> *mut leveldb_iterator_t {
    // SAFETY: forwarded from the caller; the handle is NULL or `db`'s.
    unsafe { leveldb_create_iterator_in(db, options, default_keyspace(db)) }
}

/// An iterator over the cursor `open` makes; its error, or a panic, is
/// kept for `leveldb_iter_get_error`.
pub(crate) fn iterator_over(
    open: impl FnOnce() -> Result<DbIterator, String>,
) -> *mut leveldb_iterator_t {
    let iter = guard_quiet(
        Err("IO error: internal error creating iterator".into()),
        open,
    );
    Box::into_raw(Box::new(leveldb_iterator_t { iter }))
}

#[no_mangle]
pub unsafe extern "C" fn leveldb_iter_destroy(it: *mut leveldb_iterator_t) {
    if !it.is_null() {
        // SAFETY: `it` came from `leveldb_create_iterator`, destroyed once.
        guard_quiet((), || drop(unsafe { Box::from_raw(it) }));
    }
}

/// The cursor behind `it`, if it exists.
///
/// # Safety
/// `it` is NULL or a live iterator not used concurrently.
unsafe fn cursor<'a>(it: *const leveldb_iterator_t) -> Option<&'a DbIterator> {
    // SAFETY: forwarded from the caller.
    unsafe { it.as_ref() }.and_then(|it| it.iter.as_ref().ok())
}

/// Moves the cursor behind `it` with `f`; `only_valid` skips an invalid one.
fn move_cursor(it: *mut leveldb_iterator_t, only_valid: bool, f: impl FnOnce(&mut DbIterator)) {
    guard_quiet((), || {
        // SAFETY: `it` is NULL or a live iterator not used concurrently.
        if let Some(Ok(iter)) = unsafe { it.as_mut() }.map(|it| it.iter.as_mut()) {
            if !only_valid || iter.valid() {
                f(iter)
            }
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn leveldb_iter_valid(it: *const leveldb_iterator_t) -> c_uchar {
    // SAFETY: `it` is NULL or live.
    unsafe { cursor(it) }.is_some_and(DbIterator::valid) as c_uchar
}

#[no_mangle]
pub unsafe extern "C" fn leveldb_iter_seek_to_first(it: *mut leveldb_iterator_t) {
    move_cursor(it, false, DbIterator::seek_to_first);
}

#[no_mangle]
pub unsafe extern "C" fn leveldb_iter_seek_to_last(it: *mut leveldb_iterator_t) {
    move_cursor(it, false, DbIterator::seek_to_last);
}

#[no_mangle]
pub unsafe extern "C" fn leveldb_iter_seek(
    it: *mut leveldb_iterator_t,
    k: *const c_char,
    klen: size_t,
) {
    // SAFETY: the key is valid for its length.
    let key = unsafe { bytes(k, klen) };
    move_cursor(it, false, |iter| iter.seek(key));
}

#[no_mangle]
pub unsafe extern "C" fn leveldb_iter_next(it: *mut leveldb_iterator_t) {
    move_cursor(it, true, DbIterator::next);
}

#[no_mangle]
pub unsafe extern "C" fn leveldb_iter_prev(it: *mut leveldb_iterator_t) {
    move_cursor(it, true, DbIterator::prev);
}

/// Returns `data` and stores its length, or NULL and 0.
///
/// # Safety
/// `len` is NULL or writable.
unsafe fn out(data: Option<&[u8]>, len: *mut size_t) -> *const c_char {
    if !len.is_null() {
        // SAFETY: writable by the caller's contract.
        unsafe { *len = data.map_or(0, <[u8]>::len) };
    }
    data.map_or(std::ptr::null(), |d| d.as_ptr().cast())
}

#[no_mangle]
pub unsafe extern "C" fn leveldb_iter_key(
    it: *const leveldb_iterator_t,
    klen: *mut size_t,
) -> *const c_char {
    // SAFETY: `it` is NULL or live; `klen` writable.
    unsafe {
        let key = cursor(it).filter(|i| i.valid()).map(DbIterator::key);
        out(key, klen)
    }
}

#[no_mangle]
pub unsafe extern "C" fn leveldb_iter_value(
    it: *const leveldb_iterator_t,
    vlen: *mut size_t,
) -> *const c_char {
    // SAFETY: `it` is NULL or live; `vlen` writable.
    unsafe {
        let value = cursor(it).filter(|i| i.valid()).map(DbIterator::value);
        out(value, vlen)
    }
}

#[no_mangle]
pub unsafe extern "C" fn leveldb_iter_get_error(
    it: *const leveldb_iterator_t,
    errptr: *mut *mut c_char,
) {
    // SAFETY: `it` is NULL or live.
    let error = match unsafe { it.as_ref() }.map(|it| &it.iter) {
        Some(Ok(iter)) => iter.status().err().map(|e| crate::ffi::status(&e)),
        Some(Err(message)) => Some(message.clone()),
        None => None,
    };
    if let Some(message) = error {
        // SAFETY: `errptr` follows LevelDB's convention.
        unsafe { set_error(errptr, &message) };
    }
}
