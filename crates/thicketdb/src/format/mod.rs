//! Byte-level encodings shared by every on-disk format: varints and fixed
//! integers, masked CRC32C checksums, and internal keys.

pub mod bytes_order;
pub mod checksum;
pub mod coding;
pub mod fragment_map;
pub mod internal_key;
pub mod key_order;
pub mod range_tombstone;

pub use internal_key::{InternalKey, ValueKind, MAX_SEQUENCE};
pub use key_order::{Comparator, KeyOrder};

/// Levels of the tree. A MANIFEST names levels below this bound, and
/// per-level counters are arrays of this length, so it is part of the
/// on-disk format rather than a tuning knob.
pub const NUM_LEVELS: usize = 7;
