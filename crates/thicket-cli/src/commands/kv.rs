//! `put`, `get`, `delete`, `delete-range`.

use std::io::Write;

use thicketdb::WriteOptions;

use super::{open_keyspace, Access, Status};
use crate::cli::{GlobalArgs, KeyspaceArg};
use crate::error::CliResult;

pub fn put(
    g: &GlobalArgs,
    ks: &KeyspaceArg,
    key: &[u8],
    value: &[u8],
    sync: bool,
) -> CliResult<Status> {
    let (db, ks) = open_keyspace(g, ks, Access::Create)?;
    ks.put_opt(key, value, WriteOptions { sync })?;
    drop(ks);
    db.close()?;
    Ok(Status::Success)
}

pub fn get(g: &GlobalArgs, ks: &KeyspaceArg, key: &[u8]) -> CliResult<Status> {
    let (db, ks) = open_keyspace(g, ks, Access::ReadOnly)?;
    let value = ks.get(key)?;
    drop(ks);
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

pub fn delete(g: &GlobalArgs, ks: &KeyspaceArg, key: &[u8], sync: bool) -> CliResult<Status> {
    let (db, ks) = open_keyspace(g, ks, Access::Create)?;
    ks.delete_opt(key, WriteOptions { sync })?;
    drop(ks);
    db.close()?;
    Ok(Status::Success)
}

pub fn delete_range(
    g: &GlobalArgs,
    ks: &KeyspaceArg,
    from: &[u8],
    to: &[u8],
    sync: bool,
) -> CliResult<Status> {
    let (db, ks) = open_keyspace(g, ks, Access::Create)?;
    ks.delete_range_opt(from, to, WriteOptions { sync })?;
    drop(ks);
    db.close()?;
    Ok(Status::Success)
}
