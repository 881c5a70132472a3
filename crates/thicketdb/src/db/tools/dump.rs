//! Inspection (RocksDB's `ldb manifest_dump`, `sst_dump`, `dump_wal`):
//! decodes the MANIFEST, one live table or one log of a store; in the
//! chunked layout the `CHUNKS` file, one funk table or one chunk or batch
//! log. Reads only, through the read-only file system of
//! `Db::open_read_only`, without the store's lock: it works beside a
//! running writer and on a full disk.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::db::chunked::files::{batch_log_path, chunk_list_path, chunk_log_path, funk_table_path};
use crate::db::chunked::manifest::ChunkList;
use crate::db::read_only_fs::ReadOnlyFs;
use crate::db::{DecodedBatch, OpKind};
use crate::error::{Error, Result};
use crate::format::internal_key::ParsedKey;
pub use crate::format::range_tombstone::{Fragment, RangeTombstone};
use crate::format::ValueKind;
use crate::io::{FileSystem, PosixFs};
use crate::iterator::InternalIterator;
use crate::log::{decode_relogged, is_relogged, LogReader, RecoveryMode, ValueAddress};
use crate::options::{Layout, Options};
use crate::table::{is_put, BlockIter, Table, TableContext, TableProperties};
use crate::version::edit::VersionEdit;
use crate::version::files::{current_path, log_path, segment_path};
use crate::version::log_values::StoreLogs;
use crate::version::meta::TableMeta;
use crate::version::{Version, VersionSet};

/// The MANIFEST `CURRENT` names, record by record.
#[derive(Debug, Clone)]
pub struct ManifestDump {
    /// The MANIFEST file read.
    pub path: PathBuf,
    /// Its records in file order.
    pub records: Vec<ManifestRecord>,
}

/// One MANIFEST record: the edit and the version it leaves.
#[derive(Debug, Clone)]
pub struct ManifestRecord {
    /// Offset of the record in the MANIFEST.
    pub offset: u64,
    /// The decoded edit.
    pub edit: VersionEdit,
    /// The version of the edit's keyspace after the edit: per level (L0
    /// first), its runs, newest first as the version orders them.
    pub levels: Vec<Vec<RunSummary>>,
}

/// A run of a version: its id and its tables' ids in key order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunSummary {
    /// The run's id.
    pub id: u64,
    /// Its tables' ids, in key order.
    pub tables: Vec<u64>,
}

/// The `CHUNKS` file of a store in the chunked layout.
#[derive(Debug, Clone)]
pub struct ChunkListDump {
    /// The file read.
    pub path: PathBuf,
    /// Its contents: keyspaces and their chunks, file numbers, counters.
    pub list: ChunkList,
}

/// Where a live table sits in its store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TablePlace {
    /// A run of an LSM level.
    Run {
        /// The level holding it (L0 = 0).
        level: usize,
        /// The id of the run holding it.
        run: u64,
    },
    /// A chunk's funk (chunked layout).
    Chunk {
        /// The keyspace's name.
        keyspace: String,
        /// The chunk's first key.
        start: Vec<u8>,
        /// The chunk's log file number.
        log_number: u64,
    },
}

/// One live table, decoded.
#[derive(Debug, Clone)]
pub struct TableDump {
    /// The segment file the table lies in.
    pub path: PathBuf,
    /// Its level and run, or its chunk.
    pub place: TablePlace,
    /// What the MANIFEST records about it (for a funk table: the same
    /// figures, from the table itself; id and segment are its number).
    pub meta: TableMeta,
    /// The table's properties block.
    pub properties: TableProperties,
    /// One entry per data block.
    pub index: Vec<IndexEntry>,
    /// Entries, a log table's values read from its logs.
    pub entries: Vec<Entry>,
    /// A log table's (TRIAD-LOG) stored addresses, one per entry (`None`
    /// for a deletion); empty for a regular table.
    pub log_addresses: Vec<Option<ValueAddress>>,
    /// The range-deletion block's fragments, in key order.
    pub range_deletions: Vec<Fragment>,
}

/// An index entry: the separator key (at or above every key of its block,
/// below every key of the next) and where the block is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexEntry {
    /// The separator.
    pub key: Entry,
    /// Offset of the block from the table's start.
    pub block_offset: u64,
    /// Size of the block on disk, trailer excluded.
    pub block_size: u64,
}

