//! Munks: a chunk's image in memory (every version of its funk plus the
//! puts since), serving all its gets and scans; volatile, built from the
//! funk on demand. A munk is the engine's concurrent skiplist (lock-free
//! reads, one writer: the chunk's `append_lock`) or, with `munk_array_list`,
//! the paper's array list with a sorted prefix (`munk_list.rs`): faster
//! for gets and puts, slower for scans, neither faster end to end
//! (`examples/munk_structures.rs`, `docs/benchmarks.md`).
//!
//! The munk cache keeps the hottest chunks' munks within
//! `munk_cache_bytes`: each access adds to its chunk's heat, and every
//! `DECAY_PERIOD` accesses all heats are halved (the paper's LFU with
//! exponential decay, applied lazily: `heat.rs`). A munk-less chunk whose
//! heat reaches a power of two (from `ADMIT_HEAT`) asks for a munk: it gets
//! one if the budget has room, or if the coldest munk's chunk is less than
//! half as hot, which loses its munk. The cache keeps the chunks holding
//! munks, so finding the coldest looks at those only, not at every chunk
//! of the store.
//!
//! A munk replaced (munk rebalance) or dropped (eviction) is sealed first:
//! a reader that took it before reading its sequence number checks the
//! seal afterwards and starts over, so it never misses a put the
//! replacement took (`ChunkStore::get`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};

use parking_lot::Mutex;

use super::chunk::Chunk;
use super::munk_list::{MunkList, MunkListIterator};
use super::ChunkStore;
use crate::error::Result;
use crate::format::internal_key::{ParsedKey, ValueKind};
use crate::format::range_tombstone::Fragments;
use crate::format::KeyOrder;
use crate::iterator::InternalIterator;
use crate::memtable::{Lookup, Memtable, MemtableIterator};
use crate::stats::Counters;

/// Accesses between two halvings of every chunk's heat.
const DECAY_PERIOD: u64 = 1 << 14;
/// The heat from which a chunk may get a munk.
pub(super) const ADMIT_HEAT: u64 = 4;
/// A munk is rebuilt once it grew to this many times its size when built.
const REBALANCE_GROWTH: u64 = 2;
/// Munks smaller than this are not rebuilt.
const REBALANCE_MIN_BYTES: u64 = 64 << 10;

/// The structure holding a munk's entries.
enum Image {
    Skiplist(Arc<Memtable>),
    ArrayList(Arc<MunkList>),
}

/// A chunk's image in memory.
pub(super) struct Munk {
    image: Image,
    /// Set when the munk was replaced or dropped.
    sealed: AtomicBool,
    /// Its size when built.
    built_bytes: u64,
}

impl Munk {
    /// A munk of `entries` (internal key, value), in any order, and
    /// `tombstones`; an array list if `array_list`.
    pub fn build(
        entries: impl IntoIterator<Item = (Vec<u8>, Vec<u8>)>,
        tombstones: &Fragments,
        array_list: bool,
    ) -> Munk {
        let image = if array_list {
            // Sorted (and rid of a version read twice): the list's prefix.
            let mut entries: Vec<(Vec<u8>, Vec<u8>)> = entries
                .into_iter()
                .filter(|(key, _)| ParsedKey::parse(key).is_some())
                .collect();
            entries.sort_by(|a, b| KeyOrder::Bytewise.internal(&a.0, &b.0));
            entries.dedup_by(|a, b| a.0 == b.0);
            Image::ArrayList(Arc::new(MunkList::build_sorted(entries)))
        } else {
            let mem = Memtable::new(0, KeyOrder::Bytewise);
            for (key, value) in entries {
                if let Some(p) = ParsedKey::parse(&key) {
                    mem.add(p.sequence, p.kind, p.user_key, &value);
                }
            }
            Image::Skiplist(Arc::new(mem))
        };
        let munk = Munk {
            image,
            sealed: AtomicBool::new(false),
            built_bytes: 0,
        };
        for t in tombstones.tombstones() {
            munk.add_range_deletion(t.seq, &t.start, &t.end);
        }
        Munk {
            built_bytes: munk.bytes(),
            ..munk
        }
    }

