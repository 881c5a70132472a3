//! A C comparator (`leveldb_comparator_create`'s callbacks) as the engine's
//! `Comparator`: the store orders every key by it.

use std::cmp::Ordering;

use libc::{c_char, c_int, c_void, size_t};
use thicketdb::Comparator;

use crate::user_state::UserState;

pub type CompareFn = Option<
    unsafe extern "C" fn(*mut c_void, *const c_char, size_t, *const c_char, size_t) -> c_int,
>;

/// The user's callback and state (whose destructor runs when the last
/// holder of the comparator lets go, see `UserState`).
pub(crate) struct CComparator {
    pub state: UserState,
    pub compare: CompareFn,
    /// The name callback's answer, asked once at creation.
    pub name: String,
}

impl Comparator for CComparator {
    fn name(&self) -> &str {
        &self.name
    }

    /// The sign of the user's answer; without a callback, byte order.
    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        let Some(compare) = self.compare else {
            return a.cmp(b);
        };
        // SAFETY: the user's callback with its state and two buffers that
        // live across the call, given with their lengths.
        let sign = unsafe {
            compare(
                self.state.ptr(),
                a.as_ptr().cast(),
                a.len(),
                b.as_ptr().cast(),
                b.len(),
            )
        };
        sign.cmp(&0)
    }
}
