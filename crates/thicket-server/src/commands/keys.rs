//! Commands on whole keys of any type: deletion, existence, TYPE, RENAME,
//! COPY, and the ordered walks (SCAN, KEYS, DBSIZE, RANDOMKEY).

use std::collections::HashSet;

use super::numbers::int_arg;
use super::{syntax_error, CmdResult, Ctx};
use crate::glob::{glob_match, literal_prefix};
use crate::meta::{new_version, Body, Collection, Meta};
use crate::resp::Reply;
use crate::store::{Database, Txn};
use crate::walk::{count_keys, walk_keys};

pub fn del(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    let mut seen = HashSet::new();
    let mut removed = 0;
    for key in &args[1..] {
        if seen.insert(key.as_slice()) && txn.lookup(key)?.is_some() {
            txn.delete_key(key)?;
            removed += 1;
        }
    }
    Ok(Reply::Int(removed))
}

pub fn exists(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    txn.pin_snapshot();
    let mut found = 0;
    for key in &args[1..] {
        found += i64::from(txn.lookup(key)?.is_some());
    }
    Ok(Reply::Int(found))
}

pub fn key_type(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    Ok(Reply::Simple(
        txn.lookup(&args[1])?
            .map_or("none", |meta| meta.kind().name()),
    ))
}

/// A key's whole content: its metadata and, for a collection, its members.
type Whole = (Meta, Vec<(Vec<u8>, Vec<u8>)>);

fn read_whole(txn: &mut Txn, key: &[u8]) -> Result<Option<Whole>, Reply> {
    let Some(meta) = txn.lookup(key)? else {
        return Ok(None);
    };
    let members = match &meta.body {
        Body::String(_) => Vec::new(),
        Body::Collection(_, c) => txn.members(key, c, b"")?,
    };
    Ok(Some((meta, members)))
}

/// Writes `whole` as `key` (replacing what is there), as a new collection
/// version.
fn write_whole(txn: &mut Txn, key: &[u8], whole: Whole) -> Result<(), Reply> {
    let (mut meta, members) = whole;
    txn.delete_key(key)?;
    if let Body::Collection(_, c) = &mut meta.body {
        *c = Collection {
            version: new_version(),
            ..*c
        };
        for (member, value) in &members {
            txn.put_member(key, c, member, value)?;
        }
    }
    txn.put_meta(key, &meta)
}

fn rename_generic(txn: &mut Txn, args: &[Vec<u8>], only_new: bool) -> CmdResult {
    let (from, to) = (&args[1], &args[2]);
    let Some(whole) = read_whole(txn, from)? else {
        return Err(Reply::error("ERR no such key"));
    };
    if from == to {
        return Ok(if only_new { Reply::Int(0) } else { Reply::OK });
    }
    if only_new && txn.lookup(to)?.is_some() {
        return Ok(Reply::Int(0));
    }
    txn.delete_key(from)?;
    write_whole(txn, to, whole)?;
    Ok(if only_new { Reply::Int(1) } else { Reply::OK })
}

pub fn rename(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    rename_generic(txn, args, false)
}

pub fn renamenx(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    rename_generic(txn, args, true)
}

/// `COPY source destination [DB index] [REPLACE]`.
pub fn copy(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    let (from, to) = (&args[1], &args[2]);
    let mut replace = false;
    let mut target: Option<u32> = None;
    let mut options = args[3..].iter();
    while let Some(option) = options.next() {
        match option.to_ascii_uppercase().as_slice() {
            b"REPLACE" => replace = true,
            b"DB" => {
                let index = options.next().ok_or_else(syntax_error)?;
                let index = u32::try_from(int_arg(index)?)
                    .map_err(|_| Reply::error("ERR DB index is out of range"))?;
                target = Some(index);
            }
            _ => return Err(syntax_error()),
        }
    }
    let source_db = txn.database().clone();
    let target_db = target.map_or(source_db.clone(), Database::Index);
    if target_db == source_db && from == to {
        return Err(Reply::error(
            "ERR source and destination objects are the same",
        ));
    }
    let Some(whole) = read_whole(txn, from)? else {
        return Ok(Reply::Int(0));
    };
    txn.select(&target_db);
    let copied = if !replace && txn.lookup(to)?.is_some() {
        false
    } else {
        write_whole(txn, to, whole)?;
        true
    };
    txn.select(&source_db);
    Ok(Reply::Int(i64::from(copied)))
}

