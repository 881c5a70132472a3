//! An open table: footer, index, filter and properties held in memory, data
//! blocks read on demand through the block cache.

use std::cell::Cell;
use std::cmp::Ordering;
use std::mem;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use super::readahead::Readahead;
use super::block::Block;
use super::block_handle::BlockHandle;
use super::block_io::TableFile;
use super::block_iter::BlockIter;
use super::cache::{BlockCache, CacheReservation};
use super::context::{TableContext, ValueLog};
use super::filter::{self, TableFilter};
use super::footer::{Footer, FOOTER_LEN, LOG_TABLE_FORMAT_VERSION};
use super::index::BlockIndex;
use super::properties::TableProperties;
use super::table_iter::TableIterator;
use crate::error::{Error, Result};
use crate::format::internal_key::{user_key, ParsedKey, ValueKind};
use crate::format::range_tombstone::Fragments;
use crate::format::KeyOrder;
use crate::io::RandomAccessFile;
use crate::iterator::InternalIterator;

thread_local! {
    /// Key buffer for point lookups, so a cached lookup does not allocate.
    static LOOKUP_KEY: Cell<Vec<u8>> = const { Cell::new(Vec::new()) };
    /// Value buffer for point lookups in log tables.
    static LOG_VALUE: Cell<Vec<u8>> = const { Cell::new(Vec::new()) };
}

pub struct Table {
    file: Arc<dyn RandomAccessFile>,
    path: Arc<PathBuf>,
    segment_id: u64,
    offset: u64,
    length: u64,
    cache: Option<Arc<BlockCache>>,
    footer: Footer,
    index: BlockIndex,
    filter: Option<TableFilter>,
    properties: TableProperties,
    /// The range-deletion block, decoded at open (empty without one).
    range_dels: Arc<Fragments>,
    order: KeyOrder,
    /// Where a log table's values are read; `None` for a regular table.
    value_log: Option<Arc<dyn ValueLog>>,
    /// The block cache capacity held for the metadata above while the
    /// table is open (`charge_table_metadata`).
    metadata_charge: Option<CacheReservation>,
    /// The last `cached_block_ratio` and when it was counted
    /// (`cached_block_ratio_recent`): milliseconds since `EPOCH` above
    /// the low 16 bits, the share in thousandths in them; 0: never.
    recent_ratio: AtomicU64,
}

/// The clock of `Table::recent_ratio`.
static EPOCH: OnceLock<Instant> = OnceLock::new();

impl std::fmt::Debug for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Table")
            .field("path", &self.path)
            .field("segment_id", &self.segment_id)
            .field("offset", &self.offset)
            .field("length", &self.length)
            .field("entries", &self.properties.entries)
            .finish()
    }
}

impl Table {
    /// Opens the table occupying `length` bytes at `offset` of `file`
    /// (segment `segment_id`, named `path` in errors) in the store's
    /// `context`, verifying its footer and loading its metadata blocks.
    pub fn open(
        file: Arc<dyn RandomAccessFile>,
        path: PathBuf,
        segment_id: u64,
        offset: u64,
        length: u64,
        context: TableContext,
    ) -> Result<Table> {
        let TableContext {
            cache,
            order,
            filter_policy,
            value_log,
            charge_metadata,
        } = context;
        let path = Arc::new(path);
        let footer_pos = length
            .checked_sub(FOOTER_LEN as u64)
            .and_then(|rel| offset.checked_add(rel))
            .ok_or_else(|| {
                Error::corruption(path.as_path(), offset, "table too short for a footer")
            })?;
        let mut buf = [0u8; FOOTER_LEN];
        file.read_exact_at(footer_pos, &mut buf)?;
        let footer = Footer::decode(&buf)
            .map_err(|reason| Error::corruption(path.as_path(), footer_pos, reason))?;
        let tf = TableFile {
            file: &*file,
            path: &path,
            start: offset,
            blocks_end: length - FOOTER_LEN as u64,
        };
        let index_pos = tf.absolute(footer.index);
        let index = BlockIndex::decode(
            &Block::new(tf.read_block(footer.index)?, path.clone(), index_pos)?,
            order.clone(),
        )?;
        let properties = TableProperties::decode(&tf.read_block(footer.properties)?)
            .map_err(|r| tf.corruption(footer.properties, r))?;
        let value_log = match (footer.version == LOG_TABLE_FORMAT_VERSION, value_log) {
            (false, _) => None,
            (true, Some(log)) => Some(log),
            (true, None) => {
                return Err(Error::InvalidArgument(format!(
                    "{} offset {offset}: a log table's values are in its store's logs; \
                     read it through the store",
                    path.display()
                )))
            }
        };
        let recorded = properties.filter_policy.as_deref();
        let filter_policy = filter_policy.as_ref();
        let filter = match footer.filter.size {
            0 => None,
            _ if !filter::usable(recorded, filter_policy) => None,
            _ => Some(
                TableFilter::decode(tf.read_block(footer.filter)?, filter_policy)
                    .map_err(|r| tf.corruption(footer.filter, r))?,
            ),
        };
        let range_dels = match properties.range_del_block {
            None => Arc::default(),
            Some(handle) => Arc::new(
                Fragments::decode(&tf.read_block(handle)?).map_err(|r| tf.corruption(handle, r))?,
            ),
        };
        // The properties stay in memory with the table too: their key
        // sketch alone (4 KiB) was half of a small table's index and filter,
        // and left uncharged it let `lsbm`'s open tables outgrow the budget
        // the cache is meant to set (killed by a memory cap, 2026-11-28).
        let metadata_bytes = index.memory_bytes()
            + filter.as_ref().map_or(0, TableFilter::memory_bytes)
            + range_dels.memory_bytes()
            + properties.memory_bytes();
        let metadata_charge = match &cache {
            Some(cache) if charge_metadata => Some(cache.reserve(metadata_bytes)),
            _ => None,
        };
        Ok(Table {
            file,
            path,
            segment_id,
            offset,
            length,
            cache,
            footer,
            index,
            filter,
            properties,
            range_dels,
            order,
            value_log,
            metadata_charge,
            recent_ratio: AtomicU64::new(0),
        })
    }

