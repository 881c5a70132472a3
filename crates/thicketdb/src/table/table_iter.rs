//! A two-level cursor over a table: the decoded index picks a data block,
//! a block cursor walks it.

use std::sync::Arc;

use super::block::Block;
use super::block_handle::BlockHandle;
use super::block_iter::BlockIter;
use super::context::PreparedValues;
use super::readahead::Readahead;
use super::reader::{is_put, Table};
use crate::error::{Error, Result};
use crate::io::RandomAccessFile;
use crate::iterator::{EntryLocation, InternalIterator};

pub struct TableIterator {
    table: Arc<Table>,
    /// Data block the cursor is in; `UNPOSITIONED` before the first block
    /// or after the last.
    block_index: usize,
    data: Option<BlockIter<Block>>,
    /// Handle of the block `data` walks, to avoid reloading it.
    data_handle: BlockHandle,
    /// First error met; once set the iterator stays invalid.
    status: Option<Error>,
    /// Whether blocks read from the file are kept in the block cache.
    fill_cache: bool,
    /// A log table's current value, read from the log (TRIAD-LOG).
    log_value: Vec<u8>,
    /// A compaction's values of this log table, read before the walk
    /// (each input log once); served first, the log after.
    prepared: Option<Box<dyn PreparedValues>>,
    /// Whether `value` is a log table's value rather than its address.
    resolve_values: bool,
    /// A compaction's read-ahead: data blocks come from spans read at once.
    readahead: Option<Readahead>,
}

const UNPOSITIONED: usize = usize::MAX;

impl TableIterator {
    pub(crate) fn new(table: Arc<Table>, fill_cache: bool) -> TableIterator {
        TableIterator {
            fill_cache,
            table,
            block_index: UNPOSITIONED,
            data: None,
            data_handle: BlockHandle::default(),
            status: None,
            log_value: Vec::new(),
            prepared: None,
            resolve_values: true,
            readahead: None,
        }
    }

    /// Reads data blocks through `file` in spans of `span` bytes, never
    /// past the table (compactions: `compaction_readahead_bytes`).
    pub(crate) fn with_readahead(
        mut self,
        file: Arc<dyn RandomAccessFile>,
        span: u64,
    ) -> TableIterator {
        self.readahead = Some(Readahead::new(file, span));
        self
    }

    /// Serves a forward walk's values from `values`, read before the walk
    /// (a compaction's log pass: `version/log_prefetch.rs`).
    pub(crate) fn with_prepared_log_values(mut self, values: Box<dyn PreparedValues>) -> Self {
        self.prepared = Some(values);
        self
    }

    /// A cursor that returns a log table's stored addresses, not the
    /// values they point at.
    pub(crate) fn with_stored_values(mut self) -> TableIterator {
        self.resolve_values = false;
        self
    }

    /// In a log table, reads the current put's value from the log;
    /// `forward`: the cursor got here moving forward.
    fn read_log_value(&mut self, forward: bool) {
        let Some(log) = self.table.value_log().filter(|_| self.resolve_values) else {
            return;
        };
        let Some(d) = self.data.as_ref().filter(|d| d.valid()) else {
            return;
        };
        if !is_put(d.key()) {
            self.log_value.clear();
            return;
        }
        if let Some(prepared) = self.prepared.as_mut().filter(|_| forward) {
            match prepared.value_of(d.value(), &mut self.log_value) {
                Ok(true) => return,
                Ok(false) => {}
                Err(e) => {
                    self.fail(e);
                    return;
                }
            }
        }
        let block = self.table.offset() + self.data_handle.offset;
        let at = (self.table.path(), block);
        if let Err(e) = log.read_value(d.value(), &mut self.log_value, at) {
            self.fail(e);
        }
    }

    fn index_valid(&self) -> bool {
        self.block_index < self.table.index().len()
    }

    fn fail(&mut self, err: Error) {
        self.status.get_or_insert(err);
        self.data = None;
    }

    /// Points `data` at block `block_index`.
    fn init_data_block(&mut self) {
        if !self.index_valid() {
            self.block_index = UNPOSITIONED;
            self.data = None;
            return;
        }
        let handle = self.table.index().handle(self.block_index);
        if self.data.is_some() && handle == self.data_handle {
            return;
        }
        let block = match self.readahead.as_mut() {
            Some(ahead) => self.table.block_read_ahead(ahead, handle),
            None => self.table.block(handle, self.fill_cache),
        };
        match block {
            Ok(block) => {
                // Hand the key buffer over so stepping across blocks does
                // not allocate.
                let key_buf = self
                    .data
                    .take()
                    .map(BlockIter::into_key_buffer)
                    .unwrap_or_default();
                self.data = Some(BlockIter::with_key_buffer(
                    block,
                    key_buf,
                    self.table.order().clone(),
                ));
                self.data_handle = handle;
            }
            Err(e) => self.fail(e),
        }
    }

