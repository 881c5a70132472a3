//! Commands on the key space: deletion, existence, types, and the ordered
//! walks (SCAN, KEYS, DBSIZE). Every value is a string.

use std::collections::HashSet;

use thicketdb::{Keyspace, ReadOptions};

use super::numbers::int_arg;
use super::{expiry_unsupported, syntax_error, CmdResult, Ctx};
use crate::glob::{glob_match, literal_prefix};
use crate::resp::Reply;
use crate::store::{engine_error, Database, Store, Txn};

pub fn del(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    let mut seen = HashSet::new();
    let mut removed = 0;
    for key in &args[1..] {
        if seen.insert(key.as_slice()) && txn.get(key)?.is_some() {
            txn.delete(key)?;
            removed += 1;
        }
    }
    Ok(Reply::Int(removed))
}

pub fn exists(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    txn.pin_snapshot();
    let mut found = 0;
    for key in &args[1..] {
        found += i64::from(txn.get(key)?.is_some());
    }
    Ok(Reply::Int(found))
}

pub fn key_type(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    Ok(Reply::Simple(if txn.get(&args[1])?.is_some() {
        "string"
    } else {
        "none"
    }))
}

/// TTL and PTTL: no key has an expiry, so -1 when present, -2 when absent.
pub fn ttl(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    Ok(Reply::Int(if txn.get(&args[1])?.is_some() {
        -1
    } else {
        -2
    }))
}

/// PERSIST: there is never an expiry to remove.
pub fn persist(_txn: &mut Txn, _args: &[Vec<u8>]) -> CmdResult {
    Ok(Reply::Int(0))
}

/// EXPIRE, SETEX and the other commands that set an expiry.
pub fn expire(_txn: &mut Txn, _args: &[Vec<u8>]) -> CmdResult {
    Err(expiry_unsupported())
}

/// Visits the keys of `database` from `start` on that begin with `prefix`,
/// in order, until `visit` returns false. Returns the key it stopped
/// before, if any.
fn walk_keys(
    store: &Store,
    database: &Database,
    start: &[u8],
    prefix: &[u8],
    visit: impl FnMut(&[u8]) -> bool,
) -> Result<Option<Vec<u8>>, Reply> {
    match store.keyspace(database)? {
        Some(keyspace) => walk_keyspace(&keyspace, start, prefix, visit),
        None => Ok(None),
    }
}

/// `walk_keys` in `keyspace`.
pub fn walk_keyspace(
    keyspace: &Keyspace,
    start: &[u8],
    prefix: &[u8],
    mut visit: impl FnMut(&[u8]) -> bool,
) -> Result<Option<Vec<u8>>, Reply> {
    let opts = ReadOptions {
        lower_bound: Some(prefix.to_vec()),
        fill_cache: false,
        ..ReadOptions::default()
    };
    let mut iter = keyspace.iter(opts).map_err(engine_error)?;
    iter.seek(start.max(prefix));
    let mut stopped_at = None;
    while iter.valid() && iter.key().starts_with(prefix) {
        if !visit(iter.key()) {
            stopped_at = Some(iter.key().to_vec());
            break;
        }
        iter.next();
    }
    iter.status().map_err(engine_error)?;
    Ok(stopped_at)
}

pub fn scan(ctx: &mut Ctx, args: &[Vec<u8>]) -> CmdResult {
    let cursor = std::str::from_utf8(&args[1])
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .ok_or_else(|| Reply::error("ERR invalid cursor"))?;
    let mut pattern: Option<&[u8]> = None;
    let mut count = 10usize;
    let mut string_type = true;
    let mut options = args[2..].chunks(2);
    for option in options.by_ref() {
        let [name, value] = option else {
            return Err(syntax_error());
        };
        match name.to_ascii_uppercase().as_slice() {
            b"MATCH" => pattern = Some(value),
            b"COUNT" => {
                count = usize::try_from(int_arg(value)?)
                    .ok()
                    .filter(|&c| c >= 1)
                    .ok_or_else(syntax_error)?;
            }
            b"TYPE" => string_type = value.eq_ignore_ascii_case(b"string"),
            _ => return Err(syntax_error()),
        }
    }
    let count = count.min(ctx.shared.limits.max_reply_keys);
    let start = if cursor == 0 {
        Vec::new()
    } else {
        ctx.shared
            .cursors
            .get(cursor)
            .ok_or_else(|| Reply::error("ERR invalid cursor"))?
    };
    let prefix = pattern.map(literal_prefix).unwrap_or_default();
    let mut examined = 0;
    let mut keys = Vec::new();
    let database = &ctx.session.database;
    let next = walk_keys(&ctx.shared.store, database, &start, prefix, |key| {
        if examined == count {
            return false;
        }
        examined += 1;
        if string_type && pattern.is_none_or(|p| glob_match(p, key)) {
            keys.push(Reply::Bulk(key.to_vec()));
        }
        true
    })?;
    let next_cursor = match next {
        Some(key) => ctx.shared.cursors.insert(key),
        None => 0,
    };
    Ok(Reply::Array(vec![
        Reply::bulk(next_cursor.to_string()),
        Reply::Array(keys),
    ]))
}

pub fn keys(ctx: &mut Ctx, args: &[Vec<u8>]) -> CmdResult {
    let pattern = &args[1];
    let limit = ctx.shared.limits.max_reply_keys;
    let mut keys = Vec::new();
    let (store, database) = (&ctx.shared.store, &ctx.session.database);
    let stopped = walk_keys(store, database, b"", literal_prefix(pattern), |key| {
        if glob_match(pattern, key) {
            if keys.len() == limit {
                return false;
            }
            keys.push(Reply::Bulk(key.to_vec()));
        }
        true
    })?;
    if stopped.is_some() {
        return Err(Reply::error(format!(
            "ERR KEYS would return more than {limit} keys; use SCAN"
        )));
    }
    Ok(Reply::Array(keys))
}

/// Counts the keys of `database`: a walk over its keys (see
/// docs/server.md).
pub fn count_keys(store: &Store, database: &Database) -> Result<i64, Reply> {
    let mut count = 0;
    walk_keys(store, database, b"", b"", |_| {
        count += 1;
        true
    })?;
    Ok(count)
}

pub fn dbsize(ctx: &mut Ctx, _args: &[Vec<u8>]) -> CmdResult {
    count_keys(&ctx.shared.store, &ctx.session.database).map(Reply::Int)
}