pub fn scan(ctx: &mut Ctx, args: &[Vec<u8>]) -> CmdResult {
    let cursor = std::str::from_utf8(&args[1])
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .ok_or_else(|| Reply::error("ERR invalid cursor"))?;
    let mut pattern: Option<&[u8]> = None;
    let mut count = 10usize;
    let mut type_filter: Option<Vec<u8>> = None;
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
            b"TYPE" => type_filter = Some(value.to_ascii_lowercase()),
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
    let now = crate::meta::now_ms();
    let next = walk_keys(
        &ctx.shared.store,
        database,
        &start,
        prefix,
        now,
        |key, kind, _| {
            if examined == count {
                return false;
            }
            examined += 1;
            let type_ok = type_filter
                .as_ref()
                .is_none_or(|t| t.as_slice() == kind.name().as_bytes());
            if type_ok && pattern.is_none_or(|p| glob_match(p, key)) {
                keys.push(Reply::Bulk(key.to_vec()));
            }
            true
        },
    )?;
    let next_cursor = match next {
        Some(key) => ctx.shared.cursors.insert(key),
        None => 0,
    };
    Ok(Reply::Array(vec![
        Reply::bulk(next_cursor.to_string()),
        Reply::Array(keys),
    ]))
}

/// How many live keys after the random point RANDOMKEY picks among: one key
/// after a wide gap would otherwise come up far more often than its
/// neighbours (two keys `bar` and `foo` gave `foo` 1.6% of draws).
const RANDOMKEY_WINDOW: usize = 16;

/// RANDOMKEY: a uniform pick among the first `RANDOMKEY_WINDOW` live keys at
/// or after a random point of the key space, wrapping around to the start,
/// so a database of at most that many keys is sampled uniformly and a larger
/// one with the gap bias smoothed over a window.
pub fn randomkey(ctx: &mut Ctx, _args: &[Vec<u8>]) -> CmdResult {
    let (store, database) = (&ctx.shared.store, &ctx.session.database);
    let now = crate::meta::now_ms();
    let point = crate::commands::collection::random_u64().to_be_bytes();
    let mut window: Vec<Vec<u8>> = Vec::with_capacity(RANDOMKEY_WINDOW);
    walk_keys(store, database, &point, b"", now, |key, _, _| {
        window.push(key.to_vec());
        window.len() < RANDOMKEY_WINDOW
    })?;
    if window.len() < RANDOMKEY_WINDOW {
        walk_keys(store, database, b"", b"", now, |key, _, _| {
            if key >= &point[..] {
                return false;
            }
            window.push(key.to_vec());
            window.len() < RANDOMKEY_WINDOW
        })?;
    }
    if window.is_empty() {
        return Ok(Reply::Nil);
    }
    let pick = crate::commands::collection::random_u64() as usize % window.len();
    Ok(Reply::Bulk(window.swap_remove(pick)))
}

pub fn keys(ctx: &mut Ctx, args: &[Vec<u8>]) -> CmdResult {
    let pattern = &args[1];
    let limit = ctx.shared.limits.max_reply_keys;
    let mut keys = Vec::new();
    let (store, database) = (&ctx.shared.store, &ctx.session.database);
    let now = crate::meta::now_ms();
    let stopped = walk_keys(
        store,
        database,
        b"",
        literal_prefix(pattern),
        now,
        |key, _, _| {
            if glob_match(pattern, key) {
                if keys.len() == limit {
                    return false;
                }
                keys.push(Reply::Bulk(key.to_vec()));
            }
            true
        },
    )?;
    if stopped.is_some() {
        return Err(Reply::error(format!(
            "ERR KEYS would return more than {limit} keys; use SCAN"
        )));
    }
    Ok(Reply::Array(keys))
}

pub fn dbsize(ctx: &mut Ctx, _args: &[Vec<u8>]) -> CmdResult {
    count_keys(
        &ctx.shared.store,
        &ctx.session.database,
        crate::meta::now_ms(),
    )
    .map(|(keys, _)| Reply::Int(keys))
}
