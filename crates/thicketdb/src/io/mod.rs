//! The file layer: a small `FileSystem` trait the engine does all its I/O
//! through, the real POSIX implementation, a fault-injecting implementation
//! for tests, and segment files.

pub mod backing;
#[cfg(test)]
pub mod counting;
pub mod direct;
pub mod direct_write;
pub mod fault;
pub mod fs;
pub mod mapped;
pub mod posix;
pub mod segment;

pub use backing::{Backing, BackingKind, Backings, Extent, FilePin, Released};
pub use fs::{FileLock, FileSyncer, FileSystem, RandomAccessFile, SequentialFile, WritableFile};
pub use posix::PosixFs;
