//! A table from fuzzed bytes: open, iterate, point lookups, checksum
//! verification; with and without a block cache. A log table (TRIAD-LOG)
//! reads its values from a log holding the same bytes.
#![no_main]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use thicketdb::format::internal_key::{InternalKey, ValueKind, MAX_SEQUENCE};
use thicketdb::table::{BlockCache, Table, TableContext};
use thicketdb::version::log_values::StoreLogs;

fuzz_target!(|data: &[u8]| {
    // First byte: offset of the table in the file (a segment holds several).
    let Some((&skip, _)) = data.split_first() else {
        return;
    };
    let offset = u64::from(skip % 16).min(data.len() as u64);
    let file = thicketdb_fuzz::random_file(data);
    let (logs, _) = thicketdb_fuzz::single_file("000001.log", data);
    let value_log = Arc::new(StoreLogs::new(Path::new(""), Arc::new(logs), 1 << 16));
    for cache in [None, Some(Arc::new(BlockCache::new(1 << 20)))] {
        let Ok(table) = Table::open(
            file.clone(),
            PathBuf::from("fuzz.seg"),
            1,
            offset,
            data.len() as u64 - offset,
            TableContext {
                cache,
                value_log: Some(value_log.clone()),
                ..TableContext::default()
            },
        ) else {
            return;
        };
        let table = Arc::new(table);
        let _ = table.properties();
        let mut iter = table.iter();
        let target = &data[data.len().saturating_sub(12)..];
        thicketdb_fuzz::exercise(&mut iter, target);
        let _ = table.may_contain(target);
        let _ = table.get(InternalKey::new(target, MAX_SEQUENCE, ValueKind::SEEK).encoded());
        let _ = table.verify_checksums();
    }
});