/// An internal key (user key, sequence number, kind) and its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The user key.
    pub key: Vec<u8>,
    /// The write's sequence number.
    pub sequence: u64,
    /// Value or deletion.
    pub kind: ValueKind,
    /// The value (empty for a deletion).
    pub value: Vec<u8>,
}

/// One log, record by record (each record is one write group's batch).
#[derive(Debug, Clone)]
pub struct LogDump {
    /// The log file read.
    pub path: PathBuf,
    /// Its records in file order.
    pub records: Vec<LogRecord>,
}

/// A log record: its offset and the batch it holds, the operations
/// numbered from `first_sequence`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogRecord {
    /// Offset of the record in the log.
    pub offset: u64,
    /// Sequence number of the batch's first operation.
    pub first_sequence: u64,
    /// Point operations in order; `sequence` counts up from
    /// `first_sequence` over these and the range deletions together.
    pub ops: Vec<Entry>,
    /// The keyspace id of each of `ops` (0: the default keyspace).
    pub op_keyspaces: Vec<u32>,
    /// The record's range deletions, with their sequence numbers.
    pub range_deletions: Vec<RangeTombstone>,
    /// The keyspace id of each of `range_deletions`.
    pub range_deletion_keyspaces: Vec<u32>,
}

fn read_only_fs() -> Arc<dyn FileSystem> {
    ReadOnlyFs::wrap(Arc::new(PosixFs))
}

/// The layout of the store in `dir`, as its `OPTIONS` file records it.
pub fn layout(dir: &Path) -> Result<Layout> {
    let fs = read_only_fs();
    let options = crate::version::files::options_path(dir);
    if !fs.exists(&options) {
        return Err(no_store(dir));
    }
    crate::db::layout_of(fs.as_ref(), dir, &Options::default()).or_else(|_| {
        // `layout_of` refuses a layout other than the one asked for.
        crate::db::layout_of(
            fs.as_ref(),
            dir,
            &Options::default().layout(Layout::Chunked),
        )
    })
}

fn no_store(dir: &Path) -> Error {
    Error::InvalidArgument(format!("no store in {}", dir.display()))
}

/// Decodes the `CHUNKS` file of the chunked store in `dir`.
pub fn chunk_list(dir: &Path) -> Result<ChunkListDump> {
    let fs = read_only_fs();
    let path = chunk_list_path(dir);
    if !fs.exists(&path) {
        return Err(no_store(dir));
    }
    let list = ChunkList::decode(&path, &fs.read_to_vec(&path)?)?;
    Ok(ChunkListDump { path, list })
}

/// Decodes the MANIFEST of the store in `dir`, every record and the
/// version it produced.
pub fn manifest(dir: &Path) -> Result<ManifestDump> {
    let fs = read_only_fs();
    let order = crate::db::identity::recorded_order(fs.as_ref(), dir)?;
    let number = VersionSet::recover(fs.as_ref(), dir, order.clone())?.manifest_number;
    let path = dir.join(crate::version::files::manifest_name(number));
    let mut reader = LogReader::new(
        fs.open_sequential(&path)?,
        path.clone(),
        RecoveryMode::TolerateTailCorruption,
    );
    // Each keyspace's version; an edit changes the one it names.
    let mut versions = std::collections::BTreeMap::new();
    versions.insert(0, Version::empty(order.clone()));
    let mut records = Vec::new();
    while let Some((offset, record)) = reader.read_record()? {
        let edit =
            VersionEdit::decode(&record).map_err(|why| Error::corruption(&path, offset, why))?;
        let version = versions
            .entry(edit.keyspace)
            .or_insert_with(|| Version::empty(order.clone()));
        *version = version
            .apply(&edit)
            .map_err(|why| Error::corruption(&path, offset, why))?;
        let levels = summarize(version);
        if edit.drop_keyspace {
            versions.remove(&edit.keyspace);
        }
        records.push(ManifestRecord {
            offset,
            edit,
            levels,
        });
    }
    Ok(ManifestDump { path, records })
}

