//! The shape `check_store` verifies on an LSM version beyond what
//! replaying the MANIFEST already enforces (the tables of one run sorted
//! and disjoint, `Version::apply`): under the leveled policy no two runs
//! of one level below L0 overlap. Concurrent compactions may each start a
//! run in an empty level, but over disjoint key ranges
//! (`compaction/busy.rs`); overlapping runs there would let a compaction
//! move a key's newer version below an older one still in the level, and
//! a read would find the older one first. (Tiered levels and LSbM's
//! compaction buffer hold overlapping runs by design.)
//!
//! Under the tiered policy every run is numbered after its tables: a flush
//! or a merge allocates the run's number when it commits, after writing
//! the tables, and moved tables are older still. The one exception is a
//! journaled merge's interim run (SifrDB early cleaning), numbered when
//! the merge starts so that it sorts just above its inputs. A run numbered
//! below one of its tables that the MANIFEST's merge journal does not name
//! is such an interim run whose journal was lost: the store would read
//! right but never finish the merge, leaving the inputs' superseded keys
//! shadowed only by run order.

use std::path::Path;

use crate::error::{Error, Printable, Result};
use crate::options::PolicyKind;
use crate::version::files::segment_path;
use crate::version::{Run, Version};

/// Checks `version` (of a keyspace compacted by `policy`) for overlapping
/// runs where the policy keeps none; reports the first table of the
/// offending run, with the key range the two runs share.
pub(crate) fn check_runs(dir: &Path, version: &Version, policy: PolicyKind) -> Result<()> {
    if policy != PolicyKind::Leveled {
        return check_interim_runs(dir, version);
    }
    let order = &version.order;
    for (level, l) in version.levels.iter().enumerate().skip(1) {
        for (i, a) in l.runs.iter().enumerate() {
            for b in &l.runs[i + 1..] {
                let (Some((a_lo, a_hi)), Some((b_lo, b_hi))) = (span(a), span(b)) else {
                    continue;
                };
                if order.lt(a_hi, b_lo) || order.lt(b_hi, a_lo) {
                    continue;
                }
                let first = &b.tables[0];
                return Err(Error::corruption(
                    segment_path(dir, first.segment),
                    first.offset,
                    format!(
                        "runs {} and {} of L{level} overlap (keys \"{}\" to \"{}\" and \"{}\" \
                         to \"{}\"); the leveled policy keeps the runs of a level disjoint",
                        a.id,
                        b.id,
                        Printable(a_lo),
                        Printable(a_hi),
                        Printable(b_lo),
                        Printable(b_hi)
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// A tiered version's runs numbered below one of their tables: each must
/// be the interim run its merge journal names (see the module's comment).
fn check_interim_runs(dir: &Path, version: &Version) -> Result<()> {
    let journal = version.merge_journal.as_ref();
    for (level, l) in version.levels.iter().enumerate() {
        for run in &l.runs {
            let Some(newest) = run.tables.iter().max_by_key(|t| t.id) else {
                continue;
            };
            let interim = journal.is_some_and(|j| j.level == level && j.interim_run == run.id);
            if newest.id <= run.id || interim {
                continue;
            }
            return Err(Error::corruption(
                segment_path(dir, newest.segment),
                newest.offset,
                format!(
                    "run {} of L{level} is numbered below its table {}: only a journaled \
                     merge's interim run is, and the MANIFEST's merge journal ({}) does not \
                     name it: the journal was lost",
                    run.id,
                    newest.id,
                    match journal {
                        Some(j) => format!("interim run {} of L{}", j.interim_run, j.level),
                        None => "none".to_string(),
                    }
                ),
            ));
        }
    }
    Ok(())
}

/// A run's smallest and largest user keys.
fn span(run: &Run) -> Option<(&[u8], &[u8])> {
    let first = run.tables.first()?;
    let last = run.tables.last()?;
    Some((first.smallest_user_key(), last.largest_user_key()))
}
