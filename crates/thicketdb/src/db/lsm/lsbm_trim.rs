//! LSbM's compaction buffer on the `db` side: running a trim (Algorithm 2)
//! with the cached-block shares the block cache reports, and counting
//! what the buffer's edits did.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::obsolete::collect_obsolete_files;
use super::super_version::install;
use super::tree::Tree;
use super::DbInner;
use crate::compaction::lsbm_buffer_edits::BufferChange;
use crate::error::{Error, Result};
use crate::stats::Counters;

/// Adds a buffer edit's effects to the statistics.
pub(crate) fn count(inner: &DbInner, change: BufferChange) {
    let c = &inner.counters;
    Counters::add(&c.buffer_tables_removed, change.removed_total());
    Counters::add(&c.freezes, change.froze_total());
    for level in 0..change.removed.len() {
        Counters::add_at(
            &c.buffer_tables_removed_per_level,
            level,
            change.removed[level],
        );
        Counters::add_at(&c.freezes_per_level, level, change.froze[level]);
    }
}

/// Trims the compaction buffer of every keyspace that has one now: buffer
/// tables not appended since the previous trim whose share of cached blocks
/// is under `lsbm_trim_threshold` are removed and their data released.
/// Takes `versions`, then `super_version` through `install`.
pub(crate) fn trim(inner: &Arc<DbInner>) -> Result<()> {
    for tree in inner.trees().iter() {
        match trim_tree(inner, tree) {
            // Dropped meanwhile: its tables may be gone already.
            Err(_) if tree.dropped.load(Ordering::Acquire) => {}
            other => other?,
        }
    }
    Ok(())
}

fn trim_tree(inner: &Arc<DbInner>, tree: &Tree) -> Result<()> {
    let Some(buffer) = tree.policy.buffer() else {
        return Ok(());
    };
    buffer.trimmed();
    // Shares are read without locks (opening a table may read its file);
    // the edit is built against the version current at commit, and
    // tables that left the buffer meanwhile are simply not named.
    let version = tree.super_version().version.clone();
    let mut cached_ratio = HashMap::new();
    for level in &version.levels {
        for run in &level.buffer {
            for t in run.present().filter(|t| buffer.trimmable(t.id)) {
                let table = inner.table_cache.table(t)?;
                cached_ratio.insert(t.id, table.cached_block_ratio());
            }
        }
    }
    drop(version);
    {
        let mut versions = inner.versions.lock();
        let Some(current) = versions.current_of(tree.id) else {
            return Ok(()); // dropped meanwhile
        };
        let (mut edit, change) = buffer
            .trim_edit(&current, &cached_ratio)
            .map_err(|why| Error::invariant(format!("trim edit does not apply: {why}")))?;
        if edit.is_empty() {
            return Ok(());
        }
        count(inner, change);
        Counters::add(&inner.counters.buffer_trims, 1);
        Counters::add(
            &inner.counters.buffer_tables_trimmed,
            change.removed_total(),
        );
        for (level, &n) in change.removed.iter().enumerate() {
            Counters::add_at(&inner.counters.buffer_tables_trimmed_per_level, level, n);
        }
        edit.keyspace = tree.id;
        if let Some(version) = versions.log_and_apply(edit)? {
            install(tree, version, None);
        }
    }
    collect_obsolete_files(inner);
    Ok(())
}
