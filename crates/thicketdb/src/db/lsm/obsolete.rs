//! Deleting what the store no longer needs: dead tables punched out of live
//! segments, dead segments and logs removed.

use super::DbInner;
use crate::io::BackingKind;
use crate::stats::Counters;
use crate::version::files::{log_path, segment_path};

/// Releases what no version, reader or memtable references any more (see
/// `io::backing`): punches dead tables out of live segments, deletes
/// segments and logs nothing needs.
/// REQUIRES: none of `DbInner`'s mutexes held (it does file I/O).
pub(crate) fn collect_obsolete_files(inner: &DbInner) {
    let released = inner.backings.take_released();
    for extent in &released.extents {
        inner.table_cache.evict_table(extent.id);
        if released.files.contains(&extent.backing) {
            continue; // the whole file goes below
        }
        if let Ok(file) = inner.table_cache.segment_file(extent.backing.number) {
            if let Ok(true) = file.punch_hole(extent.offset, extent.length) {
                Counters::add(&inner.counters.holes_punched, 1);
            }
        }
    }
    for backing in released.files {
        // Failing to delete only leaves garbage for the next open's sweep.
        match backing.kind {
            BackingKind::Segment => {
                inner.table_cache.evict_segment(backing.number);
                let path = segment_path(&inner.dir, backing.number);
                if inner.fs.exists(&path) && inner.fs.remove(&path).is_ok() {
                    Counters::add(&inner.counters.segments_deleted, 1);
                }
            }
            BackingKind::Log => {
                inner.table_cache.logs().evict_log(backing.number);
                let _ = inner.fs.remove(&log_path(&inner.dir, backing.number));
            }
        }
    }
}
