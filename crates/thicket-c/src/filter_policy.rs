//! A C filter policy (`leveldb_filterpolicy_create`'s callbacks) as the
//! engine's `FilterPolicy`.

use libc::{c_char, c_int, c_uchar, c_void, size_t};
use thicketdb::FilterPolicy;

use crate::user_state::UserState;

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

/// The user's callbacks and state (whose destructor runs when the last
/// holder of the policy lets go, see `UserState`).
pub(crate) struct CFilterPolicy {
    pub state: UserState,
    pub create_filter: CreateFilterFn,
    pub key_may_match: KeyMayMatchFn,
    /// The name callback's answer, asked once at creation.
    pub name: String,
}

impl FilterPolicy for CFilterPolicy {
    fn name(&self) -> &str {
        &self.name
    }

    /// Calls the user's `create_filter` with the keys and copies the
    /// `malloc`ed filter it returns into `dst`, then `free`s it (LevelDB's
    /// C wrapper does the same). No callback, a NULL result or more keys
    /// than a C `int` counts leave `dst` as it is: the table gets no filter.
    fn create_filter(&self, user_keys: &[&[u8]], dst: &mut Vec<u8>) {
        let (Some(create), Ok(n)) = (self.create_filter, c_int::try_from(user_keys.len())) else {
            return;
        };
        let pointers: Vec<*const c_char> = user_keys.iter().map(|k| k.as_ptr().cast()).collect();
        let lengths: Vec<size_t> = user_keys.iter().map(|k| k.len()).collect();
        let mut len: size_t = 0;
        // SAFETY: the user's callback with its state, `n` keys given as
        // pointer and length arrays that live across the call, and a place
        // for the filter's length.
        let filter = unsafe {
            create(
                self.state.ptr(),
                pointers.as_ptr(),
                lengths.as_ptr(),
                n,
                &mut len,
            )
        };
        if filter.is_null() {
            return;
        }
        // SAFETY: the callback returns a `malloc`ed buffer of `len` bytes.
        dst.extend_from_slice(unsafe { crate::ffi::bytes(filter, len) });
        // SAFETY: `filter` came from the user's `malloc` and is freed once.
        unsafe { libc::free(filter.cast()) };
    }

    fn key_may_match(&self, user_key: &[u8], filter: &[u8]) -> bool {
        let Some(matches) = self.key_may_match else {
            return true;
        };
        // SAFETY: the user's callback with its state and two buffers that
        // live across the call, given with their lengths.
        unsafe {
            matches(
                self.state.ptr(),
                user_key.as_ptr().cast(),
                user_key.len(),
                filter.as_ptr().cast(),
                filter.len(),
            ) != 0
        }
    }
}
