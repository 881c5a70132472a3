//! The log: a stream of checksummed records in 32 KiB blocks (LevelDB's log
//! format), used for the write-ahead log and for the MANIFEST. Records are
//! read in order by [`LogReader`], or one at a time by address (the offset
//! [`LogWriter::add_record`] returns) with [`RandomAccessLogReader`]. The
//! byte layout, the torn-tail policy and record addresses are described in
//! the log section of `docs/format.md`.

mod address;
mod blocks;
mod format;
mod mode;
mod random_access;
mod read_ahead;
mod reader;
mod relogged;
mod writer;

#[cfg(test)]
mod random_access_tests;
#[cfg(test)]
mod tests;

pub use address::{LogAddress, ValueAddress};
pub use format::{FragmentType, BLOCK_SIZE, HEADER_SIZE};
pub use mode::RecoveryMode;
pub use random_access::RandomAccessLogReader;
pub use reader::{LogReader, Skipped, DEFAULT_MAX_RECORD_SIZE};
pub use relogged::{
    decode_relogged, encode_relogged, for_each_relogged, is_relogged, RelogEntry, RelogSource,
};
pub use writer::LogWriter;
