//! `check_store` for a chunked store: the chunk list's checksum and
//! invariants, every block of every funk table, and every record of every
//! chunk log and of the batch log (a torn tail is what a crash leaves, not
//! an error; damage before it is, unless only records recovery ignores
//! follow it: an asynchronous-mode crash's, `incarnations.rs`). Each
//! funk's keys must lie in its chunk's range and carry no sequence above
//! the list's last one (`db/check_keys.rs`).

use std::path::Path;

use super::files::{batch_log_path, chunk_list_path, chunk_log_path};
use super::funk_tables::open_funk_table;
use super::incarnations::Incarnations;
use super::manifest::ChunkList;
use crate::db::batch::DecodedBatch;
use crate::db::check_keys::{check_table_keys, Recorded};
use crate::db::check_report::CheckReport;
use crate::error::{Error, Result};
use crate::io::FileSystem;
use crate::log::{LogReader, RecoveryMode};
use crate::table::TableContext;

/// Checks the chunked store in `dir` (the caller holds its lock).
pub fn check(dir: &Path, fs: &dyn FileSystem) -> Result<CheckReport> {
    let list_path = chunk_list_path(dir);
    let list = ChunkList::decode(&list_path, &fs.read_to_vec(&list_path)?)?;
    let mut report = CheckReport {
        manifest_records: 1,
        ..CheckReport::default()
    };
    let ignored = super::open::ignored_by_recovery(dir, fs)?;
    for keyspace in &list.keyspaces {
        let ends = keyspace.chunks.iter().skip(1).map(|c| Some(&c.start[..]));
        for (chunk, end) in keyspace.chunks.iter().zip(ends.chain([None])) {
            if chunk.table_number != 0 {
                let table = open_funk_table(fs, dir, chunk.table_number, TableContext::default())?;
                table.verify_checksums()?;
                let recorded = Recorded::Chunk {
                    start: &chunk.start,
                    end,
                };
                check_table_keys(&table, recorded, list.last_sequence)?;
                report.tables += 1;
            }
            report.log_records += check_log(fs, &chunk_log_path(dir, chunk.log_number), &ignored)?;
            report.logs += 1;
        }
    }
    report.log_records += check_log(fs, &batch_log_path(dir, list.batch_log_number), &ignored)?;
    report.logs += 1;
    Ok(report)
}

/// Reads every record of a log of batches; returns how many count (those
/// `ignored` does not ignore).
fn check_log(fs: &dyn FileSystem, path: &Path, ignored: &Incarnations) -> Result<u64> {
    let mut reader = LogReader::new(
        fs.open_sequential(path)?,
        path.to_path_buf(),
        RecoveryMode::SkipAnyCorruption,
    );
    let mut records = 0;
    let mut last_counted = None;
    while let Some((offset, record)) = reader.read_record()? {
        let batch =
            DecodedBatch::parse(&record).map_err(|why| Error::corruption(path, offset, why))?;
        batch
            .ops()
            .map_err(|why| Error::corruption(path, offset, why))?;
        if !ignored.ignores(batch.first_sequence) {
            records += 1;
            last_counted = Some(offset);
        }
    }
    let damage = reader
        .skipped()
        .first()
        .map(|s| (s.offset, s.reason.clone()));
    if let (Some((at, why)), Some(last)) = (damage, last_counted) {
        if at < last {
            return Err(Error::corruption(path, at, why));
        }
    }
    Ok(records)
}
