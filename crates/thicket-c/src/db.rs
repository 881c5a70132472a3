//! Opening and closing stores, reads, writes, snapshots, properties,
//! approximate sizes, manual compaction, destroy and repair.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use libc::{c_char, c_int, size_t};
use thicketdb::{Db, Snapshot, WriteOptions};

use crate::batch::leveldb_writebatch_t;
use crate::ffi::{bytes, c_str, guard, guard_quiet, malloc_copy, malloc_string, status};
use crate::keyspace::{
    leveldb_compact_range_in, leveldb_delete_in, leveldb_delete_range_in, leveldb_get_in,
    leveldb_keyspace_t, leveldb_put_in,
};
use crate::options::{leveldb_options_t, leveldb_readoptions_t, leveldb_writeoptions_t};

pub struct leveldb_t {
    pub(crate) db: Db,
    /// The store's default keyspace: the calls without `_in` are the `_in`
    /// calls on it, so each data call is written once.
    pub(crate) default: leveldb_keyspace_t,
}

/// The default keyspace's handle of `db`, or NULL for a NULL store (which
/// the `_in` calls then report).
///
/// # Safety
/// `db` is NULL or a live store.
pub(crate) unsafe fn default_keyspace(db: *mut leveldb_t) -> *mut leveldb_keyspace_t {
    if db.is_null() {
        return std::ptr::null_mut();
    }
    // SAFETY: `db` is live (caller's contract); the field's address is
    // taken without creating a reference.
    unsafe { &raw mut (*db).default }
}

pub struct leveldb_snapshot_t {
    pub(crate) snapshot: Snapshot,
}

/// The store path named by a C string.
///
/// # Safety
/// `name` is NULL or NUL-terminated.
pub(crate) unsafe fn path(name: *const c_char) -> Result<PathBuf, String> {
    // SAFETY: forwarded from the caller.
    match unsafe { c_str(name) } {
        Some(b) if !b.is_empty() => Ok(PathBuf::from(OsStr::from_bytes(b))),
        _ => Err("Invalid argument: empty store name".to_string()),
    }
}

#[no_mangle]
pub unsafe extern "C" fn leveldb_open(
    options: *const leveldb_options_t,
    name: *const c_char,
    errptr: *mut *mut c_char,
) -> *mut leveldb_t {
    // SAFETY: `errptr` follows LevelDB's convention.
    unsafe {
        guard(errptr, std::ptr::null_mut(), || {
            let o = options.as_ref().ok_or("Invalid argument: NULL options")?;
            let options = o.options.clone();
            let db = Db::open(path(name)?, options).map_err(|e| status(&e))?;
            let default = leveldb_keyspace_t {
                keyspace: db.default_keyspace(),
            };
            Ok(Box::into_raw(Box::new(leveldb_t { db, default })))
        })
    }
}

/// Closes the store. Iterators and snapshots must be released first, as
/// LevelDB requires.
#[no_mangle]
pub unsafe extern "C" fn leveldb_close(db: *mut leveldb_t) {
    if db.is_null() {
        return;
    }
    guard_quiet((), || {
        // SAFETY: `db` came from `leveldb_open` and is closed once.
        let db = unsafe { Box::from_raw(db) };
        // LevelDB's close reports nothing; the engine persisted what it could.
        let _ = db.db.close();
    })
}

/// The store and write options behind `db` and `options`.
///
/// # Safety
/// Both are NULL or live objects of this library.
pub(crate) unsafe fn write_args<'a>(
    db: *mut leveldb_t,
    options: *const leveldb_writeoptions_t,
) -> Result<(&'a Db, WriteOptions), String> {
    // SAFETY: forwarded from the caller.
    let db = unsafe { db.as_ref() }.ok_or("Invalid argument: NULL store")?;
    // SAFETY: forwarded from the caller.
    let sync = unsafe { options.as_ref() }.is_some_and(|o| o.sync);
    Ok((&db.db, WriteOptions { sync }))
}

#[no_mangle]
pub unsafe extern "C" fn leveldb_put(
    db: *mut leveldb_t,
    options: *const leveldb_writeoptions_t,
    key: *const c_char,
    keylen: size_t,
    val: *const c_char,
    vallen: size_t,
    errptr: *mut *mut c_char,
) {
    // SAFETY: forwarded from the caller; the handle is NULL or `db`'s.
    unsafe {
        let handle = default_keyspace(db);
        leveldb_put_in(db, options, handle, key, keylen, val, vallen, errptr)
    }
}

