//! `libthicket`: LevelDB's C API (`include/leveldb/c.h`) over ThicketDB.
//!
//! Every function of LevelDB's header is exported under its own name with
//! its own signature, so a C program written against LevelDB compiles
//! against `include/leveldb/c.h` (or `include/thicket/c.h`) and links with
//! `-lthicket`. Errors follow LevelDB's `char** errptr` convention. No Rust
//! panic crosses the boundary: each entry point catches unwinding and
//! reports it as an error (or a neutral result where the C signature has no
//! error channel). What differs from LevelDB is listed in the README's "C
//! API" section.

// The C names are LevelDB's.
#![allow(non_camel_case_types)]
// The safety contract of every exported function is LevelDB's, stated in
// the C header: pointers are valid and non-NULL unless documented otherwise,
// and lengths match their buffers.
#![allow(clippy::missing_safety_doc)]

mod batch;
mod comparator;
mod db;
mod ffi;
mod filter_policy;
mod iter;
mod keyspace;
mod options;
mod user_state;

pub use batch::*;
pub use db::*;
pub use iter::*;
pub use keyspace::*;
pub use options::*;

/// LevelDB API version this library implements (LevelDB 1.23).
pub const LEVELDB_MAJOR_VERSION: i32 = 1;
pub const LEVELDB_MINOR_VERSION: i32 = 23;

#[no_mangle]
pub extern "C" fn leveldb_major_version() -> i32 {
    LEVELDB_MAJOR_VERSION
}

#[no_mangle]
pub extern "C" fn leveldb_minor_version() -> i32 {
    LEVELDB_MINOR_VERSION
}

/// Frees memory this library returned (values, property values, error
/// messages, the test directory).
#[no_mangle]
pub unsafe extern "C" fn leveldb_free(ptr: *mut libc::c_void) {
    // SAFETY: the caller passes NULL or a pointer this library obtained
    // from `malloc`, once.
    unsafe { libc::free(ptr) }
}