fn summarize(version: &Version) -> Vec<Vec<RunSummary>> {
    version
        .levels
        .iter()
        .map(|level| {
            level
                .runs
                .iter()
                .map(|run| RunSummary {
                    id: run.id,
                    tables: run.tables.iter().map(|t| t.id).collect(),
                })
                .collect()
        })
        .collect()
}

/// Decodes the live table at `offset` of segment `segment`: its
/// properties, index and every entry.
pub fn table(dir: &Path, segment: u64, offset: u64) -> Result<TableDump> {
    if layout(dir)? == Layout::Chunked {
        return funk_table(dir, segment, offset);
    }
    let fs = read_only_fs();
    let order = crate::db::identity::recorded_order(fs.as_ref(), dir)?;
    let recovered = VersionSet::recover(fs.as_ref(), dir, order.clone())?;
    let found = recovered.versions().find_map(|version| {
        version.levels.iter().enumerate().find_map(|(level, l)| {
            l.runs.iter().find_map(|run| {
                run.tables
                    .iter()
                    .find(|t| t.segment == segment && t.offset == offset)
                    .map(|t| (level, run.id, t.clone()))
            })
        })
    });
    let Some((level, run, meta)) = found else {
        return Err(Error::InvalidArgument(format!(
            "no live table at offset {offset} of segment {segment} (see dump --manifest)"
        )));
    };
    let path = segment_path(dir, segment);
    let table = Arc::new(Table::open(
        fs.open_random(&path)?,
        path.clone(),
        segment,
        offset,
        meta.length,
        TableContext {
            order,
            value_log: Some(Arc::new(StoreLogs::new(dir, fs.clone(), 0))),
            ..TableContext::default()
        },
    )?);
    decode_table(table, path, TablePlace::Run { level, run }, (*meta).clone())
}

/// Decodes funk table `number` (at offset 0: a funk table is a file of
/// its own) of the chunked store in `dir`, if a chunk of `CHUNKS` has it.
fn funk_table(dir: &Path, number: u64, offset: u64) -> Result<TableDump> {
    let list = chunk_list(dir)?.list;
    let found = list.keyspaces.iter().find_map(|k| {
        k.chunks
            .iter()
            .find(|c| c.table_number == number && number != 0)
            .map(|c| TablePlace::Chunk {
                keyspace: k.name.clone(),
                start: c.start.clone(),
                log_number: c.log_number,
            })
    });
    let (Some(place), 0) = (found, offset) else {
        return Err(Error::InvalidArgument(format!(
            "no funk table {number} at offset {offset} (a chunked store's tables are \
             NUMBER:0; see dump --manifest)"
        )));
    };
    let fs = read_only_fs();
    let path = funk_table_path(dir, number);
    let file = fs.open_random(&path)?;
    let length = file.len()?;
    let table = Arc::new(Table::open(
        file,
        path.clone(),
        number,
        0,
        length,
        TableContext::default(),
    )?);
    let p = table.properties();
    let meta = TableMeta {
        id: number,
        segment: number,
        offset: 0,
        length,
        smallest: p.smallest_key.clone(),
        largest: p.largest_key.clone(),
        entries: p.entries,
        min_seq: p.min_seq,
        max_seq: p.max_seq,
        sketch: Default::default(),
        logs: p.log_refs.clone(),
    };
    decode_table(table, path, place, meta)
}