    /// Returns true when there is nothing more to do: the data cursor is
    /// valid, an error was recorded, or the index is exhausted.
    fn settled(&mut self) -> bool {
        if self.status.is_some() {
            return true;
        }
        if let Some(d) = &self.data {
            if d.valid() {
                return true;
            }
            if let Err(e) = d.status() {
                self.fail(e);
                return true;
            }
        }
        !self.index_valid()
    }

    /// Moves forward past exhausted (or empty) data blocks.
    fn skip_forward(&mut self) {
        while !self.settled() {
            self.block_index += 1;
            self.init_data_block();
            if let Some(d) = &mut self.data {
                d.seek_to_first();
            }
        }
        self.read_log_value(true);
    }

    /// Moves backward past exhausted (or empty) data blocks.
    fn skip_backward(&mut self) {
        while !self.settled() {
            self.block_index = self.block_index.checked_sub(1).unwrap_or(UNPOSITIONED);
            self.init_data_block();
            if let Some(d) = &mut self.data {
                d.seek_to_last();
            }
        }
        self.read_log_value(false);
    }
}

impl InternalIterator for TableIterator {
    fn valid(&self) -> bool {
        self.status.is_none() && self.data.as_ref().is_some_and(|d| d.valid())
    }

    fn seek_to_first(&mut self) {
        self.block_index = 0;
        self.init_data_block();
        if let Some(d) = &mut self.data {
            d.seek_to_first();
        }
        self.skip_forward();
    }

    fn seek_to_last(&mut self) {
        self.block_index = self
            .table
            .index()
            .len()
            .checked_sub(1)
            .unwrap_or(UNPOSITIONED);
        self.init_data_block();
        if let Some(d) = &mut self.data {
            d.seek_to_last();
        }
        self.skip_backward();
    }

    fn seek(&mut self, target: &[u8]) {
        self.block_index = self.table.index().seek(target);
        self.init_data_block();
        if let Some(d) = &mut self.data {
            d.seek(target);
        }
        self.skip_forward();
    }

    fn next(&mut self) {
        if let Some(d) = &mut self.data {
            d.next();
        }
        self.skip_forward();
    }

    fn prev(&mut self) {
        if let Some(d) = &mut self.data {
            d.prev();
        }
        self.skip_backward();
    }

    fn key(&self) -> &[u8] {
        self.data.as_ref().map_or(&[], |d| d.key())
    }

    fn value(&self) -> &[u8] {
        match (&self.data, self.table.value_log()) {
            (Some(d), Some(_)) if self.resolve_values && is_put(d.key()) => &self.log_value,
            (Some(d), _) => d.value(),
            (None, _) => &[],
        }
    }

