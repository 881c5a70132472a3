//! A C caller's callback state and its destructor, held by the wrappers
//! that turn C callbacks into engine traits (comparators, filter policies).

use libc::c_void;

pub type Destructor = Option<unsafe extern "C" fn(*mut c_void)>;

/// The state pointer the callbacks are given. The destructor runs when this
/// drops: when the last holder of the wrapper lets go (the user's handle,
/// options set with it, or a store opened with it), so no store ever calls
/// into destroyed state.
pub(crate) struct UserState {
    ptr: *mut c_void,
    destructor: Destructor,
}

impl UserState {
    pub fn new(ptr: *mut c_void, destructor: Destructor) -> UserState {
        UserState { ptr, destructor }
    }

    /// The pointer to pass to the callbacks.
    pub fn ptr(&self) -> *mut c_void {
        self.ptr
    }
}

// SAFETY: the engine calls comparators and filter policies from its
// background threads and from readers' threads; LevelDB does the same, and
// its contract requires the callbacks and their state to allow it.
unsafe impl Send for UserState {}
// SAFETY: as for `Send`: callbacks take the state by shared pointer from
// any thread, which LevelDB's contract allows.
unsafe impl Sync for UserState {}

impl Drop for UserState {
    fn drop(&mut self) {
        if let Some(destructor) = self.destructor {
            // SAFETY: the user's destructor for the user's state, called
            // once, when nothing can call the callbacks any more.
            unsafe { destructor(self.ptr) };
        }
    }
}