    /// Whether the munk grew enough since it was built to be rebuilt
    /// (munk rebalance, `MunkCache::rebalance_if_grown`).
    pub fn needs_rebalance(&self) -> bool {
        let bytes = self.bytes();
        bytes >= REBALANCE_MIN_BYTES && bytes >= self.built_bytes * REBALANCE_GROWTH
    }

    pub fn is_sealed(&self) -> bool {
        self.sealed.load(Ordering::Acquire)
    }

    fn seal(&self) {
        self.sealed.store(true, Ordering::Release);
    }

    pub fn bytes(&self) -> u64 {
        match &self.image {
            Image::Skiplist(m) => m.approximate_size(),
            Image::ArrayList(l) => l.approximate_size(),
        }
    }

    fn is_array_list(&self) -> bool {
        matches!(self.image, Image::ArrayList(_))
    }

    /// Adds a put or delete at `sequence`.
    pub fn add(&self, sequence: u64, kind: ValueKind, key: &[u8], value: &[u8]) {
        match &self.image {
            Image::Skiplist(m) => m.add(sequence, kind, key, value),
            Image::ArrayList(l) => l.add(sequence, kind, key, value),
        }
    }

    /// Adds a range tombstone `[start, end)` at `sequence`.
    pub fn add_range_deletion(&self, sequence: u64, start: &[u8], end: &[u8]) {
        match &self.image {
            Image::Skiplist(m) => m.add_range_deletion(sequence, start, end),
            Image::ArrayList(l) => l.add_range_deletion(sequence, start, end),
        }
    }

    /// The range tombstones, fragmented.
    pub fn range_deletions(&self) -> Arc<Fragments> {
        match &self.image {
            Image::Skiplist(m) => m.range_deletions(),
            Image::ArrayList(l) => l.range_deletions(),
        }
    }

    /// The newest version of `lookup`'s user key visible at its sequence
    /// number (`Memtable::get`).
    pub fn get(&self, lookup: &[u8]) -> Option<Lookup> {
        match &self.image {
            Image::Skiplist(m) => m.get(lookup),
            Image::ArrayList(l) => l.get(lookup),
        }
    }

    /// An iterator over every entry; it sees later puts.
    pub fn iter(&self) -> Box<dyn InternalIterator> {
        match &self.image {
            Image::Skiplist(m) => Box::new(MemtableIterator::new(m.clone())),
            Image::ArrayList(l) => Box::new(MunkListIterator::new(l.clone())),
        }
    }

    /// Every entry, sorted.
    fn entries(&self) -> Vec<(Vec<u8>, Vec<u8>)> {
        match &self.image {
            Image::ArrayList(l) => l.entries(),
            Image::Skiplist(_) => {
                let mut it = self.iter();
                it.seek_to_first();
                let mut out = Vec::new();
                while it.valid() {
                    out.push((it.key().to_vec(), it.value().to_vec()));
                    it.next();
                }
                out
            }
        }
    }
}

/// A test's hook into a munk rebalance.
#[cfg(test)]
pub(super) type InstallHook = Arc<dyn Fn(&MunkCache, &Chunk) + Send + Sync>;

/// The munk cache's accounting.
pub(super) struct MunkCache {
    budget: u64,
    resident: AtomicU64,
    accesses: AtomicU64,
    /// Decay periods passed (`heat.rs`).
    epoch: AtomicU64,
    /// The chunks holding a munk, by address. A leaf lock but for the
    /// chunks' munk slots: held to find the coldest (reading their munk
    /// and heat), and while a munk is set or dropped, so that the record
    /// and the slots agree.
    holders: Mutex<HashMap<usize, Weak<Chunk>>>,
    /// Run by a munk rebalance between its rebuild and its install (a
    /// test evicts the munk there).
    #[cfg(test)]
    pub before_install: Mutex<Option<InstallHook>>,
}

impl MunkCache {
    pub fn new(budget: u64) -> MunkCache {
        MunkCache {
            budget,
            resident: AtomicU64::new(0),
            accesses: AtomicU64::new(0),
            epoch: AtomicU64::new(0),
            holders: Mutex::new(HashMap::new()),
            #[cfg(test)]
            before_install: Mutex::new(None),
        }
    }