    /// Bytes of block cache capacity this open table holds for its index,
    /// filter and range tombstones (0 unless `charge_table_metadata`).
    pub fn charged_metadata_bytes(&self) -> u64 {
        self.metadata_charge
            .as_ref()
            .map_or(0, CacheReservation::bytes)
    }

    /// The store's logs when this is a log table (TRIAD-LOG).
    pub fn value_log(&self) -> Option<&Arc<dyn ValueLog>> {
        self.value_log.as_ref()
    }

    /// Calls `f` with the entry's key and its value: for a log table's
    /// put, the value read from the log at the stored address.
    fn with_value<R>(
        &self,
        block: u64,
        key: &[u8],
        stored: &[u8],
        f: impl FnOnce(&[u8], &[u8]) -> R,
    ) -> Result<R> {
        let Some(log) = self.value_log.as_ref().filter(|_| is_put(key)) else {
            return Ok(f(key, stored));
        };
        let mut value = LOG_VALUE.with(Cell::take);
        let read = log
            .read_value(stored, &mut value, (&self.path, block))
            .map(|()| f(key, &value));
        LOG_VALUE.with(|c| c.set(value));
        read
    }

    pub fn properties(&self) -> &TableProperties {
        &self.properties
    }

    /// The table's range tombstones (held in memory while it is open).
    pub fn range_deletions(&self) -> &Arc<Fragments> {
        &self.range_dels
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn segment_id(&self) -> u64 {
        self.segment_id
    }

    /// Absolute offset of the table in its segment.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Bytes of the table, footer included.
    pub fn length(&self) -> u64 {
        self.length
    }

    /// The share of the table's data blocks in the block cache (LSbM's
    /// trim keeps buffer tables whose share is high); 0 without a cache.
    pub fn cached_block_ratio(&self) -> f64 {
        let (Some(cache), blocks) = (&self.cache, self.index.len()) else {
            return 0.0;
        };
        if blocks == 0 {
            return 0.0;
        }
        cache.resident_blocks(self.segment_id, self.offset) as f64 / blocks as f64
    }

    /// `cached_block_ratio` as counted at most `max_age` ago, to the
    /// thousandth: counting walks every shard of the block cache, too
    /// slow for every range read that chooses by it (LSbM's
    /// `lsbm_range_by_cache`).
    pub fn cached_block_ratio_recent(&self, max_age: Duration) -> f64 {
        let epoch = *EPOCH.get_or_init(Instant::now);
        let now = epoch.elapsed().as_millis() as u64 + 1;
        let memo = self.recent_ratio.load(AtomicOrdering::Relaxed);
        let (at, thousandths) = (memo >> 16, memo & 0xffff);
        if memo != 0 && now.saturating_sub(at) <= max_age.as_millis() as u64 {
            return thousandths as f64 / 1000.0;
        }
        let ratio = self.cached_block_ratio();
        let thousandths = (ratio * 1000.0).round().clamp(0.0, 1000.0) as u64;
        self.recent_ratio
            .store(now << 16 | thousandths, AtomicOrdering::Relaxed);
        ratio
    }

    /// False when the filter proves `user_key` absent and no range
    /// tombstone of the table covers it: the table has nothing to say
    /// about the key.
    pub fn may_answer(&self, user_key: &[u8]) -> bool {
        self.may_contain(user_key) || self.range_dels.find(user_key).is_some()
    }

    /// False when the filter proves `user_key` absent; true without a filter.
    pub fn may_contain(&self, user_key: &[u8]) -> bool {
        self.filter.as_ref().is_none_or(|f| f.may_contain(user_key))
    }

    /// The first entry whose internal key is `>= lookup_key`, if it has the
    /// same user key; the caller interprets its sequence and kind.
    pub fn get(&self, lookup_key: &[u8]) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        self.get_with(lookup_key, true, |k, v| (k.to_vec(), v.to_vec()))
    }

