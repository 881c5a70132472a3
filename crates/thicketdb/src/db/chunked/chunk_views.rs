//! What one scan reads of each chunk it reaches: the chunk's munk, or its
//! funk (log and table), with their range tombstones. Taken the first time
//! the scan reaches the chunk, not when the scan starts, so that a scan of
//! a few entries costs the chunks it reads, not every chunk from its start
//! to the end of the key space. Taken once and kept: the scan's iterator
//! and its range-tombstone view must agree on the view of a chunk (a munk
//! rebalance may replace the munk, and may drop a tombstone with what it
//! covered; reading the data of one munk and the tombstones of another
//! could resurrect a deleted key).
//!
//! Taking a view later than the snapshot is safe: every version the
//! snapshot sees was in the chunk (its munk and its funk) when the chunk
//! set was taken, a chunk a rebalance replaces keeps its munk and files
//! while a scan holds it, and a munk rebalance keeps the versions a
//! registered snapshot needs (`rebalance.rs`).

use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Arc, Weak};

use parking_lot::Mutex;

use super::chunk::Chunk;
use super::munk::Munk;
use super::{ChunkSet, ChunkStore};
use crate::error::Result;
use crate::format::range_tombstone::Fragments;
use crate::version::range_del_view::PartedRangeDels;

/// One chunk as a scan reads it.
pub(super) struct ChunkView {
    /// The chunk's munk when the view was taken; without one, its funk.
    pub munk: Option<Arc<Munk>>,
    /// The range tombstones of what the view reads (the munk's; or the
    /// log's, then the table's).
    pub range_dels: Vec<Arc<Fragments>>,
}

/// The chunks of one scan, in key order, and the view of each taken so
/// far. Starting a scan costs the same however many chunks the store has:
/// it holds the keyspace's chunk set (immutable) and the bounds of its
/// range in it, and a view is kept only for a chunk the scan reached.
pub(super) struct ChunkViews {
    set: Arc<ChunkSet>,
    /// The scan's chunks are `set.chunks[range]`.
    range: Range<usize>,
    /// By index in the scan's chunks.
    views: Mutex<HashMap<usize, Arc<ChunkView>>>,
    /// The scan's snapshot: a view is taken once the chunk's puts
    /// numbered up to it are complete (`pending.rs`).
    sequence: u64,
    /// Counts a reached chunk's access for the munk cache (a hot chunk is
    /// offered a munk); gone once the store is.
    store: Weak<ChunkStore>,
}

impl ChunkViews {
    pub fn new(
        set: Arc<ChunkSet>,
        range: Range<usize>,
        sequence: u64,
        store: Weak<ChunkStore>,
    ) -> ChunkViews {
        ChunkViews {
            set,
            range,
            views: Mutex::new(HashMap::new()),
            sequence,
            store,
        }
    }

    fn chunks(&self) -> &[Arc<Chunk>] {
        &self.set.chunks[self.range.clone()]
    }

    pub fn len(&self) -> usize {
        self.range.len()
    }

    pub fn chunk(&self, index: usize) -> &Arc<Chunk> {
        &self.chunks()[index]
    }

    /// The index of the chunk holding `key` (the first chunk for a key
    /// before them all).
    pub fn locate(&self, key: &[u8]) -> usize {
        self.chunks()
            .partition_point(|c| c.start.as_slice() <= key)
            .saturating_sub(1)
    }

    /// Whether chunk `index` holds `key`.
    pub fn holds(&self, index: usize, key: &[u8]) -> bool {
        let chunks = self.chunks();
        let after_start = index == 0 || chunks[index].start.as_slice() <= key;
        let before_next = chunks
            .get(index + 1)
            .is_none_or(|next| key < next.start.as_slice());
        after_start && before_next
    }

    /// The view of chunk `index`, taken now if this is the first time.
    /// One scan's cursor and range-tombstone reader ask in turn, never
    /// at once, so one lock for all its views costs nothing.
    pub fn view(&self, index: usize) -> Result<Arc<ChunkView>> {
        let mut views = self.views.lock();
        if let Some(view) = views.get(&index) {
            return Ok(view.clone());
        }
        let chunk = &self.chunks()[index];
        if let Some(store) = self.store.upgrade() {
            store.touch_for_scan(chunk)?;
        }
        // The scan waits for the pending puts in its range only, as it
        // reaches their chunks (YoDB Algorithm 1, line 27).
        chunk.settle(self.sequence);
        let munk = chunk.munk();
        let mut range_dels = match &munk {
            Some(munk) => vec![munk.range_deletions()],
            None => {
                let mut lists = vec![chunk.log.range_deletions()?];
                if let Some(table) = chunk.table_range_deletions()? {
                    lists.push(table);
                }
                lists
            }
        };
        // A scan asks about every entry: a chunk without tombstones
        // answers with nothing to look through.
        range_dels.retain(|list| !list.is_empty());
        let view = Arc::new(ChunkView { munk, range_dels });
        views.insert(index, view.clone());
        Ok(view)
    }
}

/// The range tombstones of a scan's chunks, read chunk by chunk as the
/// scan asks about keys (the chunk last asked about is kept).
pub(super) struct ChunkRangeDels {
    views: Arc<ChunkViews>,
    current: Option<(usize, Arc<ChunkView>)>,
}

impl ChunkRangeDels {
    pub fn new(views: Arc<ChunkViews>) -> ChunkRangeDels {
        ChunkRangeDels {
            views,
            current: None,
        }
    }
}

impl PartedRangeDels for ChunkRangeDels {
    fn fragments_at(&mut self, key: &[u8]) -> Result<&[Arc<Fragments>]> {
        if self.views.len() == 0 {
            return Ok(&[]);
        }
        let cached = matches!(&self.current, Some((i, _)) if self.views.holds(*i, key));
        if !cached {
            let index = self.views.locate(key);
            self.current = Some((index, self.views.view(index)?));
        }
        Ok(self
            .current
            .as_ref()
            .map_or(&[][..], |(_, view)| &view.range_dels[..]))
    }
}
