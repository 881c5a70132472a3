//! One shard of the block cache: an open-addressing hash table (linear
//! probing) whose slots hold the blocks themselves, evicted by CLOCK.
//!
//! A hit costs one probe into one array and no reference count: the
//! caller reads the block in place under the shard's read lock. CLOCK
//! needs only a reference bit per entry on a hit, which a read lock can
//! set, where LRU would need to relink a list under a write lock.
//!
//! Each shard also counts, per table, how many of its blocks it holds
//! (LSbM's residency counts): updated on insert and eviction, which run
//! under the shard's write lock anyway, so a hit pays nothing for them.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};

use super::super::block::Block;
use super::{hash, StoreId};

/// Slots are kept at most this full (numerator over 8) so probes stay short.
const MAX_LOAD_EIGHTHS: usize = 5;
const MIN_SLOTS: usize = 16;

/// One cached block, on one cache line: the probe that finds it also
/// loads the handle the reader needs. The key is the store, the segment
/// and the block's own offset.
#[repr(align(64))]
pub(super) struct Entry {
    segment: u64,
    /// A u32, not a u64, keeps the entry on one line.
    store: StoreId,
    referenced: AtomicBool,
    block: Block,
}

impl Entry {
    fn is(&self, store: StoreId, segment: u64, offset: u64) -> bool {
        self.segment == segment && self.store == store && self.block.offset() == offset
    }

    fn hash(&self) -> u64 {
        hash(self.store, self.segment, self.block.offset())
    }
}

/// The slots and byte accounting of one shard.
pub(super) struct ClockTable {
    slots: Box<[Option<Entry>]>,
    len: usize,
    charge: u64,
    /// Bytes of the capacity held for memory outside the table (an open
    /// table's index and filter), which blocks must leave free.
    reserved: u64,
    capacity: u64,
    hand: usize,
    /// Blocks held per table: store and segment, then the table's start
    /// offset in it. A block belongs to the table with the greatest start
    /// at or below its offset (tables of a segment are disjoint extents).
    residency: HashMap<(StoreId, u64), BTreeMap<u64, u32>>,
}

impl ClockTable {
    /// An empty table holding up to `capacity` bytes. Its slots grow with
    /// the blocks it holds, not with its capacity: a half-used cache then
    /// probes a denser array, more of which stays in the CPU caches.
    pub fn new(capacity: u64) -> ClockTable {
        ClockTable {
            slots: (0..MIN_SLOTS).map(|_| None).collect(),
            len: 0,
            charge: 0,
            reserved: 0,
            capacity,
            hand: 0,
            residency: HashMap::new(),
        }
    }

    /// Blocks of the table starting at `table_offset` of `store`'s
    /// `segment` held here.
    pub fn resident_blocks(&self, store: StoreId, segment: u64, table_offset: u64) -> u64 {
        self.residency
            .get(&(store, segment))
            .and_then(|tables| tables.get(&table_offset))
            .map_or(0, |&n| u64::from(n))
    }

