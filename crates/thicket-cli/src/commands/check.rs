//! `check`: verifies every checksum of the live tables, logs and MANIFEST.

use super::{db_dir, Status};
use crate::cli::GlobalArgs;
use crate::error::CliResult;

pub fn run(g: &GlobalArgs) -> CliResult<Status> {
    let dir = db_dir(g)?;
    let report = thicketdb::check::check_store(dir)?;
    println!(
        "ok: {} tables ({} log tables) in {} segments, {} logs ({} records), MANIFEST ({} records)",
        report.tables,
        report.log_tables,
        report.segments,
        report.logs,
        report.log_records,
        report.manifest_records
    );
    Ok(Status::Success)
}
