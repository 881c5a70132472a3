//! Writes sorted streams of entries as tables of about `target_table_size`.
//!
//! With `compaction_file` (BoLT's compaction file) every table of a task
//! goes into one segment made durable by a single `fdatasync`; without it
//! each table gets a segment of its own, synced when the table is done, as
//! stock LevelDB writes one file per SSTable. LSbM's super-files put a
//! fixed number of consecutive tables in each segment
//! (`Options::segment_tables`). A table is only cut between
//! user keys, so every version of a key lives in one table and the tables of
//! a run never overlap.
//!
//! A stream's range tombstones are fragmented per table: a table ending at
//! user key `k` while the stream goes on takes the fragments below
//! `successor(k)`, and the next table starts there, so the tables' ranges
//! stay disjoint and still cover every tombstone, gaps between tables
//! included; the stream's last table takes the rest (Pebble cuts its
//! keyspan fragments at output boundaries the same way).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::grandparents::GrandparentCut;
use crate::error::{Error, Result};
use crate::format::internal_key::user_key;
use crate::format::range_tombstone::{successor, Fragments};
use crate::io::segment::SegmentWriter;
use crate::io::FileSystem;
use crate::iterator::InternalIterator;
use crate::table::{TableBuilder, TableOptions, TableSummary};
use crate::version::files::segment_path;
use crate::version::{Sketch, TableMeta};

/// Where and how to write.
pub struct OutputSpec<'a> {
    pub fs: &'a dyn FileSystem,
    pub dir: &'a Path,
    pub table_options: TableOptions,
    pub target_table_size: u64,
    /// Tables per segment: 1 (one segment each), a super-file's count, or
    /// `usize::MAX` (all tables of the task in one segment).
    pub segment_tables: usize,
    /// Allocates segment and table numbers.
    pub new_file_number: &'a dyn Fn() -> u64,
    /// Segments bypass the page cache
    /// (`use_direct_io_for_flush_and_compaction`).
    pub direct_writes: bool,
    /// Once set (the store is closing), the task stops with
    /// `Error::Closed` and its unreferenced output is removed, as LevelDB
    /// and RocksDB abandon a compaction on close; `None` for work that must
    /// finish (flushes, repair).
    pub stop: Option<&'a AtomicBool>,
}

/// Entries between two looks at `OutputSpec::stop`.
const STOP_CHECK_INTERVAL: u32 = 1024;

/// The tables written, the synced segments' bytes and the `fdatasync`s.
#[derive(Debug, Default)]
pub struct Output {
    pub tables: Vec<Arc<TableMeta>>,
    pub bytes: u64,
    pub syncs: u64,
}

/// Collects the output of one flush or compaction task.
pub struct OutputSink<'a> {
    spec: OutputSpec<'a>,
    open: Option<(u64, PathBuf, SegmentWriter)>,
    /// Tables completed in the open segment.
    open_tables: usize,
    /// The open segment holds tables a checkpoint made visible: it must
    /// survive even if the task fails later.
    open_is_referenced: bool,
    output: Output,
    /// Ends a table early when it overlaps too much below (leveled).
    cut: GrandparentCut,
    /// The current stream's range tombstones not yet given to a table,
    /// and where the next table's share of them starts.
    range_dels: Fragments,
    range_lower: Option<Vec<u8>>,
    /// Entries to add before the next look at `OutputSpec::stop` (counted
    /// across streams: a task may merge many small groups).
    until_stop_check: u32,
}

impl<'a> OutputSink<'a> {
    pub fn new(spec: OutputSpec<'a>) -> OutputSink<'a> {
        OutputSink {
            spec,
            open: None,
            open_tables: 0,
            open_is_referenced: false,
            output: Output::default(),
            cut: GrandparentCut::none(),
            range_dels: Fragments::default(),
            range_lower: None,
            until_stop_check: STOP_CHECK_INTERVAL,
        }
    }

    /// The range tombstones of the stream added next, from `lower` on
    /// (`None`: all of them; a resumed merge passes the successor of the
    /// key it resumes after). They go into its tables even when the
    /// stream has no entry.
    pub fn set_range_deletions(&mut self, fragments: Fragments, lower: Option<Vec<u8>>) {
        self.range_dels = fragments;
        self.range_lower = lower;
    }

    /// Whether the current stream's range tombstones are not all in
    /// tables yet.
    pub fn has_pending_range_deletions(&self) -> bool {
        !self.range_dels.is_empty()
    }

    /// Also ends tables where `cut` says (LevelDB's grandparent overlap).
    pub fn with_cut(self, cut: GrandparentCut) -> OutputSink<'a> {
        OutputSink { cut, ..self }
    }

    /// Drains `source` from its current position, keeping the entries
    /// `keep` accepts. On error the partly written segment is removed.
    pub fn add_stream(
        &mut self,
        source: &mut dyn InternalIterator,
        keep: &mut dyn FnMut(&[u8]) -> bool,
    ) -> Result<()> {
        self.add_stream_until(source, keep, usize::MAX).map(|_| ())
    }

    /// Like `add_stream`, but returns once `max_tables` tables are complete
    /// (the source then sits on the first entry of the next table).
    /// Returns the number of tables completed.
    pub fn add_stream_until(
        &mut self,
        source: &mut dyn InternalIterator,
        keep: &mut dyn FnMut(&[u8]) -> bool,
        max_tables: usize,
    ) -> Result<usize> {
        let result = self.fill(source, keep, max_tables);
        if result.is_err() {
            self.abandon();
        }
        result
    }

    /// Tables written so far.
    pub fn tables(&self) -> &[Arc<TableMeta>] {
        &self.output.tables
    }

