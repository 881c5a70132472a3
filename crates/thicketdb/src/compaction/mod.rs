//! Compaction: deciding what to merge (`leveled`, `tiered`) beside the
//! tasks already running (`busy`), which entries survive a merge
//! (`drop_rule`), writing merged output as tables (`output`) and running a
//! task end to end (`executor`); LSbM's compaction buffer (`buffer`).

pub mod bottommost;
pub mod busy;
pub mod components;
pub mod drop_rule;
pub mod executor;
pub mod grandparents;
pub mod journal;
pub mod leveled;
pub mod lsbm_buffer_edits;
pub mod output;
pub mod policy;
pub mod task;
pub mod tiered;

pub use crate::options::PolicyKind;
pub use bottommost::Bottommost;
pub use busy::{Busy, Claim};
pub use executor::execute;
pub use leveled::LeveledPolicy;
pub use policy::Policy;
pub use task::{CompactionTask, TaskInput};
pub use tiered::TieredPolicy;
