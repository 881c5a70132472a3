//! Bounded caches of open segment files (BoLT's descriptor cache: one
//! descriptor per segment, not per table) and of opened tables (their index,
//! filter and properties held in memory).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use quick_cache::sync::Cache;

use crate::error::Result;
use crate::format::KeyOrder;
use crate::io::{FileSystem, RandomAccessFile};
use crate::table::{BlockCache, FilterPolicy, Table, TableContext, TableIterator};
use crate::version::files::segment_path;
use crate::version::log_values::StoreLogs;
use crate::version::TableMeta;

pub struct TableCache {
    dir: PathBuf,
    /// Share one descriptor per segment (BoLT) or open one per table.
    share_descriptors: bool,
    fs: Arc<dyn FileSystem>,
    files: Cache<u64, Arc<dyn RandomAccessFile>>,
    tables: Cache<u64, Arc<Table>>,
    block_cache: Arc<BlockCache>,
    /// The open's filter policy (`None`: the built-in Bloom filter).
    filter_policy: Option<Arc<dyn FilterPolicy>>,
    /// The store's key order, which every table is opened with.
    order: KeyOrder,
    /// Segments are read with `O_DIRECT` (`use_direct_reads`).
    direct_reads: bool,
    /// Open tables' metadata is charged to the block cache
    /// (`charge_table_metadata`).
    charge_metadata: bool,
    /// Where log tables' values are read (TRIAD-LOG).
    logs: Arc<StoreLogs>,
    /// Bytes a compaction reads of an input table at once
    /// (`compaction_readahead_bytes`; 0: block by block).
    compaction_readahead: u64,
}

impl TableCache {
    pub fn new(
        dir: &Path,
        fs: Arc<dyn FileSystem>,
        max_open_files: usize,
        share_descriptors: bool,
        block_cache: Arc<BlockCache>,
        filter_policy: Option<Arc<dyn FilterPolicy>>,
        order: KeyOrder,
    ) -> TableCache {
        TableCache {
            dir: dir.to_path_buf(),
            share_descriptors,
            fs: fs.clone(),
            files: Cache::new(max_open_files.max(1)),
            tables: Cache::new(max_open_files.max(1)),
            block_cache,
            filter_policy,
            order,
            direct_reads: false,
            charge_metadata: false,
            logs: Arc::new(StoreLogs::new(dir, fs, 0)),
            compaction_readahead: 0,
        }
    }

    /// Caches up to `bytes` of verified log fragments for log tables'
    /// values (`triad_log_cache_size`); a compaction reads `batch_bytes` of
    /// a log table's values at once, in log order
    /// (`triad_log_compaction_batch`).
    pub fn with_log_cache(self, bytes: u64, batch_bytes: u64) -> TableCache {
        let logs = StoreLogs::new(&self.dir, self.fs.clone(), bytes).with_batch_bytes(batch_bytes);
        TableCache {
            logs: Arc::new(logs),
            ..self
        }
    }

    /// The reader of log tables' values.
    pub fn logs(&self) -> &Arc<StoreLogs> {
        &self.logs
    }

    /// Compactions read their input tables `bytes` at a time, each through
    /// a descriptor without kernel read-ahead (`compaction_readahead_bytes`).
    pub fn with_compaction_readahead(self, bytes: u64) -> TableCache {
        TableCache {
            compaction_readahead: bytes,
            ..self
        }
    }

    /// A compaction's cursor over the table of `meta`: with read-ahead, its
    /// blocks are read in spans of up to `compaction_readahead_bytes`,
    /// never past the table, through a descriptor of their own (the shared
    /// one keeps the kernel's read-ahead for user reads; with
    /// `use_direct_reads` the shared one reads around the page cache
    /// anyway and is used).
    pub fn compaction_iter(&self, meta: &TableMeta) -> Result<TableIterator> {
        let table = self.table(meta)?;
        let it = table.iter_with(false);
        if self.compaction_readahead == 0 {
            return Ok(it);
        }
        let file = match self.direct_reads {
            true => self.segment_file(meta.segment)?,
            false => self
                .fs
                .open_random_scattered(&segment_path(&self.dir, meta.segment))?,
        };
        Ok(it.with_readahead(file, self.compaction_readahead))
    }

    /// Reads segments bypassing the page cache (`use_direct_reads`).
    pub fn with_direct_reads(self, direct_reads: bool) -> TableCache {
        TableCache {
            direct_reads,
            ..self
        }
    }

    /// Charges open tables' index, filter, range tombstones and properties to the
    /// block cache (`charge_table_metadata`).
    pub fn with_metadata_charge(self, charge_metadata: bool) -> TableCache {
        TableCache {
            charge_metadata,
            ..self
        }
    }

    fn open_segment(&self, segment: u64) -> Result<Arc<dyn RandomAccessFile>> {
        let path = segment_path(&self.dir, segment);
        match self.direct_reads {
            true => self.fs.open_random_direct(&path),
            false => self.fs.open_random(&path),
        }
    }

    /// The store's key order.
    pub fn order(&self) -> &KeyOrder {
        &self.order
    }

    /// The open file of a segment, from the descriptor cache.
    pub fn segment_file(&self, segment: u64) -> Result<Arc<dyn RandomAccessFile>> {
        self.files
            .get_or_insert_with(&segment, || self.open_segment(segment))
    }

    /// The opened table for `meta`.
    pub fn table(&self, meta: &TableMeta) -> Result<Arc<Table>> {
        self.tables.get_or_insert_with(&meta.id, || {
            let file = if self.share_descriptors {
                self.segment_file(meta.segment)?
            } else {
                self.open_segment(meta.segment)?
            };
            Table::open(
                file,
                segment_path(&self.dir, meta.segment),
                meta.segment,
                meta.offset,
                meta.length,
                TableContext {
                    cache: Some(self.block_cache.clone()),
                    order: self.order.clone(),
                    filter_policy: self.filter_policy.clone(),
                    value_log: Some(self.logs.clone()),
                    charge_metadata: self.charge_metadata,
                },
            )
            .map(Arc::new)
        })
    }

    /// Loads `meta`'s key sketch from the table's properties unless it is
    /// already in memory.
    pub fn load_sketch(&self, meta: &TableMeta) -> Result<()> {
        if meta.sketch.get().is_none() {
            meta.sketch.load(&self.table(meta)?.properties().hll);
        }
        Ok(())
    }

    /// Forgets a dead table.
    pub fn evict_table(&self, table: u64) {
        self.tables.remove(&table);
    }

    /// Closes a deleted segment's descriptor.
    pub fn evict_segment(&self, segment: u64) {
        self.files.remove(&segment);
    }

    pub fn block_cache(&self) -> &Arc<BlockCache> {
        &self.block_cache
    }

    pub fn open_files(&self) -> usize {
        self.files.len()
    }
}
