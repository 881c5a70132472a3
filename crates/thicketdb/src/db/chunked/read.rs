//! The chunked layout's reads: point lookups (row cache, munk or funk and
//! chunk log), snapshots, and iterators over a keyspace's chunks.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::chunk::{Chunk, Found};
use super::chunk_iter::ChunkRunIterator;
use super::chunk_space::ChunkSpace;
use super::chunk_views::{ChunkRangeDels, ChunkViews};
use super::row_cache::Cached;
use super::ChunkStore;
use crate::db::call_options::ReadOptions;
use crate::db::iter::DbIterator;
use crate::db::snapshot::Snapshot;
use crate::error::Result;
use crate::format::internal_key::{InternalKey, ValueKind};
use crate::stats::Counters;
use crate::version::range_del_view::RangeDelView;

impl ChunkStore {
    /// The newest value of `key` in `space` visible to `opts`' snapshot
    /// (or now).
    pub fn get(
        &self,
        space: &ChunkSpace,
        key: &[u8],
        opts: &ReadOptions,
    ) -> Result<Option<Vec<u8>>> {
        self.check_open()?;
        space.check_live()?;
        Counters::add(&self.counters.gets, 1);
        // The chunk set before the sequence: a set a rebalance installed
        // since keeps every version at or above the sequence read after.
        let (set, index, munk, sequence) = loop {
            let set = space.chunk_set();
            if set.chunks.is_empty() {
                // Dropped since the check above.
                space.check_live()?;
            }
            let index = set.locate(key);
            let chunk = &set.chunks[index];
            let munk = chunk.munk();
            let sequence = match &opts.snapshot {
                Some(s) => s.sequence(),
                None => self.last_sequence.load(Ordering::SeqCst),
            };
            // A put to this chunk numbered up to the sequence and still
            // pending: wait for it (only it, `pending.rs`).
            chunk.settle(sequence);
            // Replaced since it was taken: a put this sequence covers may
            // be in the replacement only.
            if !chunk.is_retired() && !munk.as_ref().is_some_and(|m| m.is_sealed()) {
                break (set, index, munk, sequence);
            }
        };
        let chunk = &set.chunks[index];
        if self.munks.touch(chunk, 1, false) && !self.read_only {
            // A get does not wait for writers to build a munk.
            self.admit_munk(chunk, true)?;
        }
        if let Some(munk) = munk {
            Counters::add(&self.counters.chunk_gets_from_munk, 1);
            let lookup = InternalKey::new(key, sequence, ValueKind::SEEK);
            return Ok(match munk.get(lookup.encoded()) {
                Some(crate::memtable::Lookup::Value(v)) => Some(v),
                _ => None,
            });
        }
        let row_key = space.row_key(key);
        if let Cached::Row(value) = self.row_cache.get(&row_key, sequence) {
            Counters::add(&self.counters.chunk_gets_from_row_cache, 1);
            return Ok(value);
        }
        let value = match chunk.get(key, sequence, &self.counters)? {
            Found::Value(v) => Some(v),
            Found::Deleted => None,
            Found::Absent => return Ok(None),
        };
        self.row_cache.insert(&row_key, value.clone(), sequence);
        Ok(value)
    }

    /// A consistent view at the latest write.
    pub fn snapshot(&self) -> Snapshot {
        Snapshot::latest(&self.last_sequence, self.snapshots.clone())
    }

    /// An iterator over the chunks of `space` that `opts`' bounds
    /// overlap, at one snapshot. A chunk is read (and counted as an
    /// access for the munk cache) only when the cursor reaches it
    /// (`chunk_views.rs`).
    pub fn iter(self: &Arc<Self>, space: &ChunkSpace, opts: ReadOptions) -> Result<DbIterator> {
        self.check_open()?;
        space.check_live()?;
        let snapshot = match &opts.snapshot {
            Some(s) => s.clone(),
            None => self.snapshot(),
        };
        // Taken after the snapshot: its chunks hold every version the
        // snapshot sees.
        let set = space.chunk_set();
        let range = set.overlapping_range(opts.lower_bound.as_deref(), opts.upper_bound.as_deref());
        let views = Arc::new(ChunkViews::new(
            set,
            range,
            snapshot.sequence(),
            Arc::downgrade(self),
        ));
        let order = self.options.comparator.clone();
        let cursor = ChunkRunIterator::new(views.clone(), order.clone(), opts.fill_cache);
        let mut range_dels = RangeDelView::of_fragments(snapshot.sequence());
        range_dels.add_parted(0, Box::new(ChunkRangeDels::new(views.clone())));
        Ok(DbIterator::over_sources(
            vec![Box::new(cursor)],
            snapshot,
            opts,
            order,
            Box::new(views),
        )
        .with_range_dels(range_dels))
    }

    /// Counts a scan's access of `chunk` for the munk cache and offers a
    /// hot chunk a munk, without waiting for writers (as a get does).
    pub(super) fn touch_for_scan(&self, chunk: &Arc<Chunk>) -> Result<()> {
        if self.munks.touch(chunk, 1, false) && !self.read_only && !chunk.is_retired() {
            self.admit_munk(chunk, true)?;
        }
        Ok(())
    }
}