#[no_mangle]
pub unsafe extern "C" fn leveldb_delete(
    db: *mut leveldb_t,
    options: *const leveldb_writeoptions_t,
    key: *const c_char,
    keylen: size_t,
    errptr: *mut *mut c_char,
) {
    // SAFETY: forwarded from the caller; the handle is NULL or `db`'s.
    unsafe { leveldb_delete_in(db, options, default_keyspace(db), key, keylen, errptr) }
}

/// An extension (RocksDB's `rocksdb_delete_range_cf` on the default
/// column family): deletes every key in `[start, end)` with one range
/// tombstone.
#[no_mangle]
pub unsafe extern "C" fn leveldb_delete_range(
    db: *mut leveldb_t,
    options: *const leveldb_writeoptions_t,
    start: *const c_char,
    start_len: size_t,
    end: *const c_char,
    end_len: size_t,
    errptr: *mut *mut c_char,
) {
    // SAFETY: forwarded from the caller; the handle is NULL or `db`'s.
    unsafe {
        let handle = default_keyspace(db);
        leveldb_delete_range_in(db, options, handle, start, start_len, end, end_len, errptr)
    }
}

#[no_mangle]
pub unsafe extern "C" fn leveldb_write(
    db: *mut leveldb_t,
    options: *const leveldb_writeoptions_t,
    batch: *mut leveldb_writebatch_t,
    errptr: *mut *mut c_char,
) {
    // SAFETY: pointers follow the C header's contract.
    unsafe {
        guard(errptr, (), || {
            let (db, opts) = write_args(db, options)?;
            let batch = batch.as_ref().ok_or("Invalid argument: NULL batch")?;
            db.write_opt(batch.to_engine()?, opts)
                .map_err(|e| status(&e))
        })
    }
}

/// The engine read options for `options` (defaults for NULL).
///
/// # Safety
/// `options` is NULL or a live read options object.
pub(crate) unsafe fn read_options(options: *const leveldb_readoptions_t) -> thicketdb::ReadOptions {
    // SAFETY: forwarded from the caller.
    unsafe { options.as_ref() }.map_or_else(Default::default, |o| o.to_engine())
}

/// The value as a `malloc`ed array (its length in `*vallen`), or NULL when
/// the key is absent or on error.
#[no_mangle]
pub unsafe extern "C" fn leveldb_get(
    db: *mut leveldb_t,
    options: *const leveldb_readoptions_t,
    key: *const c_char,
    keylen: size_t,
    vallen: *mut size_t,
    errptr: *mut *mut c_char,
) -> *mut c_char {
    // SAFETY: forwarded from the caller; the handle is NULL or `db`'s.
    unsafe {
        leveldb_get_in(
            db,
            options,
            default_keyspace(db),
            key,
            keylen,
            vallen,
            errptr,
        )
    }
}

/// A value `read` returns, for C: NULL when absent or on error (reported
/// through `errptr`), else a `malloc`ed copy with its length in `*vallen`
/// (0 otherwise).
///
/// # Safety
/// `vallen` is NULL or writable; `errptr` follows LevelDB's convention.
pub(crate) unsafe fn read_value(
    vallen: *mut size_t,
    errptr: *mut *mut c_char,
    read: impl FnOnce() -> Result<Option<Vec<u8>>, String>,
) -> *mut c_char {
    if !vallen.is_null() {
        // SAFETY: writable by the caller's contract.
        unsafe { *vallen = 0 };
    }
    // SAFETY: forwarded from the caller.
    unsafe { guard(errptr, std::ptr::null_mut(), || value_out(read()?, vallen)) }
}

/// # Safety
/// `vallen` is NULL or writable.
unsafe fn value_out(value: Option<Vec<u8>>, vallen: *mut size_t) -> Result<*mut c_char, String> {
    let Some(value) = value else {
        return Ok(std::ptr::null_mut());
    };
    let out = malloc_copy(&value);
    if out.is_null() {
        return Err("IO error: out of memory".to_string());
    }
    if !vallen.is_null() {
        // SAFETY: writable by the caller's contract.
        unsafe { *vallen = value.len() };
    }
    Ok(out)
}

