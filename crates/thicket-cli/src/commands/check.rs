//! `check`: verifies every checksum of the live tables, logs and MANIFEST
//! (in the chunked layout: funk tables, chunk and batch logs, `CHUNKS`).

use thicketdb::Layout;

use super::{db_dir, Status};
use crate::cli::GlobalArgs;
use crate::error::CliResult;

pub fn run(g: &GlobalArgs) -> CliResult<Status> {
    let dir = db_dir(g)?;
    let report = thicketdb::check::check_store(dir)?;
    match thicketdb::dump::layout(dir)? {
        Layout::Lsm => println!(
            "ok: {} tables ({} log tables) in {} segments, {} logs ({} records), MANIFEST ({} records)",
            report.tables,
            report.log_tables,
            report.segments,
            report.logs,
            report.log_records,
            report.manifest_records
        ),
        Layout::Chunked => println!(
            "ok: {} funk tables, {} chunk and batch logs ({} records), CHUNKS",
            report.tables, report.logs, report.log_records
        ),
    }
    Ok(Status::Success)
}
