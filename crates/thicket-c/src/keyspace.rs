//! Keyspaces (RocksDB's column families, `rocksdb_*_cf`): handles,
//! creation, drop, listing, and the data calls on one keyspace. The names
//! follow the crate's extensions (`leveldb_` prefix) and the engine's
//! (`put_in`, `delete_in`, ... as `WriteBatch::put_in`).

use libc::{c_char, size_t};
use thicketdb::{Db, Keyspace};

use crate::db::{leveldb_t, path, read_options, read_value, write_args};
use crate::ffi::{bytes, c_str, guard, guard_quiet, malloc_string, optional_bytes, status};
use crate::iter::{iterator_over, leveldb_iterator_t};
use crate::options::{leveldb_options_t, leveldb_readoptions_t, leveldb_writeoptions_t};

/// A handle on one keyspace of an open store.
pub struct leveldb_keyspace_t {
    pub(crate) keyspace: Keyspace,
}

/// A keyspace name from a C string: UTF-8, as the engine names keyspaces.
///
/// # Safety
/// `name` is NULL or NUL-terminated.
unsafe fn keyspace_name<'a>(name: *const c_char) -> Result<&'a str, String> {
    // SAFETY: forwarded from the caller.
    let bytes = unsafe { c_str(name) }.ok_or("Invalid argument: NULL keyspace name")?;
    std::str::from_utf8(bytes)
        .map_err(|_| "Invalid argument: a keyspace name must be UTF-8".to_string())
}

/// The store behind `db`.
///
/// # Safety
/// `db` is NULL or a live store.
unsafe fn store<'a>(db: *mut leveldb_t) -> Result<&'a Db, String> {
    // SAFETY: forwarded from the caller.
    unsafe { db.as_ref() }
        .map(|db| &db.db)
        .ok_or_else(|| "Invalid argument: NULL store".to_string())
}

/// The keyspace behind `handle`.
///
/// # Safety
/// `handle` is NULL or a live keyspace handle.
pub(crate) unsafe fn keyspace<'a>(
    handle: *const leveldb_keyspace_t,
) -> Result<&'a Keyspace, String> {
    // SAFETY: forwarded from the caller.
    unsafe { handle.as_ref() }
        .map(|h| &h.keyspace)
        .ok_or_else(|| "Invalid argument: NULL keyspace".to_string())
}

fn into_handle(keyspace: Keyspace) -> *mut leveldb_keyspace_t {
    Box::into_raw(Box::new(leveldb_keyspace_t { keyspace }))
}

/// Creates keyspace `name` with the keyspace-level settings of `options`
/// (compression, block and table sizes, write buffer, filter policy);
/// durable once it returns. NULL and `*errptr` set when the name is taken,
/// empty or over 255 bytes.
#[no_mangle]
pub unsafe extern "C" fn leveldb_create_keyspace(
    db: *mut leveldb_t,
    options: *const leveldb_options_t,
    name: *const c_char,
    errptr: *mut *mut c_char,
) -> *mut leveldb_keyspace_t {
    // SAFETY: pointers follow the C header's contract.
    unsafe {
        guard(errptr, std::ptr::null_mut(), || {
            let db = store(db)?;
            let options = options.as_ref().ok_or("Invalid argument: NULL options")?;
            let name = keyspace_name(name)?;
            let keyspace = db
                .create_keyspace(name, options.options.clone())
                .map_err(|e| status(&e))?;
            Ok(into_handle(keyspace))
        })
    }
}

/// A handle on the existing keyspace `name` (`"default"`: the store's
/// default keyspace); NULL and `*errptr` ("NotFound: ...") when there is
/// none.
#[no_mangle]
pub unsafe extern "C" fn leveldb_open_keyspace(
    db: *mut leveldb_t,
    name: *const c_char,
    errptr: *mut *mut c_char,
) -> *mut leveldb_keyspace_t {
    // SAFETY: pointers follow the C header's contract.
    unsafe {
        guard(errptr, std::ptr::null_mut(), || {
            let keyspace = store(db)?
                .keyspace(keyspace_name(name)?)
                .map_err(|e| status(&e))?;
            Ok(into_handle(keyspace))
        })
    }
}

