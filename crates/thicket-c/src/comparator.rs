//! A C comparator (`leveldb_comparator_create`'s callbacks) as the engine's
//! `Comparator`: the store orders every key by it.

use std::cmp::Ordering;

use libc::{c_char, c_int, c_void, size_t};
use thicketdb::Comparator;

use crate::filter_policy::Destructor;

pub type CompareFn = Option<
    unsafe extern "C" fn(*mut c_void, *const c_char, size_t, *const c_char, size_t) -> c_int,
>;

/// The user's callbacks and state. The destructor runs when the last
/// holder lets go: the user's `leveldb_comparator_t`, options set with it,
/// or a store opened with it (so a store never calls into destroyed state).
pub(crate) struct CComparator {
    pub state: *mut c_void,
    pub destructor: Destructor,
    pub compare: CompareFn,
    /// The name callback's answer, asked once at creation.
    pub name: String,
}

// SAFETY: the engine compares keys on its background threads and on
// readers' threads; LevelDB does the same, and its contract requires the
// callback and its state to allow it.
unsafe impl Send for CComparator {}
// SAFETY: as for `Send`: the callback takes the state by shared pointer
// from any thread, which LevelDB's contract allows.
unsafe impl Sync for CComparator {}

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
                self.state,
                a.as_ptr().cast(),
                a.len(),
                b.as_ptr().cast(),
                b.len(),
            )
        };
        sign.cmp(&0)
    }
}

impl Drop for CComparator {
    fn drop(&mut self) {
        if let Some(destructor) = self.destructor {
            // SAFETY: the user's destructor for the user's state, called
            // once, when nothing can compare with it any more.
            unsafe { destructor(self.state) };
        }
    }
}