    /// Like [`Table::get`], but hands the entry's key and value to `f`
    /// instead of copying them; a block read from the file stays in the
    /// cache only if `fill_cache`.
    pub fn get_with<R>(
        &self,
        lookup_key: &[u8],
        fill_cache: bool,
        f: impl FnOnce(&[u8], &[u8]) -> R,
    ) -> Result<Option<R>> {
        if !self.may_contain(user_key(lookup_key)) {
            return Ok(None);
        }
        let mut key_buf = LOOKUP_KEY.with(Cell::take);
        let result = self.lookup(lookup_key, fill_cache, &mut key_buf, f);
        LOOKUP_KEY.with(|c| c.set(key_buf));
        result
    }

    /// Like [`Table::get_with`] when that needs no device read: the data
    /// block holding the key comes from the block cache or, missing there,
    /// from the page cache (cached if `fill_cache`). `None` (nothing read,
    /// `f` not called) when the block would have to come from the device,
    /// or the file system cannot tell (see
    /// [`RandomAccessFile::read_exact_at_resident`]).
    pub fn get_resident_with<R>(
        &self,
        lookup_key: &[u8],
        fill_cache: bool,
        f: impl FnOnce(&[u8], &[u8]) -> R,
    ) -> Option<Result<Option<R>>> {
        if !self.may_contain(user_key(lookup_key)) {
            return Some(Ok(None));
        }
        let i = self.index.seek(lookup_key);
        if i == self.index.len() {
            return Some(Ok(None));
        }
        let handle = self.index.handle(i);
        let block_pos = self.table_file().absolute(handle);
        let mut key_buf = LOOKUP_KEY.with(Cell::take);
        // Called at most once, by whichever source has the block.
        let mut f = Some(f);
        let mut search = |block: &Block| match f.take() {
            Some(f) => self.search_block(block, block_pos, lookup_key, &mut key_buf, f),
            None => Ok(None),
        };
        let answer = match &self.cache {
            Some(cache) => match cache.with_cached_block(self.segment_id, block_pos, &mut search) {
                Some(answer) => Some(answer),
                None => self.read_resident(handle).map(|block| {
                    let block = block?;
                    let load = || Ok(block);
                    cache.with_block(self.segment_id, self.offset, block_pos, fill_cache, load, &mut search)?
                }),
            },
            None => self.read_resident(handle).map(|block| search(&block?)),
        };
        LOOKUP_KEY.with(|c| c.set(key_buf));
        answer
    }

    /// The block at `handle` if the file system serves it without a device
    /// read; `None` when it would wait on the device.
    fn read_resident(&self, handle: BlockHandle) -> Option<Result<Block>> {
        let tf = self.table_file();
        match tf.read_block_resident(handle) {
            Ok(None) => None,
            Ok(Some(raw)) => Some(Block::new(raw, self.path.clone(), tf.absolute(handle))),
            Err(e) => Some(Err(e)),
        }
    }

    /// Relies on the index invariant (separator `<` next block's first key):
    /// if the target block has no entry `>= lookup_key`, the next block's
    /// first entry has a different user key, so there is no match.
    fn lookup<R>(
        &self,
        lookup_key: &[u8],
        fill_cache: bool,
        key_buf: &mut Vec<u8>,
        f: impl FnOnce(&[u8], &[u8]) -> R,
    ) -> Result<Option<R>> {
        let i = self.index.seek(lookup_key);
        if i == self.index.len() {
            return Ok(None);
        }
        let handle = self.index.handle(i);
        let block_pos = self.table_file().absolute(handle);
        let search = |block: &Block| self.search_block(block, block_pos, lookup_key, key_buf, f);
        self.with_block(handle, fill_cache, search)?
    }

    /// The entry for `lookup_key`'s user key in `block` (at `block_pos` in
    /// the file), handed to `f`; `key_buf` lends its allocation to the
    /// block cursor and gets it back.
    fn search_block<R>(
        &self,
        block: &Block,
        block_pos: u64,
        lookup_key: &[u8],
        key_buf: &mut Vec<u8>,
        f: impl FnOnce(&[u8], &[u8]) -> R,
    ) -> Result<Option<R>> {
        let mut data = BlockIter::with_key_buffer(block, mem::take(key_buf), self.order.clone());
        data.seek(lookup_key);
        let found = (data.valid()
            && self
                .order
                .user(user_key(data.key()), user_key(lookup_key))
                .is_eq())
        .then(|| self.with_value(block_pos, data.key(), data.value(), f))
        .transpose();
        let status = data.status();
        *key_buf = data.into_key_buffer();
        status.and(found)
    }

