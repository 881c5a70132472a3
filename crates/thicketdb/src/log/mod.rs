//! The log: a stream of checksummed records in 32 KiB blocks (LevelDB's log
//! format), used for the write-ahead log and for the MANIFEST. The byte
//! layout and the torn-tail policy are in `docs/format-log.md`.

mod blocks;
mod format;
mod mode;
mod reader;
mod writer;

#[cfg(test)]
mod tests;

pub use format::{BLOCK_SIZE, HEADER_SIZE};
pub use mode::RecoveryMode;
pub use reader::{LogReader, Skipped, DEFAULT_MAX_RECORD_SIZE};
pub use writer::LogWriter;
