//! Options, read and write options, comparators, filter policies, caches,
//! environments and loggers.
//!
//! LevelDB's defaults are kept where the C API exposes an option (4 MiB
//! write buffer, 8 MiB block cache, 2 MiB tables, Snappy-class compression,
//! which is LZ4 here); everything else is ThicketDB's default profile.

use libc::{c_char, c_int, c_uchar, c_void, size_t};
use thicketdb::table::CompressionType;
use thicketdb::Options;

use crate::db::leveldb_snapshot_t;
use crate::ffi::{c_str, guard_quiet, malloc_string};

/// Bloom bits per key the engine uses for a custom filter policy.
const CUSTOM_POLICY_BLOOM_BITS: u32 = 10;

pub struct leveldb_options_t {
    pub(crate) options: Options,
    /// Name of a custom comparator, which this release cannot order keys by
    /// (open then fails rather than silently using byte order).
    pub(crate) comparator: Option<String>,
}

#[no_mangle]
pub extern "C" fn leveldb_options_create() -> *mut leveldb_options_t {
    let options = Options {
        write_buffer_size: 4 << 20,
        block_cache_size: 8 << 20,
        target_table_size: 2 << 20,
        compression: CompressionType::Lz4,
        ..Options::default()
    };
    Box::into_raw(Box::new(leveldb_options_t {
        options,
        comparator: None,
    }))
}