/// Drops the keyspace of `handle`, and all its data, durably. The handle
/// stays to be destroyed; calls through it fail with "NotFound".
#[no_mangle]
pub unsafe extern "C" fn leveldb_drop_keyspace(
    db: *mut leveldb_t,
    handle: *mut leveldb_keyspace_t,
    errptr: *mut *mut c_char,
) {
    // SAFETY: pointers follow the C header's contract.
    unsafe {
        guard(errptr, (), || {
            let keyspace = keyspace(handle)?;
            // A handle on a dropped keyspace must not drop a later one of
            // the same name: a read through it fails once its keyspace is
            // gone.
            keyspace.get_with(b"", |_| ()).map_err(|e| status(&e))?;
            store(db)?
                .drop_keyspace(keyspace.name())
                .map_err(|e| status(&e))
        })
    }
}

/// Releases a handle (not the keyspace).
#[no_mangle]
pub unsafe extern "C" fn leveldb_keyspace_handle_destroy(handle: *mut leveldb_keyspace_t) {
    if !handle.is_null() {
        // SAFETY: `handle` came from this library and is destroyed once.
        guard_quiet((), || drop(unsafe { Box::from_raw(handle) }));
    }
}

/// The keyspace's name as a `malloc`ed NUL-terminated string, its length
/// (without the NUL) in `*name_len`.
#[no_mangle]
pub unsafe extern "C" fn leveldb_keyspace_name(
    handle: *const leveldb_keyspace_t,
    name_len: *mut size_t,
) -> *mut c_char {
    guard_quiet(std::ptr::null_mut(), || {
        // SAFETY: `handle` is NULL or live; `name_len` NULL or writable.
        unsafe {
            let Ok(keyspace) = keyspace(handle) else {
                return std::ptr::null_mut();
            };
            if !name_len.is_null() {
                *name_len = keyspace.name().len();
            }
            malloc_string(keyspace.name())
        }
    })
}

/// The names of the keyspaces of the store in directory `name` (RocksDB's
/// `rocksdb_list_column_families`): a `malloc`ed array of `*count`
/// `malloc`ed strings, `"default"` first; free it with
/// `leveldb_list_keyspaces_destroy`. The store is opened read-only, so it
/// may be open elsewhere.
#[no_mangle]
pub unsafe extern "C" fn leveldb_list_keyspaces(
    options: *const leveldb_options_t,
    name: *const c_char,
    count: *mut size_t,
    errptr: *mut *mut c_char,
) -> *mut *mut c_char {
    // SAFETY: pointers follow the C header's contract.
    unsafe {
        if !count.is_null() {
            *count = 0;
        }
        guard(errptr, std::ptr::null_mut(), || {
            let options = options.as_ref().ok_or("Invalid argument: NULL options")?;
            let db =
                Db::open_read_only(path(name)?, options.options.clone()).map_err(|e| status(&e))?;
            let names = db.list_keyspaces();
            let list: *mut *mut c_char =
                libc::calloc(names.len().max(1), size_of::<*mut c_char>()).cast();
            if list.is_null() {
                return Err("IO error: out of memory".to_string());
            }
            for (i, name) in names.iter().enumerate() {
                *list.add(i) = malloc_string(name);
            }
            if !count.is_null() {
                *count = names.len();
            }
            Ok(list)
        })
    }
}

/// Frees a list from `leveldb_list_keyspaces` and its `count` names.
#[no_mangle]
pub unsafe extern "C" fn leveldb_list_keyspaces_destroy(list: *mut *mut c_char, count: size_t) {
    if list.is_null() {
        return;
    }
    // SAFETY: `list` holds `count` malloc'ed names and is freed once.
    unsafe {
        for i in 0..count {
            libc::free((*list.add(i)).cast());
        }
        libc::free(list.cast());
    }
}

