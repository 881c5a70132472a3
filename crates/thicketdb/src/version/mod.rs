//! Versions: the set of live tables organised as levels of runs, the edits
//! that change it, the MANIFEST that records those edits, and file naming.

pub mod buffer_range;
pub mod edit;
pub mod files;
pub mod log_prefetch;
pub mod log_values;
mod log_spans;
pub mod lsbm_buffer;
pub mod meta;
pub mod piece_iter;
pub mod range_del_view;
pub mod run_iter;
pub mod set;
pub mod table_cache;
#[allow(clippy::module_inception)]
pub mod version;

pub use edit::{MergeJournal, VersionEdit};
pub use lsbm_buffer::{BufferEntry, BufferProbe, BufferRun};
pub use meta::{Level, Run, Sketch, TableMeta};
pub use set::VersionSet;
pub use version::{Version, NUM_LEVELS};
