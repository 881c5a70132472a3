//! User-supplied filter policies (LevelDB's `FilterPolicy`).
//!
//! A policy builds one filter per table over the table's distinct user
//! keys and answers lookups from it. Its name identifies the filter's
//! encoding: a table records the name of the policy that built its filter,
//! and a reader uses the filter only under a policy of the same name (see
//! `filter.rs`). A filter is only a hint, so a table whose filter cannot be
//! used reads as if it had none.

use std::fmt;

/// Builds and probes table filters. A filter that answers "no" for a key
/// the table holds hides that key: that is the policy's bug, but whatever
/// bytes a filter holds, the engine itself never fails on them.
pub trait FilterPolicy: Send + Sync {
    /// Names the filter encoding; recorded in every table built with it.
    /// A policy whose encoding changes must change its name.
    fn name(&self) -> &str;

    /// Appends to `dst` a filter for `user_keys` (distinct, in table order).
    fn create_filter(&self, user_keys: &[&[u8]], dst: &mut Vec<u8>);

    /// False only if `user_key` was certainly not among the keys `filter`
    /// was created for.
    fn key_may_match(&self, user_key: &[u8], filter: &[u8]) -> bool;
}

impl fmt::Debug for dyn FilterPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("FilterPolicy").field(&self.name()).finish()
    }
}

/// Policies are equal when their names are: the name is what a table
/// records, so two policies of one name read the same tables.
impl PartialEq for dyn FilterPolicy {
    fn eq(&self, other: &Self) -> bool {
        self.name() == other.name()
    }
}

impl Eq for dyn FilterPolicy {}
