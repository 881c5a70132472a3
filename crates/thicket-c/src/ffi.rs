//! Crossing the C boundary: byte slices from pointer and length, malloc'd
//! copies for the caller to free, LevelDB's `errptr` convention and the
//! guard that keeps panics on the Rust side.

use std::panic::{catch_unwind, AssertUnwindSafe};

use libc::{c_char, size_t};

/// The bytes `ptr[..len]`; empty for a NULL pointer.
///
/// # Safety
/// `ptr` is NULL or valid for reads of `len` bytes for `'a`.
pub(crate) unsafe fn bytes<'a>(ptr: *const c_char, len: size_t) -> &'a [u8] {
    if ptr.is_null() || len == 0 {
        return &[];
    }
    // SAFETY: non-NULL and, by the caller's contract, valid for `len` bytes.
    unsafe { std::slice::from_raw_parts(ptr.cast::<u8>(), len) }
}

/// `Some` of the bytes `ptr[..len]`, or `None` for a NULL pointer (an
/// unbounded side of a range).
///
/// # Safety
/// As for [`bytes`].
pub(crate) unsafe fn optional_bytes<'a>(ptr: *const c_char, len: size_t) -> Option<&'a [u8]> {
    // SAFETY: forwarded from the caller.
    (!ptr.is_null()).then(|| unsafe { bytes(ptr, len) })
}

/// A NUL-terminated C string as bytes; `None` for NULL.
///
/// # Safety
/// `ptr` is NULL or points to a NUL-terminated string.
pub(crate) unsafe fn c_str<'a>(ptr: *const c_char) -> Option<&'a [u8]> {
    if ptr.is_null() {
        return None;
    }
    // SAFETY: non-NULL and NUL-terminated by the caller's contract.
    Some(unsafe { std::ffi::CStr::from_ptr(ptr) }.to_bytes())
}

/// A `malloc`ed copy of `data` (at least one byte, so that an empty value
/// is not NULL, which means "not found"); NULL when memory runs out.
pub(crate) fn malloc_copy(data: &[u8]) -> *mut c_char {
    // SAFETY: `malloc` has no preconditions; the result is checked.
    let out = unsafe { libc::malloc(data.len().max(1)) }.cast::<u8>();
    if !out.is_null() {
        // SAFETY: `out` holds at least `data.len()` bytes and cannot overlap
        // `data`, which Rust owns.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), out, data.len()) };
    }
    out.cast()
}

/// A `malloc`ed NUL-terminated copy of `text` (NUL bytes inside are
/// replaced, so the C string is the whole text).
pub(crate) fn malloc_string(text: &str) -> *mut c_char {
    let mut bytes = text.replace('\0', "\\0").into_bytes();
    bytes.push(0);
    malloc_copy(&bytes)
}

/// LevelDB's convention: on failure free the old message, if any, and store
/// a new `malloc`ed one; `errptr` itself may be NULL (then nothing is said).
///
/// # Safety
/// `errptr` is NULL or points to NULL or to a `malloc`ed string.
pub(crate) unsafe fn set_error(errptr: *mut *mut c_char, message: &str) {
    if errptr.is_null() {
        return;
    }
    // SAFETY: `errptr` is valid; its old value is NULL or malloc'ed, so
    // `free` accepts it.
    unsafe {
        libc::free((*errptr).cast());
        *errptr = malloc_string(message);
    }
}

/// LevelDB's status text for an engine error (`Corruption: ...`,
/// `Invalid argument: ...`, `IO error: ...`).
pub(crate) fn status(e: &thicketdb::Error) -> String {
    use thicketdb::Error;
    match e {
        Error::Corruption { .. } => format!("Corruption: {e}"),
        Error::InvalidArgument(why) => format!("Invalid argument: {why}"),
        Error::KeyspaceNotFound(_) => format!("NotFound: {e}"),
        Error::Background(inner) if inner.is_corruption() => format!("Corruption: {e}"),
        _ => format!("IO error: {e}"),
    }
}

fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_string())
}

/// Runs `f`; an error or a panic is reported through `errptr` and turns
/// into `fallback`.
///
/// # Safety
/// As for [`set_error`].
pub(crate) unsafe fn guard<T>(
    errptr: *mut *mut c_char,
    fallback: T,
    f: impl FnOnce() -> Result<T, String>,
) -> T {
    let message = match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(v)) => return v,
        Ok(Err(message)) => message,
        Err(payload) => format!("IO error: internal error: {}", panic_text(&*payload)),
    };
    // SAFETY: forwarded from the caller.
    unsafe { set_error(errptr, &message) };
    fallback
}

/// Runs `f` for an entry point without an error channel; a panic turns into
/// `fallback`.
pub(crate) fn guard_quiet<T>(fallback: T, f: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or(fallback)
}