    pub fn resident_bytes(&self) -> u64 {
        self.resident.load(Ordering::Relaxed)
    }

    /// Counts an access of `chunk` (a write if `write`); returns whether
    /// the chunk should be offered a munk. Counted without munks too: the
    /// log limit adapts to the writes' share (`write_share`).
    pub fn touch(&self, chunk: &Chunk, weight: u64, write: bool) -> bool {
        if self.accesses.fetch_add(1, Ordering::Relaxed) % DECAY_PERIOD == DECAY_PERIOD - 1 {
            self.epoch.fetch_add(1, Ordering::Relaxed);
        }
        let epoch = self.epoch();
        let heat = chunk.heat.add(weight, epoch);
        if write {
            chunk.write_heat.add(weight, epoch);
        }
        self.budget > 0 && heat >= ADMIT_HEAT && heat.is_power_of_two() && chunk.munk().is_none()
    }

    /// The share of `chunk`'s recent accesses that were writes (1 for a
    /// chunk not accessed of late: its limit stays the configured one).
    pub fn write_share(&self, chunk: &Chunk) -> f64 {
        let epoch = self.epoch();
        match chunk.heat.get(epoch) {
            0 => 1.0,
            heat => chunk.write_heat.get(epoch) as f64 / heat as f64,
        }
    }

    fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::Relaxed)
    }

    /// Gives `chunk` (of the current set of its keyspace) a munk if the
    /// budget has room for it to grow to its rebuild size
    /// (`REBALANCE_GROWTH` times its image), evicting colder munks (of any
    /// keyspace) if need be. Admitted with room for its image only, a munk
    /// grown by puts pushed the cache past its budget, whose coldest munk
    /// went, making room that the next chunk asking took: under puts, a
    /// load and an eviction for every munk's worth of puts
    /// (`docs/reproduction.md`, *YoDB put path, session 24*).
    /// REQUIRES: the chunk's `append_lock` (the munk misses no put).
    pub fn admit(&self, store: &ChunkStore, chunk: &Arc<Chunk>) -> Result<()> {
        if chunk.munk().is_some() {
            return Ok(());
        }
        let estimate = chunk.table_length() + chunk.log.len();
        let needed = estimate.saturating_mul(REBALANCE_GROWTH);
        let heat = chunk.heat.get(self.epoch());
        while self.resident_bytes() + needed > self.budget {
            match self.coldest() {
                Some((victim, victim_heat)) if victim_heat * 2 < heat => {
                    self.evict(&victim);
                    Counters::add(&store.counters.chunk_munk_evictions, 1);
                }
                _ => return Ok(()),
            }
        }
        let live = store.snapshots.oldest(&store.last_sequence);
        let (entries, tombstones) = chunk.contents(live)?;
        let munk = Munk::build(entries, &tombstones, store.options.munk_array_list);
        let mut holders = self.holders.lock();
        self.resident.fetch_add(munk.bytes(), Ordering::Relaxed);
        chunk.set_munk(Some(Arc::new(munk)));
        holders.insert(holder_key(chunk), Arc::downgrade(chunk));
        drop(holders);
        Counters::add(&store.counters.chunk_munk_loads, 1);
        Ok(())
    }

    /// Drops the coldest munks while the resident ones exceed the budget
    /// (puts grow munks after their admission). Rebuilding the most grown
    /// munk first (dropping replaced versions) cut the loads and
    /// evictions but halved the puts, the rebuilds running in writers
    /// (`docs/reproduction.md`, *YoDB, session 17 rounds*).
    pub fn enforce_budget(&self, store: &ChunkStore) {
        while self.resident_bytes() > self.budget {
            match self.coldest() {
                Some((victim, _)) => {
                    self.evict(&victim);
                    Counters::add(&store.counters.chunk_munk_evictions, 1);
                }
                None => return,
            }
        }
    }

    /// Drops `chunk`'s munk. Under the holders' lock, as every install:
    /// a munk rebalance (which holds the chunk's `append_lock`, not an
    /// eviction) then sees whether its munk went while it rebuilt it.
    fn evict(&self, chunk: &Chunk) {
        let mut holders = self.holders.lock();
        if let Some(old) = chunk.set_munk(None) {
            old.seal();
            self.resident.fetch_sub(old.bytes(), Ordering::Relaxed);
        }
        holders.remove(&holder_key(chunk));
    }

    /// The addresses of the live chunks the cache counts as holding a
    /// munk.
    #[cfg(test)]
    pub fn holders(&self) -> std::collections::BTreeSet<usize> {
        let holders = self.holders.lock();
        holders
            .iter()
            .filter(|(_, chunk)| chunk.strong_count() > 0)
            .map(|(key, _)| *key)
            .collect()
    }

    /// The chunk holding a munk whose heat is lowest, and its heat.
    fn coldest(&self) -> Option<(Arc<Chunk>, u64)> {
        let epoch = self.epoch();
        let mut holders = self.holders.lock();
        // A chunk dropped without an eviction (its keyspace's, say) leaves
        // a dead entry behind.
        holders.retain(|_, chunk| chunk.strong_count() > 0);
        holders
            .values()
            .filter_map(Weak::upgrade)
            .filter(|c| c.munk().is_some())
            .map(|c| {
                let heat = c.heat.get(epoch);
                (c, heat)
            })
            .min_by_key(|(_, heat)| *heat)
    }

    /// Counts the munks a funk rebalance built for `children` (from the
    /// munk of `old`, which goes) at its switch, not while it built
    /// them: counted during the build, both images made the cache evict
    /// another chunk's munk for a moment's overlap, and load one again
    /// once the old munk went.
    pub fn hand_down(&self, old: &Chunk, children: &[Arc<Chunk>]) {
        let mut bytes = 0;
        let mut holders = self.holders.lock();
        for child in children {
            if let Some(munk) = child.munk() {
                bytes += munk.bytes();
                holders.insert(holder_key(child), Arc::downgrade(child));
            }
        }
        drop(holders);
        self.resident.fetch_add(bytes, Ordering::Relaxed);
        self.evict(old);
    }

    /// Drops the munk of a chunk being retired.
    pub fn release(&self, chunk: &Chunk) {
        self.evict(chunk);
    }

    /// Accounts for bytes a put added to a munk.
    pub fn grew(&self, bytes: u64) {
        self.resident.fetch_add(bytes, Ordering::Relaxed);
    }

    /// Rebuilds the munk of `chunk` without the versions no snapshot
    /// needs once it doubled since it was built (munk rebalance).
    /// REQUIRES: the chunk's `append_lock` (the munk misses no put).
    pub fn rebalance_if_grown(&self, store: &ChunkStore, chunk: &Chunk) {
        let Some(munk) = chunk.munk() else {
            return;
        };
        if !munk.needs_rebalance() {
            return;
        }
        let oldest = store.snapshots.oldest(&store.last_sequence);
        let tombstones = munk.range_deletions();
        let kept = super::rebalance::drop_unneeded(munk.entries(), oldest, &tombstones);
        let tombstones = super::rebalance::needed_tombstones((*tombstones).clone(), oldest);
        let fresh = Munk::build(kept, &tombstones, munk.is_array_list());
        #[cfg(test)]
        {
            let hook = self.before_install.lock().clone();
            if let Some(hook) = hook {
                hook(self, chunk);
            }
        }
        let holders = self.holders.lock();
        // An eviction (another chunk's admission or a writer keeping the
        // budget) may have dropped the munk meanwhile: installed anyway,
        // the fresh one was a munk the cache does not record, never
        // evicted, its bytes counted for good.
        if !chunk.munk().is_some_and(|m| Arc::ptr_eq(&m, &munk)) {
            return;
        }
        self.resident.fetch_add(fresh.bytes(), Ordering::Relaxed);
        if let Some(old) = chunk.set_munk(Some(Arc::new(fresh))) {
            old.seal();
            self.resident.fetch_sub(old.bytes(), Ordering::Relaxed);
        }
        drop(holders);
        Counters::add(&store.counters.chunk_munk_rebalances, 1);
    }
}

/// A chunk's key among the munk holders: its address, unique while it
/// lives (an entry outliving its chunk is dropped by `coldest`).
fn holder_key(chunk: &Chunk) -> usize {
    std::ptr::from_ref(chunk) as usize
}
