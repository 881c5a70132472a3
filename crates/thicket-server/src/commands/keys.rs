//! Commands on the key space: deletion, existence, types, and the ordered
//! walks (SCAN, KEYS, DBSIZE, FLUSHDB). Every value is a string.

use std::collections::HashSet;

use thicketdb::{ReadOptions, WriteBatch};

use super::numbers::int_arg;
use super::{expiry_unsupported, syntax_error, CmdResult, Ctx};
use crate::glob::{glob_match, literal_prefix};
use crate::resp::Reply;
use crate::store::{engine_error, Database, Store, Txn};

/// Deletions per engine batch in FLUSHDB.
const FLUSH_BATCH: usize = 1024;

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
    mut visit: impl FnMut(&[u8]) -> bool,
) -> Result<Option<Vec<u8>>, Reply> {
    let opts = ReadOptions {
        lower_bound: Some(prefix.to_vec()),
        fill_cache: false,
        ..ReadOptions::default()
    };
    let Some(mut iter) = store.iter(database, opts)? else {
        return Ok(None);
    };
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

/// FLUSHDB and FLUSHALL take `ASYNC` or `SYNC` (both synchronous here).
fn check_flush_mode(args: &[Vec<u8>]) -> Result<(), Reply> {
    match args.get(1).map(|a| a.to_ascii_uppercase()) {
        None => Ok(()),
        Some(mode) if args.len() == 2 && (mode == b"ASYNC" || mode == b"SYNC") => Ok(()),
        Some(_) => Err(syntax_error()),
    }
}

/// FLUSHDB: deletes every key of the selected database.
pub fn flushdb(ctx: &mut Ctx, args: &[Vec<u8>]) -> CmdResult {
    check_flush_mode(args)?;
    clear(&ctx.shared.store, &ctx.session.database)?;
    ctx.session.wrote = true;
    ctx.shared.durability.note_write();
    Ok(Reply::OK)
}

/// FLUSHALL: deletes every key of every database, numbered and named (every
/// keyspace of the store).
pub fn flushall(ctx: &mut Ctx, args: &[Vec<u8>]) -> CmdResult {
    check_flush_mode(args)?;
    let store = &ctx.shared.store;
    for name in store.db().list_keyspaces() {
        let database = Database::Named(name);
        match clear(store, &database) {
            // Dropped meanwhile: nothing left to clear.
            Err(_) if store.keyspace(&database).is_err() => {}
            cleared => cleared?,
        }
    }
    ctx.session.wrote = true;
    ctx.shared.durability.note_write();
    Ok(Reply::OK)
}

/// Deletes the keys of `database` in batches of `FLUSH_BATCH`.
fn clear(store: &Store, database: &Database) -> Result<(), Reply> {
    let Some(keyspace) = store.keyspace(database)? else {
        return Ok(());
    };
    let db = store.db();
    let mut batch = WriteBatch::new();
    let mut failed = None;
    walk_keys(store, database, b"", b"", |key| {
        if let Err(e) = batch.delete_in(&keyspace, key) {
            failed = Some(e);
            return false;
        }
        if batch.len() >= FLUSH_BATCH {
            if let Err(e) = db.write(std::mem::take(&mut batch)) {
                failed = Some(e);
                return false;
            }
        }
        true
    })?;
    if let Some(e) = failed {
        return Err(engine_error(e));
    }
    db.write(batch).map_err(engine_error)
}
