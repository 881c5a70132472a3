//! Store-level tools that LevelDB exposes and the C API needs: named
//! properties, approximate sizes of key ranges, destroying a store and
//! repairing one whose MANIFEST is lost or damaged.

mod approximate;
mod destroy;
mod properties;
mod repair;

pub use destroy::destroy;
pub use repair::{repair, RepairReport};
