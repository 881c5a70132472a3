//! Sorted string tables: immutable, sorted runs of internal keys stored
//! inside segment files.
//!
//! A table is a sequence of blocks (data blocks, an optional filter,
//! a properties block and an index block) followed by a fixed-size footer.
//! Block handles are relative to the table start, so a table can be placed
//! at any offset of a segment. See `docs/format.md` for the layout.

mod block;
mod block_builder;
mod block_handle;
mod block_io;
mod block_iter;
mod bloom;
mod builder;
mod cache;
mod compression;
mod context;
mod filter;
mod filter_policy;
mod footer;
mod hll;
mod index;
mod options;
mod properties;
mod reader;
mod readahead;
mod separator;
mod table_iter;
#[cfg(test)]
pub(crate) mod testutil;

pub use block::Block;
pub use block_builder::BlockBuilder;
pub use block_handle::BlockHandle;
pub use block_io::{blocks_read_on_this_thread, note_block_read, BLOCK_TRAILER_LEN};
pub use block_iter::BlockIter;
pub(crate) use bloom::probes as bloom_probes;
pub use bloom::{BloomBuilder, BloomFilter};
pub use builder::{TableBuilder, TableSummary};
pub use cache::BlockCache;
pub use compression::{CompressionType, MAX_BLOCK_SIZE};
pub use context::{PreparedValues, TableContext, ValueLog};
pub use filter_policy::FilterPolicy;
pub use footer::{
    Footer, FOOTER_LEN, FORMAT_VERSION, LOG_TABLE_FORMAT_VERSION, NAMED_FILTER_FORMAT_VERSION,
    RANGE_DEL_FORMAT_VERSION, TABLE_MAGIC,
};
pub use hll::HyperLogLog;
pub use options::TableOptions;
pub use properties::TableProperties;
pub use reader::{is_put, Table};
pub use table_iter::TableIterator;
