//! `Db::checkpoint` of a chunked store: a consistent, openable copy at one
//! point of the write order.
//!
//! The point: under every chunk's `append_lock` (no batch is half-way
//! into the chunk logs, and no put is pending: `pending.rs`), and
//! under the metadata lock (no chunk is replaced), the chunk set is
//! pinned, the last published sequence read and every chunk log's length
//! of complete records measured (each append reaches the OS before the
//! lock is released). The copy holds exactly the writes up to that
//! sequence: every batch is whole in every chunk log, so the copy's batch
//! log starts empty.
//!
//! Then, without the lock: each funk table (immutable) is hard-linked, or
//! copied where linking fails; each chunk log is copied up to its measured
//! length (the pinned set keeps a chunk a rebalance retires meanwhile, and
//! so its files, alive); `CHUNKS` is written for the copy, `OPTIONS`
//! copied. The copy is built in `DIR.checkpoint-tmp`, synced, and renamed
//! to `DIR` (`db/checkpoint_steps.rs` shares these steps with the LSM's).

use std::path::Path;
use std::sync::atomic::Ordering;

use super::batch_log::BatchLog;
use super::files::{chunk_log_path, funk_table_path};
use super::manifest::{ChunkList, ChunkRecord, KeyspaceRecord};
use super::open::write_list;
use super::ChunkStore;
use crate::db::checkpoint_steps::CheckpointReport;
use crate::db::checkpoint_steps::{building_dir, copy_prefix, finish, link_or_copy};
use crate::error::{Error, Result};

impl ChunkStore {
    /// Writes a consistent copy of the store into the new directory `dir`.
    pub fn checkpoint(&self, dir: &Path) -> Result<CheckpointReport> {
        self.check_open()?;
        if self.read_only {
            return Err(Error::ReadOnly("checkpoint".into()));
        }
        let fs = self.fs.as_ref();
        let building = building_dir(fs, dir)?;
        let (chunks, mut list, log_lens) = loop {
            // Pinned: a chunk retired meanwhile keeps its files.
            let chunks = self.every_chunk();
            // Every append lock (in chunk order, before the metadata
            // lock: the writers' order): no batch is half-way in the
            // logs, so their prefixes hold whole batches only.
            let _appending: Vec<_> = chunks.iter().map(|c| c.append_lock.lock()).collect();
            // No put is pending (it withdraws before it releases its
            // append locks): the point holds every batch numbered up to it.
            let guard = self.writer.lock();
            let writer = guard
                .as_ref()
                .ok_or_else(|| Error::ReadOnly("checkpoint".into()))?;
            // Chunks are replaced under the metadata lock: none retired
            // and none added means the list names exactly these.
            if chunks.iter().any(|c| c.is_retired()) || self.every_chunk().len() != chunks.len() {
                continue;
            }
            let mut list = self.chunk_list(writer, None);
            // The copy holds every write up to its point in its logs, each
            // synced as it is copied (`copy_prefix`).
            list.durable_sequence = Some(list.last_sequence);
            // Flushed: the copy reads the files.
            let lens = chunks
                .iter()
                .map(|c| c.log.flush())
                .collect::<Result<Vec<u64>>>()?;
            break (chunks.clone(), list, lens);
        };
        // A fresh, empty batch log: every batch is whole in the logs.
        list.batch_log_number = list.next_file_number;
        list.next_file_number += 1;
        let mut report = CheckpointReport {
            last_sequence: list.last_sequence,
            ..CheckpointReport::default()
        };
        for (chunk, len) in chunks.iter().zip(log_lens) {
            if let Some(table) = chunk.table {
                let (from, to) = (
                    funk_table_path(&self.dir, table.number),
                    funk_table_path(&building, table.number),
                );
                match link_or_copy(fs, &from, &to)? {
                    true => report.segments_linked += 1,
                    false => report.segments_copied += 1,
                }
            }
            let from = chunk_log_path(&self.dir, chunk.log.number);
            let to = chunk_log_path(&building, chunk.log.number);
            copy_prefix(fs, fs.open_sequential(&from)?, len, &to)?;
            report.logs += 1;
        }
        drop(chunks);
        BatchLog::create(fs, &building, list.batch_log_number)?;
        // The copied logs may hold records of an old incarnation that
        // recovery ignores: the copy ignores them too. (No `CHECKPOINT`:
        // the copy holds every write up to its point.)
        if let Some(table) = super::incarnations::Incarnations::read(fs, &self.dir)? {
            table.write(fs, &building)?;
        }
        write_list(fs, &building, &list)?;
        finish(fs, &self.dir, &building, dir)?;
        Ok(report)
    }

    /// The chunk list naming every keyspace's current set, or
    /// `replaced`'s set for its keyspace (id).
    /// REQUIRES: the metadata lock (`writer` is its content).
    pub(super) fn chunk_list(
        &self,
        writer: &super::Writer,
        replaced: Option<(u32, &super::ChunkSet)>,
    ) -> ChunkList {
        let keyspaces = self
            .spaces()
            .iter()
            .map(|space| {
                let current;
                let set = match replaced {
                    Some((id, set)) if id == space.id => set,
                    _ => {
                        current = space.chunk_set();
                        &current
                    }
                };
                KeyspaceRecord {
                    id: space.id,
                    name: space.name.clone(),
                    options: match space.id {
                        0 => Vec::new(),
                        _ => space.options.encode().into_bytes(),
                    },
                    chunks: set
                        .chunks
                        .iter()
                        .map(|c| ChunkRecord {
                            start: c.start.clone(),
                            table_number: c.table_number(),
                            log_number: c.log.number,
                        })
                        .collect(),
                }
            })
            .collect();
        ChunkList {
            last_sequence: self.last_sequence.load(Ordering::Acquire),
            durable_sequence: Some(self.durable_sequence.load(Ordering::Acquire)),
            next_file_number: writer.next_file_number,
            batch_log_number: writer.batch_log.number,
            next_keyspace_id: writer.next_keyspace_id,
            keyspaces,
            counters: self.counters.snapshot(),
        }
    }
}