    /// Makes every table written so far durable, directory entries
    /// included, so a MANIFEST edit may name them (a merge checkpoint).
    pub fn checkpoint(&mut self) -> Result<()> {
        let result = self
            .sync_open()
            .and_then(|()| self.spec.fs.sync_dir(self.spec.dir));
        match result {
            Ok(()) => {
                self.output.syncs += 1;
                self.open_is_referenced = self.open.is_some();
            }
            Err(_) => self.abandon(),
        }
        result
    }

    fn sync_open(&mut self) -> Result<()> {
        if let Some((_, _, writer)) = self.open.as_mut() {
            if !writer.is_empty() {
                writer.sync()?;
                self.output.syncs += 1;
            }
        }
        Ok(())
    }

    fn fill(
        &mut self,
        source: &mut dyn InternalIterator,
        keep: &mut dyn FnMut(&[u8]) -> bool,
        max_tables: usize,
    ) -> Result<usize> {
        let mut last_user_key = Vec::new();
        let mut completed = 0;
        let stop = self.spec.stop;
        let stopped = || stop.is_some_and(|s| s.load(Ordering::Relaxed));
        if stopped() {
            return Err(Error::Closed);
        }
        while (source.valid() || !self.range_dels.is_empty()) && completed < max_tables {
            self.open_segment()?;
            let (number, _, segment) = self.open.as_mut().expect("segment is open");
            let segment_number = *number;
            let mut builder = TableBuilder::new(&self.spec.table_options, segment.file());
            while source.valid() {
                let key = source.key();
                if builder.entries() > 0
                    && user_key(key) != last_user_key.as_slice()
                    && (builder.estimated_size() >= self.spec.target_table_size
                        || self.cut.should_stop_before(key))
                {
                    break;
                }
                self.until_stop_check -= 1;
                if self.until_stop_check == 0 {
                    self.until_stop_check = STOP_CHECK_INTERVAL;
                    if stopped() {
                        return Err(Error::Closed);
                    }
                }
                if keep(key) {
                    builder.add(key, source.value())?;
                    last_user_key.clear();
                    last_user_key.extend_from_slice(user_key(key));
                }
                source.next();
            }
            source.status()?;
            let share = table_share(
                &mut self.range_dels,
                &mut self.range_lower,
                &last_user_key,
                source.valid(),
            );
            builder.set_range_deletions(share)?;
            if builder.has_contents() {
                let summary = builder.finish()?;
                let id = (self.spec.new_file_number)();
                self.output
                    .tables
                    .push(Arc::new(meta(segment_number, id, summary)));
                completed += 1;
                self.open_tables += 1;
                if self.open_tables >= self.spec.segment_tables {
                    self.close_segment()?;
                }
            }
        }
        source.status().map(|()| completed)
    }

    /// Creates the segment tables are appended to, unless one is open.
    fn open_segment(&mut self) -> Result<()> {
        if self.open.is_none() {
            let number = (self.spec.new_file_number)();
            let path = segment_path(self.spec.dir, number);
            let writer = SegmentWriter::create(self.spec.fs, &path, self.spec.direct_writes)?;
            self.open = Some((number, path, writer));
        }
        Ok(())
    }

    /// Syncs the open segment, or deletes it when it holds no table.
    fn close_segment(&mut self) -> Result<()> {
        let Some((_, path, writer)) = self.open.take() else {
            return Ok(());
        };
        self.open_tables = 0;
        self.open_is_referenced = false;
        if writer.is_empty() {
            drop(writer);
            // Unreferenced; the next open's sweep would remove it anyway.
            let _ = self.spec.fs.remove(&path);
            return Ok(());
        }
        self.output.bytes += writer.finish()?;
        self.output.syncs += 1;
        Ok(())
    }

    /// Drops the open segment after a failure; deletes it unless a
    /// checkpoint already made some of its tables part of the store (the
    /// bytes after them are then unreferenced and released on the next open).
    fn abandon(&mut self) {
        self.open_tables = 0;
        if let Some((_, path, writer)) = self.open.take() {
            drop(writer);
            if !self.open_is_referenced {
                let _ = self.spec.fs.remove(&path);
            }
        }
    }

    /// Makes every segment durable, and their directory entries too: the
    /// MANIFEST edit that follows must not name a file that could vanish.
    pub fn finish(mut self) -> Result<Output> {
        if let Err(e) = self.close_segment() {
            self.abandon();
            return Err(e);
        }
        if !self.output.tables.is_empty() {
            self.spec.fs.sync_dir(self.spec.dir)?;
            self.output.syncs += 1;
        }
        Ok(std::mem::take(&mut self.output))
    }
}

/// A table's share of its stream's tombstones (`pending`, from `lower`
/// on): up to the successor of its last user key while the stream goes on
/// (`more`; the next share starts there), else all the rest.
fn table_share(
    pending: &mut Fragments,
    lower: &mut Option<Vec<u8>>,
    last_user_key: &[u8],
    more: bool,
) -> Fragments {
    if pending.is_empty() {
        return Fragments::default();
    }
    let from = lower.take();
    if more {
        let upper = successor(last_user_key);
        let share = pending.clip(from.as_deref(), Some(&upper));
        *lower = Some(upper);
        share
    } else {
        std::mem::take(pending).clip(from.as_deref(), None)
    }
}

/// The metadata a finished table is recorded with, from its builder's summary.
pub(crate) fn meta(segment: u64, id: u64, s: TableSummary) -> TableMeta {
    TableMeta {
        id,
        segment,
        offset: s.offset,
        length: s.length,
        smallest: s.properties.smallest_key,
        largest: s.properties.largest_key,
        entries: s.properties.entries,
        min_seq: s.properties.min_seq,
        max_seq: s.properties.max_seq,
        sketch: Sketch::of(&s.properties.hll),
        logs: s.properties.log_refs,
    }
}