#[no_mangle]
pub unsafe extern "C" fn leveldb_put_in(
    db: *mut leveldb_t,
    options: *const leveldb_writeoptions_t,
    handle: *mut leveldb_keyspace_t,
    key: *const c_char,
    keylen: size_t,
    val: *const c_char,
    vallen: size_t,
    errptr: *mut *mut c_char,
) {
    // SAFETY: pointers and lengths follow the C header's contract.
    unsafe {
        guard(errptr, (), || {
            let (_, opts) = write_args(db, options)?;
            keyspace(handle)?
                .put_opt(bytes(key, keylen), bytes(val, vallen), opts)
                .map_err(|e| status(&e))
        })
    }
}

#[no_mangle]
pub unsafe extern "C" fn leveldb_delete_in(
    db: *mut leveldb_t,
    options: *const leveldb_writeoptions_t,
    handle: *mut leveldb_keyspace_t,
    key: *const c_char,
    keylen: size_t,
    errptr: *mut *mut c_char,
) {
    // SAFETY: pointers and lengths follow the C header's contract.
    unsafe {
        guard(errptr, (), || {
            let (_, opts) = write_args(db, options)?;
            keyspace(handle)?
                .delete_opt(bytes(key, keylen), opts)
                .map_err(|e| status(&e))
        })
    }
}

#[no_mangle]
pub unsafe extern "C" fn leveldb_delete_range_in(
    db: *mut leveldb_t,
    options: *const leveldb_writeoptions_t,
    handle: *mut leveldb_keyspace_t,
    start: *const c_char,
    start_len: size_t,
    end: *const c_char,
    end_len: size_t,
    errptr: *mut *mut c_char,
) {
    // SAFETY: pointers and lengths follow the C header's contract.
    unsafe {
        guard(errptr, (), || {
            let (_, opts) = write_args(db, options)?;
            keyspace(handle)?
                .delete_range_opt(bytes(start, start_len), bytes(end, end_len), opts)
                .map_err(|e| status(&e))
        })
    }
}

/// `leveldb_get` in the keyspace: a `malloc`ed value, or NULL when absent
/// or on error.
#[no_mangle]
pub unsafe extern "C" fn leveldb_get_in(
    db: *mut leveldb_t,
    options: *const leveldb_readoptions_t,
    handle: *mut leveldb_keyspace_t,
    key: *const c_char,
    keylen: size_t,
    vallen: *mut size_t,
    errptr: *mut *mut c_char,
) -> *mut c_char {
    // SAFETY: pointers and lengths follow the C header's contract.
    unsafe {
        read_value(vallen, errptr, || {
            store(db)?;
            keyspace(handle)?
                .get_opt(bytes(key, keylen), &read_options(options))
                .map_err(|e| status(&e))
        })
    }
}

/// An iterator over the keyspace's keys; an error (a dropped keyspace, a
/// NULL handle) is reported by `leveldb_iter_get_error`.
#[no_mangle]
pub unsafe extern "C" fn leveldb_create_iterator_in(
    db: *mut leveldb_t,
    options: *const leveldb_readoptions_t,
    handle: *mut leveldb_keyspace_t,
) -> *mut leveldb_iterator_t {
    iterator_over(|| {
        // SAFETY: `db`, `options` and `handle` are NULL or live.
        unsafe {
            store(db)?;
            keyspace(handle)?
                .iter(read_options(options))
                .map_err(|e| status(&e))
        }
    })
}

/// `leveldb_compact_range` in the keyspace; errors are not reported, as
/// there.
#[no_mangle]
pub unsafe extern "C" fn leveldb_compact_range_in(
    db: *mut leveldb_t,
    handle: *mut leveldb_keyspace_t,
    start_key: *const c_char,
    start_key_len: size_t,
    limit_key: *const c_char,
    limit_key_len: size_t,
) {
    guard_quiet((), || {
        // SAFETY: `db` and `handle` are NULL or live; keys are NULL or
        // valid for their lengths.
        unsafe {
            let (Ok(_), Ok(keyspace)) = (store(db), keyspace(handle)) else {
                return;
            };
            let start = optional_bytes(start_key, start_key_len);
            let limit = optional_bytes(limit_key, limit_key_len);
            let _ = keyspace.compact_range(start, limit);
        }
    })
}