    /// A cursor over all entries; the blocks it loads stay in the cache.
    pub fn iter(self: &Arc<Self>) -> TableIterator {
        self.iter_with(true)
    }

    /// A cursor over all entries that keeps the blocks it loads in the
    /// cache only if `fill_cache`; cached blocks are used either way.
    pub fn iter_with(self: &Arc<Self>, fill_cache: bool) -> TableIterator {
        TableIterator::new(Arc::clone(self), fill_cache)
    }

    /// Re-reads every block, bypassing the cache, checking checksums, block
    /// structure, key order and the entry count (for `thicket check`).
    pub fn verify_checksums(&self) -> Result<()> {
        let tf = self.table_file();
        tf.read_block(self.footer.index)?;
        tf.read_block(self.footer.properties)?;
        if self.footer.filter.size > 0 {
            tf.read_block(self.footer.filter)?;
        }
        let mut prev = Vec::new();
        let mut value = Vec::new();
        let mut entries = 0u64;
        for i in 0..self.index.len() {
            let handle = self.index.handle(i);
            let pos = tf.absolute(handle);
            let block = self.read_block(handle)?;
            let mut it = BlockIter::new(&block, self.order.clone());
            it.seek_to_first();
            while it.valid() {
                if entries > 0 && self.order.internal(&prev, it.key()) != Ordering::Less {
                    return Err(Error::corruption(
                        self.path.as_path(),
                        pos,
                        "keys out of order",
                    ));
                }
                if let Some(log) = self.value_log.as_ref().filter(|_| is_put(it.key())) {
                    // A log table's value is checked where it lies.
                    log.read_value(it.value(), &mut value, (&self.path, pos))?;
                }
                prev.clear();
                prev.extend_from_slice(it.key());
                entries += 1;
                it.next();
            }
            it.status()?;
        }
        if entries != self.properties.entries {
            return Err(Error::corruption(
                self.path.as_path(),
                tf.absolute(self.footer.properties),
                format!(
                    "table holds {entries} entries but its properties say {}",
                    self.properties.entries
                ),
            ));
        }
        Ok(())
    }

    /// The order of the table's keys.
    pub(crate) fn order(&self) -> &KeyOrder {
        &self.order
    }

    pub(crate) fn index(&self) -> &BlockIndex {
        &self.index
    }

    /// The data block at `handle`, from the cache when there is one; a
    /// block read from the file is cached only if `fill_cache`.
    pub(crate) fn block(&self, handle: BlockHandle, fill_cache: bool) -> Result<Block> {
        self.with_block(handle, fill_cache, Block::clone)
    }

    /// Calls `read` on the data block at `handle`: in place when the cache
    /// holds it, which saves a point lookup taking a reference; a block read
    /// from the file is cached only if `fill_cache`.
    fn with_block<R>(
        &self,
        handle: BlockHandle,
        fill_cache: bool,
        read: impl FnOnce(&Block) -> R,
    ) -> Result<R> {
        let pos = self.table_file().absolute(handle);
        let load = || self.read_block(handle);
        match &self.cache {
            Some(cache) => {
                cache.with_block(self.segment_id, self.offset, pos, fill_cache, load, read)
            }
            None => load().map(|block| read(&block)),
        }
    }

    /// The data block at `handle` through a compaction's read-ahead (the
    /// block cache is neither asked nor filled).
    pub(crate) fn block_read_ahead(
        &self,
        ahead: &mut Readahead,
        handle: BlockHandle,
    ) -> Result<Block> {
        let tf = self.table_file();
        let (abs, mut buf) = tf.block_span(handle)?;
        ahead.read(abs, &mut buf, tf.start.saturating_add(tf.blocks_end))?;
        Block::new(tf.decode(handle, buf)?, self.path.clone(), abs)
    }

    /// Reads and validates the block at `handle` from the file.
    fn read_block(&self, handle: BlockHandle) -> Result<Block> {
        let tf = self.table_file();
        Block::new(
            tf.read_block(handle)?,
            self.path.clone(),
            tf.absolute(handle),
        )
    }

    fn table_file(&self) -> TableFile<'_> {
        TableFile {
            file: &*self.file,
            path: &self.path,
            start: self.offset,
            blocks_end: self.length - FOOTER_LEN as u64,
        }
    }
}

