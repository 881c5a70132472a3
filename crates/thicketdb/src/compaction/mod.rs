//! Compaction: deciding what to merge (`pick`), which entries survive a
//! merge (`drop_rule`), writing merged output as tables in one segment
//! (`output`) and running a task end to end (`executor`).
//!
//! The engine core uses one simple policy: when L0 holds
//! `l0_compaction_trigger` runs, merge all of L0 with the overlapping tables
//! of L1 into L1. The compaction-framework issue replaces it with pluggable
//! policies.

pub mod drop_rule;
pub mod executor;
pub mod output;
pub mod pick;

pub use executor::execute;
pub use pick::{pick_l0, pick_range, CompactionTask, TaskInput};
