//! Store-level tools that LevelDB exposes and the C API needs: named
//! properties, approximate sizes of key ranges, destroying a store and
//! repairing one whose MANIFEST is lost or damaged, and decoding its files
//! for inspection (`dump`).

mod approximate;
mod destroy;
pub mod dump;
mod properties;
mod repair;

pub use destroy::destroy;
pub use repair::{repair, RepairReport};