    fn status(&self) -> Result<()> {
        match &self.status {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }

    fn location(&self) -> Option<EntryLocation> {
        self.data.as_ref()?.location()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::ValueAddress;
    use crate::table::ValueLog;
    use crate::format::internal_key;
    use crate::iterator::VecIterator;
    use crate::table::options::TableOptions;
    use crate::table::testutil::*;
    use proptest::prelude::*;

    fn small_blocks() -> TableOptions {
        TableOptions {
            block_size: 200,
            restart_interval: 4,
            ..TableOptions::default()
        }
    }

    /// A log whose value for an address is the address reversed; counts
    /// its reads.
    struct ReversingLog {
        singles: std::sync::atomic::AtomicU64,
    }

    impl ValueLog for ReversingLog {
        fn read_value(&self, address: &[u8], out: &mut Vec<u8>, _: (&std::path::Path, u64)) -> Result<()> {
            self.singles.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            out.clear();
            out.extend(address.iter().rev());
            Ok(())
        }
    }

    type Entries = Vec<(Vec<u8>, Vec<u8>)>;

    /// A log table of 300 entries (every fifth a deletion) whose puts
    /// address 10-byte values, read through a `ReversingLog`.
    fn log_table() -> (Arc<Table>, Arc<ReversingLog>, Entries) {
        let entries: Entries = sample_entries(300)
            .into_iter()
            .enumerate()
            .map(|(i, (k, v))| {
                if !is_put(&k) {
                    return (k, v);
                }
                let mut address = Vec::new();
                ValueAddress {
                    record: crate::log::LogAddress::new(7, 1000 * i as u64),
                    offset: 3,
                    len: 10,
                }
                .encode_to(&mut address);
                (k, address)
            })
            .collect();
        let opts = TableOptions {
            log_refs: Some(vec![7]),
            ..small_blocks()
        };
        let (file, summary) = build_table(&entries, &opts);
        let log = Arc::new(ReversingLog {
            singles: Default::default(),
        });
        let table = Table::open(
            Arc::new(file),
            std::path::PathBuf::from("000009.seg"),
            9,
            summary.offset,
            summary.length,
            crate::table::TableContext {
                value_log: Some(log.clone() as Arc<dyn ValueLog>),
                ..Default::default()
            },
        )
        .map(Arc::new)
        .unwrap();
        (table, log, entries)
    }

    fn expected(stored: &[u8], key: &[u8]) -> Vec<u8> {
        match is_put(key) {
            true => stored.iter().rev().copied().collect(),
            false => stored.to_vec(),
        }
    }

    #[test]
    fn a_walk_reads_each_log_value_alone() {
        let (table, log, entries) = log_table();
        let mut it = TableIterator::new(table, false);
        it.seek_to_first();
        for (k, v) in &entries {
            assert_eq!(it.value(), expected(v, k).as_slice());
            it.next();
        }
        let load = |c: &std::sync::atomic::AtomicU64| c.load(std::sync::atomic::Ordering::Relaxed);
        assert_eq!(load(&log.singles), 240);
        // Backward steps and seeks read the right values.
        it.seek_to_last();
        it.prev();
        let (k, v) = &entries[298];
        assert_eq!(it.value(), expected(v, k).as_slice());
        it.seek(&entries[151].0);
        for (k, v) in &entries[151..160] {
            assert_eq!(it.value(), expected(v, k).as_slice());
            it.next();
        }
        it.status().unwrap();
    }

    #[test]
    fn direction_changes_across_block_boundaries() {
        let entries = sample_entries(300);
        let (file, s) = build_table(&entries, &small_blocks());
        let t = open_table(file, &s, None).unwrap();
        let mut it = t.iter();
        it.seek_to_first();
        for i in 0..entries.len() - 1 {
            assert_eq!(it.key(), entries[i].0.as_slice());
            it.next();
            assert_eq!(it.key(), entries[i + 1].0.as_slice());
            it.prev();
            assert_eq!(it.key(), entries[i].0.as_slice());
            it.next();
        }
        it.next();
        assert!(!it.valid());
        it.seek_to_first();
        it.prev();
        assert!(!it.valid());
        assert!(it.status().is_ok());
    }

    #[test]
    fn corruption_mid_iteration_stops_with_status() {
        let entries = sample_entries(300);
        let (file, s) = build_table(&entries, &small_blocks());
        // Damage the last data block: the footer and index stay intact.
        let t = open_table(MemFile::new(file.bytes()), &s, None).unwrap();
        let mut it = t.iter();
        it.seek_to_last();
        let last_block = it.data_handle;
        let pos = s.offset + last_block.offset + 2;
        let t = open_table(file.with_flipped(pos as usize), &s, None).unwrap();
        let mut it = t.iter();
        it.seek_to_first();
        let mut seen = 0;
        while it.valid() {
            seen += 1;
            it.next();
        }
        assert!(seen > 0 && seen < entries.len());
        assert!(it.status().unwrap_err().is_corruption());
        it.seek_to_first();
        assert!(!it.valid(), "errors are sticky");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(32))]

        #[test]
        fn seek_matches_a_sorted_vector(n in 0u32..400, targets in proptest::collection::vec((0u32..900, 99_500u64..100_100), 1..50)) {
            let entries = sample_entries(n);
            let (file, s) = build_table(&entries, &small_blocks());
            let t = open_table(file, &s, None).unwrap();
            let mut it = t.iter();
            let mut reference = VecIterator::new(entries.clone(), crate::format::KeyOrder::Bytewise);
            for (user, seq) in targets {
                let target = internal_key::InternalKey::new(&ukey(user), seq, internal_key::ValueKind::SEEK);
                it.seek(target.encoded());
                reference.seek(target.encoded());
                prop_assert_eq!(it.valid(), reference.valid());
                if reference.valid() {
                    prop_assert_eq!(it.key(), reference.key());
                    prop_assert_eq!(it.value(), reference.value());
                    it.prev();
                    reference.prev();
                    prop_assert_eq!(it.valid(), reference.valid());
                    if reference.valid() {
                        prop_assert_eq!(it.key(), reference.key());
                    }
                }
            }
        }
    }
}
