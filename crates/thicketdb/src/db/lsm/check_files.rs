//! `check_store` of an LSM store: verifies every checksum it holds — CURRENT
//! and the MANIFEST, every segment header and every block of every live
//! table, and every record of the logs still needed. A torn tail of a log
//! or of the MANIFEST is what a crash leaves and is not an error; damage
//! before the tail is. A log table's (TRIAD-LOG) every value is read back
//! from its log at its address, its fragments' checksums verified. Every
//! table's keys are checked against its recorded range and the store's
//! last sequence (`db/check_keys.rs`), every version's runs against the
//! policy's shape (`check_runs.rs`).

use std::path::Path;
use std::sync::Arc;

use crate::db::batch::DecodedBatch;
use crate::db::check_keys::{check_table_keys, Recorded};
use crate::db::check_report::CheckReport;
use crate::db::keyspace_rules::keyspace_options;
use crate::error::{Error, Result};
use crate::format::range_tombstone::successor;
use crate::format::KeyOrder;
use crate::io::segment::{verify_header, SEGMENT_HEADER_LEN};
use crate::io::FileSystem;
use crate::log::{decode_relogged, is_relogged, LogReader, RecoveryMode};
use crate::options::Options;
use crate::table::{Table, TableContext};
use crate::version::files::{log_path, parse_file_name, segment_path, FileKind};
use crate::version::log_values::StoreLogs;
use crate::version::VersionSet;

/// Checks the LSM store in `dir` (its `OPTIONS`, `stored`, already
/// checked by `db::check`), read through `fs`, a read-only file system.
pub(crate) fn check(
    dir: &Path,
    fs: Arc<dyn FileSystem>,
    order: KeyOrder,
    stored: &Options,
) -> Result<CheckReport> {
    let recovered = VersionSet::recover(fs.as_ref(), dir, order.clone())?;
    let mut policies = vec![stored.compaction_policy];
    for k in &recovered.keyspaces {
        let what = format!("options of keyspace {:?} in the MANIFEST", k.def.name);
        let requested = Options::decode(&what, k.def.options.as_bytes())?;
        policies.push(keyspace_options(stored, &requested).compaction_policy);
    }
    for (version, policy) in recovered.versions().zip(policies) {
        super::check_runs::check_runs(dir, version, policy)?;
    }
    let mut report = CheckReport {
        manifest_records: recovered.records,
        ..CheckReport::default()
    };

    let logs_of_tables = Arc::new(StoreLogs::new(dir, fs.clone(), 0));
    let mut segments = std::collections::HashMap::new();
    for version in recovered.versions() {
        segments.extend(version.segment_table_counts());
    }
    for &segment in segments.keys() {
        let path = segment_path(dir, segment);
        let file = fs.open_random(&path)?;
        let mut header = [0u8; SEGMENT_HEADER_LEN as usize];
        file.read_exact_at(0, &mut header)?;
        verify_header(&path, &header)?;
    }
    report.segments = segments.len();
    for meta in recovered.versions().flat_map(|v| v.tables()) {
        let path = segment_path(dir, meta.segment);
        let file = fs.open_random(&path)?;
        let table = Table::open(
            file,
            path,
            meta.segment,
            meta.offset,
            meta.length,
            TableContext {
                order: order.clone(),
                value_log: Some(logs_of_tables.clone()),
                ..TableContext::default()
            },
        )?;
        let table = Arc::new(table);
        table.verify_checksums()?;
        let recorded = Recorded::Table {
            smallest: &meta.smallest,
            largest: &meta.largest,
        };
        check_table_keys(&table, recorded, recovered.last_sequence)?;
        if let Some((start, end)) = table.range_deletions().bounds() {
            // Readers find a table's tombstones through its key range: it
            // must hold every key they cover (those below `end`).
            if start < meta.smallest_user_key()
                || end > successor(meta.largest_user_key()).as_slice()
            {
                return Err(Error::corruption(
                    table.path(),
                    meta.offset,
                    "range tombstones outside the table's recorded key range",
                ));
            }
        }
        report.tables += 1;
        report.log_tables += usize::from(meta.is_log_table());
    }

    let mut logs: Vec<u64> = fs
        .list(dir)?
        .iter()
        .filter_map(|n| match parse_file_name(n)? {
            FileKind::Log(x) if x >= recovered.min_log_number() => Some(x),
            _ => None,
        })
        .collect();
    logs.sort_unstable();
    for number in logs {
        let path = log_path(dir, number);
        let mut reader = LogReader::new(
            fs.open_sequential(&path)?,
            path.clone(),
            RecoveryMode::TolerateTailCorruption,
        );
        let mut record = Vec::new();
        while let Some(offset) = reader.read_record_into(&mut record)? {
            let decoded = if is_relogged(&record) {
                decode_relogged(&record).map(|_| ()).map_err(str::to_string)
            } else {
                DecodedBatch::parse(&record).and_then(|b| b.ops().map(|_| ()))
            };
            decoded.map_err(|why| Error::corruption(&path, offset, why))?;
            report.log_records += 1;
        }
        report.logs += 1;
    }
    Ok(report)
}
