//! `put`, `get`, `delete`, `delete-range`.

use std::io::Write;

use thicketdb::WriteOptions;

use super::{open, Access, Status};
use crate::cli::GlobalArgs;
use crate::error::CliResult;

pub fn put(g: &GlobalArgs, key: &[u8], value: &[u8], sync: bool) -> CliResult<Status> {
    let db = open(g, Access::Create)?;
    db.put_opt(key, value, WriteOptions { sync })?;
    db.close()?;
    Ok(Status::Success)
}

pub fn get(g: &GlobalArgs, key: &[u8]) -> CliResult<Status> {
    let db = open(g, Access::ReadOnly)?;
    let value = db.get(key)?;
    db.close()?;
    match value {
        Some(v) => {
            let mut out = std::io::stdout().lock();
            out.write_all(&v)?;
            out.write_all(b"\n")?;
            out.flush()?;
            Ok(Status::Success)
        }
        None => Ok(Status::NotFound),
    }
}

pub fn delete(g: &GlobalArgs, key: &[u8], sync: bool) -> CliResult<Status> {
    let db = open(g, Access::Create)?;
    db.delete_opt(key, WriteOptions { sync })?;
    db.close()?;
    Ok(Status::Success)
}

pub fn delete_range(g: &GlobalArgs, from: &[u8], to: &[u8], sync: bool) -> CliResult<Status> {
    let db = open(g, Access::Create)?;
    db.delete_range_opt(from, to, WriteOptions { sync })?;
    db.close()?;
    Ok(Status::Success)
}