/// Whether the internal key `key` is a put (whose value a log table keeps
/// in the log); a malformed key reads as not a put.
pub fn is_put(key: &[u8]) -> bool {
    ParsedKey::parse(key).is_some_and(|k| k.kind == ValueKind::Value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{InternalKey, ValueKind};
    use crate::table::block_io::BLOCK_TRAILER_LEN;
    use crate::table::builder::{TableBuilder, TableSummary};
    use crate::table::compression::CompressionType;
    use crate::table::filter_policy::FilterPolicy;
    use crate::table::footer::{FORMAT_VERSION, NAMED_FILTER_FORMAT_VERSION};
    use crate::table::options::TableOptions;
    use crate::table::testutil::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    fn small_blocks() -> TableOptions {
        TableOptions {
            block_size: 256,
            ..TableOptions::default()
        }
    }

    #[test]
    fn get_finds_present_and_rejects_absent_keys() {
        let entries = sample_entries(2000);
        let (file, s) = build_table(&entries, &small_blocks());
        let t = open_table(file, &s, None).unwrap();
        for (i, (k, v)) in entries.iter().enumerate() {
            let user = ukey(i as u32 * 2);
            assert_eq!(
                t.get(&lookup_key(&user)).unwrap(),
                Some((k.clone(), v.clone()))
            );
            assert_eq!(t.get(k).unwrap(), Some((k.clone(), v.clone())));
            assert_eq!(t.get(&lookup_key(&ukey(i as u32 * 2 + 1))).unwrap(), None);
        }
        // A snapshot older than the entry sees nothing of that user key here.
        let old = InternalKey::new(&ukey(0), 5, ValueKind::SEEK);
        assert_eq!(t.get(old.encoded()).unwrap(), None);
        assert_eq!(t.properties().entries, 2000);
    }

    /// Data blocks that cross a page boundary, by absolute offset, and the
    /// largest stored block (trailer included).
    fn page_crossings(t: &Table) -> (usize, u64) {
        let page = crate::table::builder::BLOCK_ALIGNMENT;
        let mut crossing = 0;
        let mut largest = 0;
        for i in 0..t.index().len() {
            let h = t.index().handle(i);
            let start = t.offset() + h.offset;
            let stored = h.size + crate::table::block_io::BLOCK_TRAILER_LEN as u64;
            largest = largest.max(stored);
            if start / page != (start + stored - 1) / page {
                crossing += 1;
            }
        }
        (crossing, largest)
    }

    /// `block_align`: every data block lies inside one 4 KiB page of the
    /// file (so a block read from the device is one page), the table
    /// reads back whole, and the padding costs a few percent; without it
    /// 4 KiB blocks straddle pages.
    #[test]
    fn aligned_blocks_stay_inside_one_page() {
        // 16-byte keys and 200-byte values, as the capped read benchmark.
        let entries: Vec<(Vec<u8>, Vec<u8>)> = (0..20_000u32)
            .map(|i| {
                let user = format!("key{i:013}");
                let key = InternalKey::new(user.as_bytes(), 1, ValueKind::Value).into_vec();
                (key, vec![b'v' ^ (i % 7) as u8; 200])
            })
            .collect();
        let build = |align: bool| {
            let opts = TableOptions {
                block_align: align,
                ..TableOptions::default()
            };
            let (file, s) = build_table(&entries, &opts);
            (open_table(file, &s, None).unwrap(), s.length)
        };
        let (aligned, aligned_len) = build(true);
        let (packed, packed_len) = build(false);
        let (crossing, largest) = page_crossings(&aligned);
        assert_eq!(crossing, 0, "an aligned block crosses a page");
        assert!(largest <= 4096, "{largest}-byte block");
        assert!(
            page_crossings(&packed).0 > packed.index().len() / 2,
            "unaligned 4 KiB blocks mostly straddle pages"
        );
        assert!(
            aligned_len < packed_len + packed_len / 10,
            "padding cost {aligned_len} against {packed_len} bytes"
        );
        aligned.verify_checksums().unwrap();
        assert_eq!(collect_forward(&mut aligned.iter()), entries);
        for (k, v) in entries.iter().step_by(97) {
            assert_eq!(aligned.get(k).unwrap(), Some((k.clone(), v.clone())));
        }
    }

    /// Entries larger than the padding limit (1,000-byte values) leave
    /// blocks straddling pages instead of padding up to an entry per page.
    #[test]
    fn aligned_tables_of_large_values_waste_little() {
        let entries: Vec<(Vec<u8>, Vec<u8>)> = (0..5_000u32)
            .map(|i| {
                let key = InternalKey::new(&ukey(i), 1, ValueKind::Value).into_vec();
                (key, vec![i as u8; 1000])
            })
            .collect();
        let length = |align: bool| {
            let opts = TableOptions {
                block_align: align,
                ..TableOptions::default()
            };
            let (file, s) = build_table(&entries, &opts);
            let t = open_table(file, &s, None).unwrap();
            assert_eq!(collect_forward(&mut t.iter()), entries);
            s.length
        };
        let (aligned, packed) = (length(true), length(false));
        assert!(
            aligned < packed + packed / 50,
            "{aligned} bytes aligned against {packed}"
        );
    }

    /// An entry larger than a page makes its block straddle pages; the
    /// blocks after it are back inside their pages.
    #[test]
    fn aligned_tables_take_entries_larger_than_a_page() {
        let entries: Vec<(Vec<u8>, Vec<u8>)> = (0..300u32)
            .map(|i| {
                let key = InternalKey::new(&ukey(i), 1, ValueKind::Value).into_vec();
                let len = if i % 50 == 7 { 10_000 } else { 300 };
                (key, vec![i as u8; len])
            })
            .collect();
        let opts = TableOptions {
            block_align: true,
            ..TableOptions::default()
        };
        let (file, s) = build_table(&entries, &opts);
        let t = open_table(file, &s, None).unwrap();
        let (crossing, _) = page_crossings(&t);
        assert_eq!(crossing, 6, "only the six large entries' blocks cross pages");
        assert_eq!(collect_forward(&mut t.iter()), entries);
    }

    /// What an open table keeps in memory is charged to the cache: its
    /// index, filter and properties (the key sketch among them), so the
    /// cache's capacity bounds the table cache's memory too.
    #[test]
    fn charge_covers_index_filter_and_properties() {
        let entries = sample_entries(2000);
        let (file, s) = build_table(&entries, &small_blocks());
        let cache = Arc::new(BlockCache::new(1 << 20));
        let t = Table::open(
            Arc::new(file),
            PathBuf::from("000009.seg"),
            9,
            s.offset,
            s.length,
            TableContext {
                cache: Some(cache.clone()),
                charge_metadata: true,
                ..TableContext::default()
            },
        )
        .unwrap();
        let held = t.index.memory_bytes()
            + t.filter.as_ref().map_or(0, TableFilter::memory_bytes)
            + t.properties().memory_bytes();
        assert!(t.properties().hll.memory_bytes() >= 1024);
        assert_eq!(t.charged_metadata_bytes(), held);
        assert_eq!(cache.reserved(), held);
        drop(t);
        assert_eq!(cache.reserved(), 0);
    }

    #[test]
    fn get_with_hands_out_borrowed_entry() {
        let entries = sample_entries(100);
        let (file, s) = build_table(&entries, &small_blocks());
        let t = open_table(file, &s, None).unwrap();
        let len = t
            .get_with(&lookup_key(&ukey(20)), true, |_, v| v.len())
            .unwrap();
        assert_eq!(len, Some(entries[10].1.len()));
    }

    #[test]
    fn bloom_filter_screens_absent_keys() {
        let entries = sample_entries(1000);
        let (file, s) = build_table(&entries, &TableOptions::default());
        let t = open_table(file, &s, None).unwrap();
        assert!((0..1000).all(|i| t.may_contain(&ukey(i * 2))));
        let fp = (0..1000)
            .filter(|i| t.may_contain(&ukey(i * 2 + 1)))
            .count();
        assert!(fp < 50, "{fp} false positives");

        let no_filter = TableOptions {
            bloom_bits_per_key: 0,
            ..TableOptions::default()
        };
        let (file, s) = build_table(&entries, &no_filter);
        let t = open_table(file, &s, None).unwrap();
        assert!(t.may_contain(b"absent"));
        assert_eq!(t.get(&lookup_key(b"absent")).unwrap(), None);
    }

    /// A policy whose filter is a count of keys; it matches when
    /// `matches` and the filter holds exactly 8 bytes (any other bytes, a
    /// corrupt or foreign filter, must not upset the reader).
    struct CountPolicy {
        name: &'static str,
        matches: bool,
    }

    impl FilterPolicy for CountPolicy {
        fn name(&self) -> &str {
            self.name
        }
        fn create_filter(&self, user_keys: &[&[u8]], dst: &mut Vec<u8>) {
            if !user_keys.is_empty() {
                dst.extend_from_slice(&(user_keys.len() as u64).to_le_bytes());
            }
        }
        fn key_may_match(&self, _user_key: &[u8], filter: &[u8]) -> bool {
            self.matches && filter.len() == 8
        }
    }

    fn policy(name: &'static str, matches: bool) -> Arc<dyn FilterPolicy> {
        Arc::new(CountPolicy { name, matches })
    }

    fn open_under(
        file: &MemFile,
        s: &TableSummary,
        policy: Option<&Arc<dyn FilterPolicy>>,
    ) -> Arc<Table> {
        let file: Arc<dyn RandomAccessFile> = Arc::new(MemFile::new(file.bytes()));
        let context = TableContext {
            filter_policy: policy.cloned(),
            ..TableContext::default()
        };
        Arc::new(Table::open(file, "p.seg".into(), 1, s.offset, s.length, context).unwrap())
    }

    #[test]
    fn a_named_policy_builds_the_filter_and_is_recorded() {
        let entries = sample_entries(300);
        let never = policy("test.Never", false);
        let opts = TableOptions {
            filter_policy: Some(never.clone()),
            ..small_blocks()
        };
        let (file, s) = build_table(&entries, &opts);
        assert_eq!(s.properties.filter_policy.as_deref(), Some("test.Never"));
        assert_eq!(s.properties.format_version, NAMED_FILTER_FORMAT_VERSION);
        let t = open_under(&file, &s, Some(&never));
        assert_eq!(t.properties().filter_policy.as_deref(), Some("test.Never"));
        assert!(!t.may_contain(&ukey(0)));
        assert_eq!(t.get(&entries[0].0).unwrap(), None, "the policy hides it");
        // The same name matching: the filter (8 bytes) is the policy's.
        let t = open_under(&file, &s, Some(&policy("test.Never", true)));
        assert_eq!(t.get(&entries[0].0).unwrap(), Some(entries[0].clone()));
        // Another name, or the built-in Bloom filter: no filter.
        for other in [Some(policy("test.Other", false)), None] {
            let t = open_under(&file, &s, other.as_ref());
            assert!(t.may_contain(b"anything"));
            for (k, v) in &entries {
                assert_eq!(t.get(k).unwrap(), Some((k.clone(), v.clone())));
            }
            t.verify_checksums().unwrap();
        }
    }

    #[test]
    fn a_bloom_table_is_unfiltered_under_a_named_policy() {
        let entries = sample_entries(100);
        let (file, s) = build_table(&entries, &TableOptions::default());
        assert_eq!(s.properties.filter_policy, None);
        assert_eq!(s.properties.format_version, FORMAT_VERSION);
        let t = open_under(&file, &s, Some(&policy("test.Never", false)));
        assert!(t.may_contain(b"absent"));
        assert_eq!(t.get(&entries[7].0).unwrap(), Some(entries[7].clone()));
    }

    #[test]
    fn an_empty_policy_filter_leaves_the_table_unfiltered() {
        let never = policy("test.Never", false);
        let opts = TableOptions {
            filter_policy: Some(never.clone()),
            ..TableOptions::default()
        };
        let (file, s) = build_table(&[], &opts);
        let t = open_under(&file, &s, Some(&never));
        assert!(t.may_contain(b"k"));
        assert_eq!(t.get(&lookup_key(b"k")).unwrap(), None);
    }

    #[test]
    fn cached_reads_hit_the_cache() {
        let entries = sample_entries(500);
        let (file, s) = build_table(&entries, &small_blocks());
        let cache = Arc::new(BlockCache::new(1 << 20));
        let t = open_table(file, &s, Some(cache.clone())).unwrap();
        let key = lookup_key(&ukey(100));
        t.get(&key).unwrap().unwrap();
        t.get(&key).unwrap().unwrap();
        assert_eq!((cache.misses(), cache.hits()), (1, 1));
    }

    #[test]
    fn empty_table() {
        let (file, s) = build_table(&[], &TableOptions::default());
        let t = open_table(file, &s, None).unwrap();
        assert_eq!(t.get(&lookup_key(b"k")).unwrap(), None);
        assert!(collect_forward(&mut t.iter()).is_empty());
        assert!(collect_backward(&mut t.iter()).is_empty());
        t.verify_checksums().unwrap();
        assert_eq!(t.properties().entries, 0);
    }

    #[test]
    fn tables_back_to_back_in_one_segment() {
        let first = sample_entries(300);
        let mut file = MemFile::new(crate::io::segment::encode_header());
        let mut summaries = Vec::new();
        for entries in [&first[..150], &first[150..]] {
            let mut b = TableBuilder::new(&small_blocks(), &mut file);
            for (k, v) in entries {
                b.add(k, v).unwrap();
            }
            summaries.push(b.finish().unwrap());
        }
        assert_eq!(
            summaries[1].offset,
            summaries[0].offset + summaries[0].length
        );
        let file: Arc<dyn RandomAccessFile> = Arc::new(file);
        for (s, entries) in summaries.iter().zip([&first[..150], &first[150..]]) {
            let t = Table::open(
                file.clone(),
                "s.seg".into(),
                1,
                s.offset,
                s.length,
                TableContext::default(),
            )
            .map(Arc::new)
            .unwrap();
            assert_eq!(collect_forward(&mut t.iter()), entries);
            t.verify_checksums().unwrap();
        }
    }

    #[test]
    fn flipped_data_byte_is_reported_never_misread() {
        let entries = sample_entries(200);
        let (file, s) = build_table(&entries, &small_blocks());
        let t = open_table(file.with_flipped(0), &s, None).unwrap();
        let first_block = t.index().handle(0);
        let block_pos = s.offset + first_block.offset;
        let block_end = block_pos + first_block.size + BLOCK_TRAILER_LEN as u64;
        for pos in block_pos..block_end {
            let t = open_table(file.with_flipped(pos as usize), &s, None).unwrap();
            let err = t.get(&entries[0].0).unwrap_err();
            assert_eq!(
                err,
                Error::corruption("000009.seg", block_pos, "block checksum mismatch")
            );
            let mut it = t.iter();
            it.seek_to_first();
            assert!(!it.valid());
            assert!(it.status().unwrap_err().is_corruption());
            assert!(t.verify_checksums().unwrap_err().is_corruption());
        }
    }

    #[test]
    fn any_flipped_byte_fails_open_or_verify() {
        let entries = sample_entries(100);
        let (file, s) = build_table(&entries, &small_blocks());
        for pos in s.offset..s.offset + s.length {
            let damaged = file.with_flipped(pos as usize);
            let result = open_table(damaged, &s, None).and_then(|t| t.verify_checksums());
            assert!(result.unwrap_err().is_corruption(), "byte {pos}");
        }
    }

    #[test]
    fn bad_footer_reports_its_offset() {
        let entries = sample_entries(100);
        let (file, s) = build_table(&entries, &small_blocks());
        let footer_pos = s.offset + s.length - FOOTER_LEN as u64;
        let err = open_table(file.with_flipped(footer_pos as usize + 3), &s, None).unwrap_err();
        assert!(matches!(err, Error::Corruption { offset, .. } if offset == footer_pos));
        // Truncated tables: the footer is looked for in the wrong place.
        for cut in [1, 5, FOOTER_LEN as u64, s.length - 1] {
            let short = TableSummary {
                length: s.length - cut,
                ..s.clone()
            };
            let err = open_table(MemFile::new(file.bytes()), &short, None).unwrap_err();
            assert!(err.is_corruption(), "cut {cut}: {err}");
        }
        let err = open_table(MemFile::new(vec![0; 100]), &s, None).unwrap_err();
        assert!(err.is_corruption());
    }

    fn arb_entries() -> impl Strategy<Value = Vec<(Vec<u8>, Vec<u8>)>> {
        let key = (
            proptest::collection::vec(0u8..4, 0..6),
            0u64..50,
            prop_oneof![Just(ValueKind::Value), Just(ValueKind::Deletion)],
        );
        let entry = (key, proptest::collection::vec(any::<u8>(), 0..40));
        proptest::collection::vec(entry, 0..300).prop_map(|raw| {
            let mut seen = BTreeSet::new();
            let mut out: Vec<(Vec<u8>, Vec<u8>)> = raw
                .into_iter()
                .filter(|((u, s, _), _)| seen.insert((u.clone(), *s)))
                .map(|((u, s, kind), v)| (InternalKey::new(&u, s, kind).into_vec(), v))
                .collect();
            out.sort_by(|a, b| KeyOrder::Bytewise.internal(&a.0, &b.0));
            out
        })
    }

    fn arb_options() -> impl Strategy<Value = TableOptions> {
        (
            64usize..1024,
            1usize..20,
            prop_oneof![Just(0u32), Just(10)],
            prop_oneof![
                Just(CompressionType::None),
                Just(CompressionType::Lz4),
                Just(CompressionType::Zstd)
            ],
            any::<bool>(),
        )
            .prop_map(
                |(block_size, restart_interval, bits, compression, block_align)| TableOptions {
                    block_size,
                    block_align,
                    restart_interval,
                    bloom_bits_per_key: bits,
                    compression,
                    filter_policy: None,
                    order: KeyOrder::Bytewise,
                    log_refs: None,
                    keyspace: 0,
                },
            )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn table_round_trip(entries in arb_entries(), opts in arb_options(), cached in any::<bool>()) {
            let (file, s) = build_table(&entries, &opts);
            let cache = cached.then(|| Arc::new(BlockCache::new(1 << 20)));
            let t = open_table(file, &s, cache).unwrap();
            prop_assert_eq!(&collect_forward(&mut t.iter()), &entries);
            prop_assert_eq!(&collect_backward(&mut t.iter()), &entries);
            for (k, v) in &entries {
                prop_assert_eq!(t.get(k).unwrap(), Some((k.clone(), v.clone())));
            }
            // Absent user keys (byte 9 never occurs in generated keys).
            for (k, _) in entries.iter().take(20) {
                let mut absent = user_key(k).to_vec();
                absent.push(9);
                prop_assert_eq!(t.get(&lookup_key(&absent)).unwrap(), None);
            }
            t.verify_checksums().unwrap();
        }

        #[test]
        fn opening_garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..400), offset in 0u64..64, len in 0u64..400) {
            let file: Arc<dyn RandomAccessFile> = Arc::new(MemFile::new(bytes));
            if let Ok(t) = Table::open(file, "g".into(), 0, offset, len, TableContext::default()) {
                let t = Arc::new(t);
                let _ = t.get(&lookup_key(b"k"));
                let _ = t.verify_checksums();
                let _ = collect_forward(&mut t.iter());
            }
        }
    }
}