fn decode_table(
    table: Arc<Table>,
    path: PathBuf,
    place: TablePlace,
    meta: TableMeta,
) -> Result<TableDump> {
    let offset = table.offset();
    let index = table.index();
    let index = (0..index.len())
        .map(|i| {
            let handle = index.handle(i);
            Ok(IndexEntry {
                key: entry(&path, offset, index.key(i), &[])?,
                block_offset: handle.offset,
                block_size: handle.size,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let mut iter = table.iter_with(false);
    iter.seek_to_first();
    let mut entries = Vec::new();
    while iter.valid() {
        entries.push(entry(&path, offset, iter.key(), iter.value())?);
        iter.next();
    }
    iter.status()?;
    Ok(TableDump {
        path,
        place,
        meta,
        properties: table.properties().clone(),
        index,
        entries,
        log_addresses: log_addresses(&table)?,
        range_deletions: table.range_deletions().iter().cloned().collect(),
    })
}

/// The addresses a log table stores in place of its values.
fn log_addresses(table: &Table) -> Result<Vec<Option<ValueAddress>>> {
    let mut addresses = Vec::new();
    if table.value_log().is_none() {
        return Ok(addresses);
    }
    let index = table.index();
    for i in 0..index.len() {
        let handle = index.handle(i);
        let block = table.block(handle, false)?;
        let mut it = BlockIter::new(&block, table.order().clone());
        it.seek_to_first();
        while it.valid() {
            let address = match is_put(it.key()) {
                false => None,
                true => Some(ValueAddress::decode(it.value()).map_err(|why| {
                    Error::corruption(table.path(), table.offset() + handle.offset, why)
                })?),
            };
            addresses.push(address);
            it.next();
        }
        it.status()?;
    }
    Ok(addresses)
}

fn entry(path: &Path, offset: u64, internal_key: &[u8], value: &[u8]) -> Result<Entry> {
    let parsed = ParsedKey::parse(internal_key)
        .ok_or_else(|| Error::corruption(path, offset, "malformed internal key"))?;
    Ok(Entry {
        key: parsed.user_key.to_vec(),
        sequence: parsed.sequence,
        kind: parsed.kind,
        value: value.to_vec(),
    })
}

/// Decodes log `number` of the store in `dir`, up to a torn tail.
/// In the chunked layout: chunk log or batch log `number`.
pub fn log(dir: &Path, number: u64) -> Result<LogDump> {
    let fs = read_only_fs();
    let path = match layout(dir)? {
        Layout::Lsm if fs.exists(&current_path(dir)) => log_path(dir, number),
        Layout::Lsm => return Err(no_store(dir)),
        Layout::Chunked => [chunk_log_path(dir, number), batch_log_path(dir, number)]
            .into_iter()
            .find(|p| fs.exists(p))
            .unwrap_or_else(|| chunk_log_path(dir, number)),
    };
    let mut reader = LogReader::new(
        fs.open_sequential(&path)?,
        path.clone(),
        RecoveryMode::TolerateTailCorruption,
    );
    let mut records = Vec::new();
    let mut bytes = Vec::new();
    while let Some(offset) = reader.read_record_into(&mut bytes)? {
        if is_relogged(&bytes) {
            // TRIAD's re-logged record: entries with their own sequences.
            let (source, entries) =
                decode_relogged(&bytes).map_err(|why| Error::corruption(&path, offset, why))?;
            records.push(LogRecord {
                offset,
                first_sequence: entries.first().map_or(0, |e| e.seq),
                op_keyspaces: vec![source.keyspace; entries.len()],
                ops: entries
                    .into_iter()
                    .map(|e| Entry {
                        key: e.key,
                        sequence: e.seq,
                        kind: e.kind,
                        value: e.value,
                    })
                    .collect(),
                range_deletions: Vec::new(),
                range_deletion_keyspaces: Vec::new(),
            });
            continue;
        }
        let batch =
            DecodedBatch::parse(&bytes).map_err(|why| Error::corruption(&path, offset, why))?;
        let mut ops = Vec::new();
        let mut range_deletions = Vec::new();
        let (mut op_keyspaces, mut range_deletion_keyspaces) = (Vec::new(), Vec::new());
        let mut sequence = batch.first_sequence;
        batch
            .for_each(|op| {
                match op.kind {
                    OpKind::Point(kind) => {
                        op_keyspaces.push(op.keyspace);
                        ops.push(Entry {
                            key: op.key.to_vec(),
                            sequence,
                            kind,
                            value: op.value.to_vec(),
                        })
                    }
                    OpKind::RangeDeletion => {
                        range_deletion_keyspaces.push(op.keyspace);
                        range_deletions.push(RangeTombstone {
                            start: op.key.to_vec(),
                            end: op.value.to_vec(),
                            seq: sequence,
                        })
                    }
                }
                sequence += 1;
            })
            .map_err(|why| Error::corruption(&path, offset, why))?;
        records.push(LogRecord {
            offset,
            first_sequence: batch.first_sequence,
            ops,
            op_keyspaces,
            range_deletions,
            range_deletion_keyspaces,
        });
    }
    Ok(LogDump { path, records })
}