/// Runs `f` on the options behind `o` (ignored for NULL).
fn with_options(o: *mut leveldb_options_t, f: impl FnOnce(&mut leveldb_options_t)) {
    guard_quiet((), || {
        // SAFETY: `o` is NULL or came from `leveldb_options_create` and is
        // not used concurrently (LevelDB's contract for options objects).
        if let Some(o) = unsafe { o.as_mut() } {
            f(o)
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn leveldb_options_destroy(o: *mut leveldb_options_t) {
    if !o.is_null() {
        // SAFETY: `o` came from `leveldb_options_create` and is destroyed once.
        drop(unsafe { Box::from_raw(o) });
    }
}

#[no_mangle]
pub unsafe extern "C" fn leveldb_options_set_comparator(
    o: *mut leveldb_options_t,
    cmp: *mut leveldb_comparator_t,
) {
    // SAFETY: `cmp` is NULL or a live comparator.
    let name = unsafe { cmp.as_ref() }.map(leveldb_comparator_t::name);
    with_options(o, |o| o.comparator = name);
}

#[no_mangle]
pub unsafe extern "C" fn leveldb_options_set_filter_policy(
    o: *mut leveldb_options_t,
    policy: *mut leveldb_filterpolicy_t,
) {
    // SAFETY: `policy` is NULL or a live filter policy.
    let bits = match unsafe { policy.as_ref() } {
        None => 0,
        Some(p) => p.bloom_bits.unwrap_or(CUSTOM_POLICY_BLOOM_BITS),
    };
    with_options(o, |o| o.options.bloom_bits_per_key = bits);
}

#[no_mangle]
pub unsafe extern "C" fn leveldb_options_set_create_if_missing(
    o: *mut leveldb_options_t,
    v: c_uchar,
) {
    with_options(o, |o| o.options.create_if_missing = v != 0);
}

#[no_mangle]
pub unsafe extern "C" fn leveldb_options_set_error_if_exists(
    o: *mut leveldb_options_t,
    v: c_uchar,
) {
    with_options(o, |o| o.options.error_if_exists = v != 0);
}

/// A no-op: ThicketDB always verifies checksums and treats any damage it
/// finds as an error (LevelDB's paranoid mode).
#[no_mangle]
pub unsafe extern "C" fn leveldb_options_set_paranoid_checks(
    o: *mut leveldb_options_t,
    _v: c_uchar,
) {
    with_options(o, |_| {});
}

/// Accepted; the default environment is the only one.
#[no_mangle]
pub unsafe extern "C" fn leveldb_options_set_env(
    o: *mut leveldb_options_t,
    _env: *mut leveldb_env_t,
) {
    with_options(o, |_| {});
}

/// Accepted; ThicketDB keeps no info log (LevelDB's C API cannot create a
/// logger either, so only NULL can be passed).
#[no_mangle]
pub unsafe extern "C" fn leveldb_options_set_info_log(
    o: *mut leveldb_options_t,
    _log: *mut leveldb_logger_t,
) {
    with_options(o, |_| {});
}

/// Clamped to 64 KiB..1 GiB, as LevelDB sanitizes it.
#[no_mangle]
pub unsafe extern "C" fn leveldb_options_set_write_buffer_size(
    o: *mut leveldb_options_t,
    v: size_t,
) {
    with_options(o, |o| {
        o.options.write_buffer_size = (v as u64).clamp(64 << 10, 1 << 30)
    });
}

/// Clamped to 74..50000, as LevelDB sanitizes it.
#[no_mangle]
pub unsafe extern "C" fn leveldb_options_set_max_open_files(o: *mut leveldb_options_t, v: c_int) {
    with_options(o, |o| {
        o.options.max_open_files = v.clamp(74, 50_000) as usize
    });
}

/// The store gets a block cache of the cache's capacity; caches are not
/// shared between stores yet.
#[no_mangle]
pub unsafe extern "C" fn leveldb_options_set_cache(
    o: *mut leveldb_options_t,
    cache: *mut leveldb_cache_t,
) {
    // SAFETY: `cache` is NULL or a live cache.
    let capacity = unsafe { cache.as_ref() }.map(|c| c.capacity);
    with_options(o, |o| {
        o.options.block_cache_size = capacity.unwrap_or(8 << 20) as u64
    });
}

/// Clamped to 1 KiB..4 MiB, as LevelDB sanitizes it.
#[no_mangle]
pub unsafe extern "C" fn leveldb_options_set_block_size(o: *mut leveldb_options_t, v: size_t) {
    with_options(o, |o| o.options.block_size = v.clamp(1 << 10, 4 << 20));
}

#[no_mangle]
pub unsafe extern "C" fn leveldb_options_set_block_restart_interval(
    o: *mut leveldb_options_t,
    v: c_int,
) {
    with_options(o, |o| o.options.block_restart_interval = v.max(1) as usize);
}

/// The size at which tables are cut, clamped to 1 MiB..1 GiB as LevelDB
/// sanitizes it.
#[no_mangle]
pub unsafe extern "C" fn leveldb_options_set_max_file_size(o: *mut leveldb_options_t, v: size_t) {
    with_options(o, |o| {
        o.options.target_table_size = (v as u64).clamp(1 << 20, 1 << 30)
    });
}

pub const LEVELDB_NO_COMPRESSION: c_int = 0;
pub const LEVELDB_SNAPPY_COMPRESSION: c_int = 1;

/// `leveldb_snappy_compression` selects LZ4, the engine's fast compressor;
/// any other value means none.
#[no_mangle]
pub unsafe extern "C" fn leveldb_options_set_compression(o: *mut leveldb_options_t, v: c_int) {
    with_options(o, |o| {
        o.options.compression = match v {
            LEVELDB_SNAPPY_COMPRESSION => CompressionType::Lz4,
            _ => CompressionType::None,
        }
    });
}

type Destructor = Option<unsafe extern "C" fn(*mut c_void)>;
type NameFn = Option<unsafe extern "C" fn(*mut c_void) -> *const c_char>;

/// Calls a user's name callback; a NULL callback or result is "".
fn callback_name(name: NameFn, state: *mut c_void) -> String {
    let Some(name) = name else {
        return String::new();
    };
    // SAFETY: the user's callback, called with the state it was given for.
    let ptr = unsafe { name(state) };
    // SAFETY: the callback returns NULL or a NUL-terminated string.
    unsafe { c_str(ptr) }
        .map(|b| String::from_utf8_lossy(b).into_owned())
        .unwrap_or_default()
}

pub type CompareFn = Option<
    unsafe extern "C" fn(*mut c_void, *const c_char, size_t, *const c_char, size_t) -> c_int,
>;

pub struct leveldb_comparator_t {
    state: *mut c_void,
    destructor: Destructor,
    _compare: CompareFn,
    name: NameFn,
}

impl leveldb_comparator_t {
    fn name(&self) -> String {
        callback_name(self.name, self.state)
    }
}

#[no_mangle]
pub extern "C" fn leveldb_comparator_create(
    state: *mut c_void,
    destructor: Destructor,
    compare: CompareFn,
    name: NameFn,
) -> *mut leveldb_comparator_t {
    Box::into_raw(Box::new(leveldb_comparator_t {
        state,
        destructor,
        _compare: compare,
        name,
    }))
}

#[no_mangle]
pub unsafe extern "C" fn leveldb_comparator_destroy(cmp: *mut leveldb_comparator_t) {
    if cmp.is_null() {
        return;
    }
    // SAFETY: `cmp` came from `leveldb_comparator_create`, destroyed once.
    let cmp = unsafe { Box::from_raw(cmp) };
    if let Some(destructor) = cmp.destructor {
        // SAFETY: the user's destructor for the user's state.
        unsafe { destructor(cmp.state) };
    }
}

pub type CreateFilterFn = Option<
    unsafe extern "C" fn(
        *mut c_void,
        *const *const c_char,
        *const size_t,
        c_int,
        *mut size_t,
    ) -> *mut c_char,
>;
pub type KeyMayMatchFn = Option<
    unsafe extern "C" fn(*mut c_void, *const c_char, size_t, *const c_char, size_t) -> c_uchar,
>;

/// A filter policy. The engine builds its own Bloom filters: a custom
/// policy's callbacks are kept but not called (filters only save reads), and
/// the store uses 10 bits per key; `leveldb_filterpolicy_create_bloom` sets
/// the bits per key.
pub struct leveldb_filterpolicy_t {
    state: *mut c_void,
    destructor: Destructor,
    _create_filter: CreateFilterFn,
    _key_may_match: KeyMayMatchFn,
    _name: NameFn,
    bloom_bits: Option<u32>,
}

#[no_mangle]
pub extern "C" fn leveldb_filterpolicy_create(
    state: *mut c_void,
    destructor: Destructor,
    create_filter: CreateFilterFn,
    key_may_match: KeyMayMatchFn,
    name: NameFn,
) -> *mut leveldb_filterpolicy_t {
    Box::into_raw(Box::new(leveldb_filterpolicy_t {
        state,
        destructor,
        _create_filter: create_filter,
        _key_may_match: key_may_match,
        _name: name,
        bloom_bits: None,
    }))
}

/// The engine's Bloom filter with `bits_per_key` bits (clamped to 0..=64).
#[no_mangle]
pub extern "C" fn leveldb_filterpolicy_create_bloom(
    bits_per_key: c_int,
) -> *mut leveldb_filterpolicy_t {
    Box::into_raw(Box::new(leveldb_filterpolicy_t {
        state: std::ptr::null_mut(),
        destructor: None,
        _create_filter: None,
        _key_may_match: None,
        _name: None,
        bloom_bits: Some(bits_per_key.clamp(0, 64) as u32),
    }))
}

#[no_mangle]
pub unsafe extern "C" fn leveldb_filterpolicy_destroy(policy: *mut leveldb_filterpolicy_t) {
    if policy.is_null() {
        return;
    }
    // SAFETY: `policy` came from a `leveldb_filterpolicy_create*`, once.
    let policy = unsafe { Box::from_raw(policy) };
    if let Some(destructor) = policy.destructor {
        // SAFETY: the user's destructor for the user's state.
        unsafe { destructor(policy.state) };
    }
}

pub struct leveldb_readoptions_t {
    pub(crate) fill_cache: bool,
    pub(crate) snapshot: *const leveldb_snapshot_t,
}

impl leveldb_readoptions_t {
    /// The engine's read options; the snapshot is cloned, so it stays
    /// pinned for as long as the read (or iterator) needs it.
    pub(crate) fn to_engine(&self) -> thicketdb::ReadOptions {
        thicketdb::ReadOptions {
            // SAFETY: a snapshot set here stays alive until released, and
            // LevelDB requires it not be released while options use it.
            snapshot: unsafe { self.snapshot.as_ref() }.map(|s| s.snapshot.clone()),
            fill_cache: self.fill_cache,
            ..thicketdb::ReadOptions::default()
        }
    }
}

#[no_mangle]
pub extern "C" fn leveldb_readoptions_create() -> *mut leveldb_readoptions_t {
    Box::into_raw(Box::new(leveldb_readoptions_t {
        fill_cache: true,
        snapshot: std::ptr::null(),
    }))
}

#[no_mangle]
pub unsafe extern "C" fn leveldb_readoptions_destroy(o: *mut leveldb_readoptions_t) {
    if !o.is_null() {
        // SAFETY: `o` came from `leveldb_readoptions_create`, destroyed once.
        drop(unsafe { Box::from_raw(o) });
    }
}

/// A no-op: ThicketDB verifies every block's checksum on every read.
#[no_mangle]
pub unsafe extern "C" fn leveldb_readoptions_set_verify_checksums(
    _o: *mut leveldb_readoptions_t,
    _v: c_uchar,
) {
}

#[no_mangle]
pub unsafe extern "C" fn leveldb_readoptions_set_fill_cache(
    o: *mut leveldb_readoptions_t,
    v: c_uchar,
) {
    // SAFETY: `o` is NULL or a live read options object.
    if let Some(o) = unsafe { o.as_mut() } {
        o.fill_cache = v != 0;
    }
}

#[no_mangle]
pub unsafe extern "C" fn leveldb_readoptions_set_snapshot(
    o: *mut leveldb_readoptions_t,
    snapshot: *const leveldb_snapshot_t,
) {
    // SAFETY: `o` is NULL or a live read options object.
    if let Some(o) = unsafe { o.as_mut() } {
        o.snapshot = snapshot;
    }
}

pub struct leveldb_writeoptions_t {
    pub(crate) sync: bool,
}

#[no_mangle]
pub extern "C" fn leveldb_writeoptions_create() -> *mut leveldb_writeoptions_t {
    Box::into_raw(Box::new(leveldb_writeoptions_t { sync: false }))
}

#[no_mangle]
pub unsafe extern "C" fn leveldb_writeoptions_destroy(o: *mut leveldb_writeoptions_t) {
    if !o.is_null() {
        // SAFETY: `o` came from `leveldb_writeoptions_create`, destroyed once.
        drop(unsafe { Box::from_raw(o) });
    }
}

#[no_mangle]
pub unsafe extern "C" fn leveldb_writeoptions_set_sync(o: *mut leveldb_writeoptions_t, v: c_uchar) {
    // SAFETY: `o` is NULL or a live write options object.
    if let Some(o) = unsafe { o.as_mut() } {
        o.sync = v != 0;
    }
}

/// A block cache size. Each store given it gets its own cache of this
/// capacity: sharing one cache between stores is not implemented yet.
pub struct leveldb_cache_t {
    capacity: size_t,
}

#[no_mangle]
pub extern "C" fn leveldb_cache_create_lru(capacity: size_t) -> *mut leveldb_cache_t {
    Box::into_raw(Box::new(leveldb_cache_t { capacity }))
}

#[no_mangle]
pub unsafe extern "C" fn leveldb_cache_destroy(cache: *mut leveldb_cache_t) {
    if !cache.is_null() {
        // SAFETY: `cache` came from `leveldb_cache_create_lru`, once.
        drop(unsafe { Box::from_raw(cache) });
    }
}

/// The default (POSIX) environment; the only one.
pub struct leveldb_env_t {
    _private: (),
}

/// Never constructed: LevelDB's C API has no way to make a logger, so only
/// NULL reaches `leveldb_options_set_info_log`.
pub struct leveldb_logger_t {
    _private: (),
}

#[no_mangle]
pub extern "C" fn leveldb_create_default_env() -> *mut leveldb_env_t {
    Box::into_raw(Box::new(leveldb_env_t { _private: () }))
}

#[no_mangle]
pub unsafe extern "C" fn leveldb_env_destroy(env: *mut leveldb_env_t) {
    if !env.is_null() {
        // SAFETY: `env` came from `leveldb_create_default_env`, once.
        drop(unsafe { Box::from_raw(env) });
    }
}

/// `$TEST_TMPDIR`, or `/tmp/thicketdbtest-<uid>`, created if missing, as a
/// `malloc`ed string to free with `leveldb_free`; NULL on failure.
#[no_mangle]
pub unsafe extern "C" fn leveldb_env_get_test_directory(_env: *mut leveldb_env_t) -> *mut c_char {
    guard_quiet(std::ptr::null_mut(), || {
        let dir = match std::env::var("TEST_TMPDIR") {
            Ok(dir) if !dir.is_empty() => dir,
            // SAFETY: `geteuid` has no preconditions.
            _ => format!("/tmp/thicketdbtest-{}", unsafe { libc::geteuid() }),
        };
        match std::fs::create_dir_all(&dir) {
            Ok(()) => malloc_string(&dir),
            Err(_) => std::ptr::null_mut(),
        }
    })
}