    pub fn charge(&self) -> u64 {
        self.charge
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn reserved(&self) -> u64 {
        self.reserved
    }

    /// Holds `bytes` of the capacity for memory outside the table,
    /// evicting blocks until what they and the reservations charge fits.
    pub fn reserve(&mut self, bytes: u64) {
        self.reserved += bytes;
        while self.len > 0 && self.charge + self.reserved > self.capacity {
            self.evict_one();
        }
    }

    /// Gives back bytes [`reserve`](ClockTable::reserve) held.
    pub fn release(&mut self, bytes: u64) {
        debug_assert!(bytes <= self.reserved);
        self.reserved = self.reserved.saturating_sub(bytes);
    }

    /// The cached block at `(store, segment, offset)`, marked as recently
    /// used.
    pub fn get(&self, store: StoreId, segment: u64, offset: u64, hash: u64) -> Option<&Block> {
        let i = self.find(store, segment, offset, hash)?;
        let entry = self.slots[i].as_ref()?;
        // Only write the bit when it changes: a hot block's line then stays
        // shared between the cores reading it.
        if !entry.referenced.load(Ordering::Relaxed) {
            entry.referenced.store(true, Ordering::Relaxed);
        }
        Some(&entry.block)
    }

    /// Caches `block`, a block of the table starting at `table_offset`,
    /// unless it is already cached or larger than what reservations leave
    /// of the shard, evicting unreferenced blocks to make room.
    pub fn insert(
        &mut self,
        store: StoreId,
        segment: u64,
        table_offset: u64,
        hash: u64,
        block: Block,
    ) {
        let charge = block.charge() as u64;
        let room = self.capacity.saturating_sub(self.reserved);
        if charge > room || self.find(store, segment, block.offset(), hash).is_some() {
            return;
        }
        debug_assert!(table_offset <= block.offset());
        while self.charge + charge > room {
            self.evict_one();
        }
        if (self.len + 1) * 8 > self.slots.len() * MAX_LOAD_EIGHTHS {
            self.grow();
        }
        let mut i = self.home(hash);
        while self.slots[i].is_some() {
            i = self.next(i);
        }
        self.slots[i] = Some(Entry {
            segment,
            store,
            // A new block must earn its place: one pass of the hand over
            // it without a hit evicts it.
            referenced: AtomicBool::new(false),
            block,
        });
        self.len += 1;
        self.charge += charge;
        *self
            .residency
            .entry((store, segment))
            .or_default()
            .entry(table_offset)
            .or_insert(0) += 1;
    }

    fn find(&self, store: StoreId, segment: u64, offset: u64, hash: u64) -> Option<usize> {
        let mut i = self.home(hash);
        loop {
            let entry = self.slots[i].as_ref()?;
            if entry.is(store, segment, offset) {
                return Some(i);
            }
            i = self.next(i);
        }
    }

    /// Advances the hand until it evicts one entry: a referenced entry
    /// loses its bit and is passed over once. Only called while entries
    /// are charged, so the hand finds one within two turns.
    fn evict_one(&mut self) {
        loop {
            let i = self.hand;
            match &self.slots[i] {
                None => self.hand = self.next(i),
                Some(entry) if entry.referenced.swap(false, Ordering::Relaxed) => {
                    self.hand = self.next(i);
                }
                Some(_) => {
                    // The hand stays: `remove` may shift an unvisited entry
                    // into this slot.
                    self.remove(i);
                    return;
                }
            }
        }
    }

    /// Empties slot `i`, moving later entries of its probe cluster back so
    /// that every entry stays reachable from its home slot.
    fn remove(&mut self, mut hole: usize) {
        if let Some(entry) = self.slots[hole].take() {
            self.len -= 1;
            self.charge -= entry.block.charge() as u64;
            self.unresident((entry.store, entry.segment), entry.block.offset());
        }
        let mut j = self.next(hole);
        while let Some(entry) = &self.slots[j] {
            let home = self.home(entry.hash());
            // The entry may fill the hole when its home is not in the
            // cyclic range (hole, j].
            let stays = if hole <= j {
                hole < home && home <= j
            } else {
                hole < home || home <= j
            };
            if !stays {
                self.slots[hole] = self.slots[j].take();
                hole = j;
            }
            j = self.next(j);
        }
    }

    /// Counts one block at `offset` of a store's segment out of its table.
    fn unresident(&mut self, segment: (StoreId, u64), offset: u64) {
        let Some(tables) = self.residency.get_mut(&segment) else {
            return;
        };
        if let Some((&start, count)) = tables.range_mut(..=offset).next_back() {
            *count -= 1;
            if *count == 0 {
                tables.remove(&start);
            }
        }
        if tables.is_empty() {
            self.residency.remove(&segment);
        }
    }

    fn grow(&mut self) {
        let doubled = (0..self.slots.len() * 2).map(|_| None).collect();
        let old = std::mem::replace(&mut self.slots, doubled);
        for entry in old.into_vec().into_iter().flatten() {
            let mut i = self.home(entry.hash());
            while self.slots[i].is_some() {
                i = self.next(i);
            }
            self.slots[i] = Some(entry);
        }
        self.hand = 0;
    }

    fn home(&self, hash: u64) -> usize {
        // The shard was picked by the hash's high bits; slots use the low.
        hash as usize & (self.slots.len() - 1)
    }

    fn next(&self, i: usize) -> usize {
        (i + 1) & (self.slots.len() - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_is_one_cache_line() {
        assert_eq!(std::mem::size_of::<Option<Entry>>(), 64);
    }
}
