//! Options, read and write options, comparators, filter policies, caches,
//! environments and loggers.
//!
//! Every option the C API exposes starts at LevelDB's default (its
//! `Options`, `ReadOptions` and `WriteOptions`): no store is created unless
//! asked, no filter policy, a 4 MiB write buffer, an 8 MiB block cache, 4 KiB
//! blocks restarting every 16 keys, 2 MiB tables, 1000 open files,
//! Snappy-class compression (LZ4 here), reads filling the cache, unsynced
//! writes. Everything the C API cannot set is ThicketDB's default profile.

use std::sync::Arc;

use libc::{c_char, c_int, c_uchar, c_void, size_t};
use thicketdb::{BlockCache, CompressionType, FilterPolicy};
use thicketdb::{KeyOrder, Options};

use crate::comparator::{CComparator, CompareFn};
use crate::db::leveldb_snapshot_t;
use crate::ffi::{c_str, guard_quiet, malloc_string};
use crate::filter_policy::CFilterPolicy;
pub use crate::filter_policy::{CreateFilterFn, KeyMayMatchFn};
pub use crate::user_state::Destructor;
use crate::user_state::UserState;

/// The block cache capacity of a store opened without a cache (LevelDB's).
const DEFAULT_CACHE_BYTES: u64 = 8 << 20;

pub struct leveldb_options_t {
    pub(crate) options: Options,
}

#[no_mangle]
pub extern "C" fn leveldb_options_create() -> *mut leveldb_options_t {
    let options = Options::default()
        // LevelDB's `leveldb_open` fails on a missing store unless asked.
        .create_if_missing(false)
        .error_if_exists(false)
        // LevelDB builds no filter until a policy is set.
        .bloom_bits_per_key(0)
        .write_buffer_size(4 << 20)
        .max_open_files(1000)
        .block_cache_size(DEFAULT_CACHE_BYTES)
        .block_size(4 << 10)
        .block_restart_interval(16)
        .target_table_size(2 << 20)
        .compression(CompressionType::Lz4);
    Box::into_raw(Box::new(leveldb_options_t { options }))
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
    let order = unsafe { cmp.as_ref() }.map_or(KeyOrder::Bytewise, |c| c.order.clone());
    with_options(o, |o| o.options.comparator = order);
}

#[no_mangle]
pub unsafe extern "C" fn leveldb_options_set_filter_policy(
    o: *mut leveldb_options_t,
    policy: *mut leveldb_filterpolicy_t,
) {
    // SAFETY: `policy` is NULL or a live filter policy.
    let policy = unsafe { policy.as_ref() }.map(|p| p.kind.clone());
    with_options(o, |o| match policy {
        None => {
            o.options.filter_policy = None;
            o.options.bloom_bits_per_key = 0;
        }
        Some(PolicyKind::Bloom(bits)) => {
            o.options.filter_policy = None;
            o.options.bloom_bits_per_key = bits;
        }
        Some(PolicyKind::Custom(policy)) => o.options.filter_policy = Some(policy),
    });
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

/// Every store opened with these options reads through `cache`, shared
/// with the other stores given it; NULL: each store gets a cache of its
/// own of 8 MiB.
#[no_mangle]
pub unsafe extern "C" fn leveldb_options_set_cache(
    o: *mut leveldb_options_t,
    cache: *mut leveldb_cache_t,
) {
    // SAFETY: `cache` is NULL or a live cache.
    let cache = unsafe { cache.as_ref() }.map(|c| c.cache.clone());
    with_options(o, |o| {
        o.options.block_cache_size = cache
            .as_ref()
            .map_or(DEFAULT_CACHE_BYTES, BlockCache::capacity);
        o.options.block_cache = cache;
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

/// A comparator: the user's callbacks, which order every key of a store
/// opened with it (the store records the name and refuses another).
pub struct leveldb_comparator_t {
    order: KeyOrder,
}

#[no_mangle]
pub extern "C" fn leveldb_comparator_create(
    state: *mut c_void,
    destructor: Destructor,
    compare: CompareFn,
    name: NameFn,
) -> *mut leveldb_comparator_t {
    guard_quiet(std::ptr::null_mut(), || {
        let comparator = CComparator {
            state: UserState::new(state, destructor),
            compare,
            name: callback_name(name, state),
        };
        Box::into_raw(Box::new(leveldb_comparator_t {
            order: KeyOrder::custom(Arc::new(comparator)),
        }))
    })
}

#[no_mangle]
pub unsafe extern "C" fn leveldb_comparator_destroy(cmp: *mut leveldb_comparator_t) {
    if cmp.is_null() {
        return;
    }
    // SAFETY: `cmp` came from `leveldb_comparator_create`, destroyed once.
    // The destructor runs when the last holder (this handle, options or an
    // open store) lets go.
    drop(unsafe { Box::from_raw(cmp) });
}

/// A filter policy: the user's callbacks, which build every new table's
/// filter and answer lookups (tables record the name; a table built under
/// another name is read unfiltered), or the engine's Bloom filter
/// (`leveldb_filterpolicy_create_bloom`).
pub struct leveldb_filterpolicy_t {
    kind: PolicyKind,
}

#[derive(Clone)]
enum PolicyKind {
    /// The engine's Bloom filter with these bits per key.
    Bloom(u32),
    Custom(Arc<dyn FilterPolicy>),
}

#[no_mangle]
pub extern "C" fn leveldb_filterpolicy_create(
    state: *mut c_void,
    destructor: Destructor,
    create_filter: CreateFilterFn,
    key_may_match: KeyMayMatchFn,
    name: NameFn,
) -> *mut leveldb_filterpolicy_t {
    guard_quiet(std::ptr::null_mut(), || {
        let policy = CFilterPolicy {
            state: UserState::new(state, destructor),
            create_filter,
            key_may_match,
            name: callback_name(name, state),
        };
        Box::into_raw(Box::new(leveldb_filterpolicy_t {
            kind: PolicyKind::Custom(Arc::new(policy)),
        }))
    })
}

/// The engine's Bloom filter with `bits_per_key` bits (clamped to 0..=64).
#[no_mangle]
pub extern "C" fn leveldb_filterpolicy_create_bloom(
    bits_per_key: c_int,
) -> *mut leveldb_filterpolicy_t {
    Box::into_raw(Box::new(leveldb_filterpolicy_t {
        kind: PolicyKind::Bloom(bits_per_key.clamp(0, 64) as u32),
    }))
}

/// Releases the user's handle. A custom policy's destructor runs now if no
/// options object or open store holds the policy, else when the last of
/// them lets go: it runs exactly once either way.
#[no_mangle]
pub unsafe extern "C" fn leveldb_filterpolicy_destroy(policy: *mut leveldb_filterpolicy_t) {
    if !policy.is_null() {
        // SAFETY: `policy` came from a `leveldb_filterpolicy_create*`, once.
        drop(unsafe { Box::from_raw(policy) });
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

/// A block cache shared by every store opened with it (the engine's CLOCK
/// cache, not an LRU: the name is LevelDB's). Each store's blocks are kept
/// apart by a store id of its own.
pub struct leveldb_cache_t {
    cache: BlockCache,
}

#[no_mangle]
pub extern "C" fn leveldb_cache_create_lru(capacity: size_t) -> *mut leveldb_cache_t {
    guard_quiet(std::ptr::null_mut(), || {
        Box::into_raw(Box::new(leveldb_cache_t {
            cache: BlockCache::new(capacity as u64),
        }))
    })
}

/// Releases the user's handle; stores still open with the cache keep it
/// until they close.
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
