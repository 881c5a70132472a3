//! `flush`, `compact` and `checkpoint`.

use std::path::Path;

use super::{open, open_keyspace, Access, Status};
use crate::cli::{GlobalArgs, KeyspaceArg};
use crate::error::CliResult;

pub fn flush(g: &GlobalArgs) -> CliResult<Status> {
    let db = open(g, Access::Existing)?;
    db.flush()?;
    let s = db.stats();
    db.close()?;
    println!("flushed: {} tables in {} segments", s.tables, s.segments);
    Ok(Status::Success)
}

pub fn compact(g: &GlobalArgs, ks: &KeyspaceArg) -> CliResult<Status> {
    let (db, ks) = open_keyspace(g, ks, Access::Existing)?;
    ks.compact_range(None, None)?;
    let s = db.stats();
    drop(ks);
    db.close()?;
    println!("compacted: {} tables in {} segments", s.tables, s.segments);
    Ok(Status::Success)
}

pub fn checkpoint(g: &GlobalArgs, to: &Path) -> CliResult<Status> {
    let db = open(g, Access::Existing)?;
    let report = db.checkpoint(to)?;
    db.close()?;
    println!(
        "checkpoint {}: last sequence {}, {} segments linked, {} copied, {} logs",
        to.display(),
        report.last_sequence,
        report.segments_linked,
        report.segments_copied,
        report.logs
    );
    Ok(Status::Success)
}
