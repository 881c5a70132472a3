//! The funk tables a chunked store has open: each chunk names its table by
//! number, and a get, scan or rebalance opens it through this bounded cache
//! on first need (its footer, index, filter and properties read then). An
//! open therefore reads no table, and a store of many chunks keeps at most
//! `max_open_files` tables open (descriptor and metadata, the latter charged
//! to the block cache under `charge_table_metadata`), as the LSM layout's
//! table cache does (`version/table_cache.rs`). YoDB's §5 stores hold
//! thousands of 10 MB chunks; holding every table open charged ~13 KB per
//! chunk to the block cache for good, which left a small cache no room for
//! data blocks.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use quick_cache::sync::Cache;

use super::files::funk_table_path;
use super::incarnations::Incarnations;
use crate::error::Result;
use crate::io::FileSystem;
use crate::table::{Table, TableContext};

/// A chunk's funk table: its number and length, opened through
/// [`FunkTables`] when read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct FunkTable {
    pub number: u64,
    pub length: u64,
}

/// The store's open funk tables, at most `max_open_files` of them.
pub(super) struct FunkTables {
    fs: Arc<dyn FileSystem>,
    dir: PathBuf,
    context: TableContext,
    open: Cache<u64, Arc<Table>>,
    /// The recovery table this run keeps: the writes it ignores are left
    /// out of every table read (`table_filter.rs`).
    incarnations: Arc<Incarnations>,
}

impl FunkTables {
    pub fn new(
        fs: Arc<dyn FileSystem>,
        dir: &Path,
        context: TableContext,
        max_open_files: usize,
        incarnations: Arc<Incarnations>,
    ) -> FunkTables {
        FunkTables {
            fs,
            dir: dir.to_path_buf(),
            context,
            open: Cache::new(max_open_files.max(1)),
            incarnations,
        }
    }

    /// The recovery table the tables are read by.
    pub fn incarnations(&self) -> &Arc<Incarnations> {
        &self.incarnations
    }

    pub fn fs(&self) -> &Arc<dyn FileSystem> {
        &self.fs
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn context(&self) -> &TableContext {
        &self.context
    }

    /// The funk table on disk as `number`, `length` bytes long (its size
    /// read from the file system: an open reads no table).
    pub fn on_disk(&self, number: u64) -> Result<FunkTable> {
        let length = self.fs.file_size(&funk_table_path(&self.dir, number))?;
        Ok(FunkTable { number, length })
    }

    /// `table`, opened now unless the cache holds it.
    pub fn open(&self, table: FunkTable) -> Result<Arc<Table>> {
        self.open.get_or_insert_with(&table.number, || {
            open_funk_table(
                self.fs.as_ref(),
                &self.dir,
                table.number,
                self.context.clone(),
            )
        })
    }

    /// Closes table `number` if open: its chunk was replaced and its file
    /// is about to go.
    pub fn forget(&self, number: u64) {
        self.open.remove(&number);
    }

    /// How many tables are open.
    pub fn open_count(&self) -> usize {
        self.open.len()
    }

    /// Whether table `number` is open.
    #[cfg(test)]
    pub fn is_open(&self, number: u64) -> bool {
        self.open.peek(&number).is_some()
    }
}

/// Opens funk table `number` of the store in `dir`, outside any cache.
pub(super) fn open_funk_table(
    fs: &dyn FileSystem,
    dir: &Path,
    number: u64,
    context: TableContext,
) -> Result<Arc<Table>> {
    let path = funk_table_path(dir, number);
    let file = fs.open_random(&path)?;
    let length = file.len()?;
    Table::open(file, path, number, 0, length, context).map(Arc::new)
}
