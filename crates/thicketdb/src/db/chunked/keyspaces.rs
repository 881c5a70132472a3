//! Keyspaces of a chunked store: each its own chunk list (`chunk_space.rs`),
//! created and dropped under the metadata lock with a new `CHUNKS` naming
//! them, so a keyspace is durable once `create_keyspace` returns and gone,
//! files and all, once `drop_keyspace` does (a retired chunk's files go
//! with its last reader; an open sweeps what a crash left).

use std::sync::Arc;

use super::chunk::{Chunk, ChunkLog};
use super::chunk_space::{space_options, ChunkSpace};
use super::open::{filters, ListWriteError};
use super::{ChunkSet, ChunkStore};
use crate::db::keyspace_rules::{DEFAULT_KEYSPACE_NAME, MAX_KEYSPACE_NAME};
use crate::error::{Error, Result};
use crate::options::Options;

impl ChunkStore {
    /// Creates keyspace `name` with `options` (`space::space_options`):
    /// one empty chunk.
    pub fn create_keyspace(&self, name: &str, options: &Options) -> Result<Arc<ChunkSpace>> {
        self.check_open()?;
        if self.read_only {
            return Err(Error::ReadOnly("create_keyspace".into()));
        }
        if name.is_empty() || name.len() > MAX_KEYSPACE_NAME {
            return Err(Error::InvalidArgument(format!(
                "keyspace name {name:?} must be 1 to {MAX_KEYSPACE_NAME} bytes"
            )));
        }
        options.validate()?;
        let options = space_options(&self.options, options)?;
        let mut guard = self.writer.lock();
        let writer = guard
            .as_mut()
            .ok_or_else(|| Error::ReadOnly("create_keyspace".into()))?;
        if self.find_space(name).is_some() {
            return Err(Error::InvalidArgument(format!(
                "keyspace {name:?} already exists"
            )));
        }
        let number = writer.next_file_number;
        writer.next_file_number += 1;
        let id = writer.next_keyspace_id;
        writer.next_keyspace_id += 1;
        let log = ChunkLog::create(self.fs.as_ref(), &self.dir, number, filters(&options))?;
        self.fs.sync_dir(&self.dir)?;
        let chunk = Chunk::new(Vec::new(), None, log, self.tables.clone());
        let space = Arc::new(ChunkSpace::new(
            id,
            name.to_string(),
            options,
            ChunkSet {
                chunks: vec![Arc::new(chunk)],
            },
        ));
        let mut spaces = self.spaces().as_ref().clone();
        spaces.push(space.clone());
        self.publish_spaces(writer, spaces)?;
        Ok(space)
    }

    /// Drops keyspace `name`: gone from `CHUNKS`, its chunks retired.
    pub fn drop_keyspace(&self, name: &str) -> Result<()> {
        self.check_open()?;
        if self.read_only {
            return Err(Error::ReadOnly("drop_keyspace".into()));
        }
        if name == DEFAULT_KEYSPACE_NAME {
            return Err(Error::InvalidArgument(
                "the default keyspace cannot be dropped".into(),
            ));
        }
        // Its logs' writes leave with it: the list that drops it must
        // count them durable, or recovery would find their numbers
        // missing and drop every later write (`durable_prefix.rs`). Every
        // append lock stays held until its chunks are retired, so no
        // write numbered after the sync reaches them.
        let space = self.with_logs_synced(|writer| {
            let writer = writer.ok_or_else(|| Error::ReadOnly("drop_keyspace".into()))?;
            let space = self
                .find_space(name)
                .ok_or_else(|| Error::KeyspaceNotFound(format!("{name:?}")))?;
            let mut spaces = self.spaces().as_ref().clone();
            spaces.retain(|s| !Arc::ptr_eq(s, &space));
            self.publish_spaces(writer, spaces)?;
            for chunk in &space.chunk_set().chunks {
                self.munks.release(chunk);
            }
            space.drop_all();
            Ok(space)
        })?;
        // With the metadata lock free: a build of its chunks under way
        // finds it gone at its switch.
        self.builds.forget(space.id);
        Ok(())
    }

    /// The live keyspace `name`.
    pub fn find_space(&self, name: &str) -> Option<Arc<ChunkSpace>> {
        self.spaces().iter().find(|s| s.name == name).cloned()
    }

    /// The names of every live keyspace, the default one first.
    pub fn keyspace_names(&self) -> Vec<String> {
        self.spaces().iter().map(|s| s.name.clone()).collect()
    }

    /// Writes `CHUNKS` naming `spaces`, then installs them. A failure
    /// before the rename leaves the old keyspaces; one at or after it
    /// fails the store, as the next open may read either list: going on
    /// with the old set would acknowledge writes to a keyspace the disk
    /// may already have dropped.
    /// REQUIRES: the metadata lock (`writer` is its content).
    fn publish_spaces(&self, writer: &super::Writer, spaces: Vec<Arc<ChunkSpace>>) -> Result<()> {
        let previous = std::mem::replace(&mut *self.spaces.write(), Arc::new(spaces));
        match self.write_chunk_list_staged(writer, None) {
            Ok(()) => Ok(()),
            Err(ListWriteError::BeforeRename(e)) => {
                *self.spaces.write() = previous;
                Err(e)
            }
            Err(ListWriteError::AtRename(e)) => {
                self.fail(&e);
                Err(e)
            }
        }
    }
}