#[no_mangle]
pub unsafe extern "C" fn leveldb_create_snapshot(db: *mut leveldb_t) -> *const leveldb_snapshot_t {
    guard_quiet(std::ptr::null(), || {
        // SAFETY: `db` is NULL or a live store.
        match unsafe { db.as_ref() } {
            Some(db) => Box::into_raw(Box::new(leveldb_snapshot_t {
                snapshot: db.db.snapshot(),
            })),
            None => std::ptr::null(),
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn leveldb_release_snapshot(
    _db: *mut leveldb_t,
    snapshot: *const leveldb_snapshot_t,
) {
    if snapshot.is_null() {
        return;
    }
    guard_quiet((), || {
        // SAFETY: `snapshot` came from `leveldb_create_snapshot` and is
        // released once.
        drop(unsafe { Box::from_raw(snapshot.cast_mut()) });
    })
}

/// A `malloc`ed value of a property (`leveldb.stats`,
/// `leveldb.num-files-at-level<N>`, `leveldb.sstables`,
/// `leveldb.approximate-memory-usage`), or NULL for an unknown name.
#[no_mangle]
pub unsafe extern "C" fn leveldb_property_value(
    db: *mut leveldb_t,
    propname: *const c_char,
) -> *mut c_char {
    guard_quiet(std::ptr::null_mut(), || {
        // SAFETY: `db` is NULL or live; `propname` is NUL-terminated.
        let (Some(db), Some(name)) = (unsafe { db.as_ref() }, unsafe { c_str(propname) }) else {
            return std::ptr::null_mut();
        };
        match std::str::from_utf8(name)
            .ok()
            .and_then(|n| db.db.property(n))
        {
            Some(value) => malloc_string(&value),
            None => std::ptr::null_mut(),
        }
    })
}

/// Approximate table bytes of each range `[start[i], limit[i])`; 0 for a
/// range that cannot be measured.
#[no_mangle]
pub unsafe extern "C" fn leveldb_approximate_sizes(
    db: *mut leveldb_t,
    num_ranges: c_int,
    range_start_key: *const *const c_char,
    range_start_key_len: *const size_t,
    range_limit_key: *const *const c_char,
    range_limit_key_len: *const size_t,
    sizes: *mut u64,
) {
    guard_quiet((), || {
        // SAFETY: `db` is NULL or live.
        let Some(db) = (unsafe { db.as_ref() }) else {
            return;
        };
        for i in 0..num_ranges.max(0) as usize {
            // SAFETY: the arrays hold `num_ranges` elements, as the header
            // requires, and each key pointer is valid for its length.
            unsafe {
                let start = bytes(*range_start_key.add(i), *range_start_key_len.add(i));
                let limit = bytes(*range_limit_key.add(i), *range_limit_key_len.add(i));
                *sizes.add(i) = db.db.approximate_size(start, limit).unwrap_or(0);
            }
        }
    })
}

/// Compacts the tables overlapping `[start, limit]`; a NULL key is
/// unbounded on its side. Errors are not reported (LevelDB's signature has
/// no error channel); a failed compaction leaves the data as it was.
#[no_mangle]
pub unsafe extern "C" fn leveldb_compact_range(
    db: *mut leveldb_t,
    start_key: *const c_char,
    start_key_len: size_t,
    limit_key: *const c_char,
    limit_key_len: size_t,
) {
    // SAFETY: forwarded from the caller; the handle is NULL or `db`'s.
    unsafe {
        let handle = default_keyspace(db);
        leveldb_compact_range_in(
            db,
            handle,
            start_key,
            start_key_len,
            limit_key,
            limit_key_len,
        )
    }
}

#[no_mangle]
pub unsafe extern "C" fn leveldb_destroy_db(
    _options: *const leveldb_options_t,
    name: *const c_char,
    errptr: *mut *mut c_char,
) {
    // SAFETY: `name` is NUL-terminated; `errptr` follows the convention.
    unsafe {
        guard(errptr, (), || {
            thicketdb::destroy(path(name)?).map_err(|e| status(&e))
        })
    }
}

/// Rebuilds the MANIFEST from the tables that survive, salvaging the intact
/// blocks of damaged ones; what was recovered and lost is printed to
/// standard error.
#[no_mangle]
pub unsafe extern "C" fn leveldb_repair_db(
    options: *const leveldb_options_t,
    name: *const c_char,
    errptr: *mut *mut c_char,
) {
    // SAFETY: `options` is NULL or live, `name` NUL-terminated, `errptr`
    // follows the convention.
    unsafe {
        guard(errptr, (), || {
            let options = match options.as_ref() {
                Some(o) => o.options.clone(),
                None => thicketdb::Options::default(),
            };
            let dir = path(name)?;
            let report = thicketdb::repair(&dir, &options).map_err(|e| status(&e))?;
            eprintln!("thicketdb: repaired {}: {report}", dir.display());
            Ok(())
        })
    }
}
