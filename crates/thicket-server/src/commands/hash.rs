//! Hashes: a metadata key and one member key per field, the field's value
//! as the member's value (`meta`).

use super::collection::{count_arg, pick_distinct, pick_repeating, scan_reply, wrong_args};
use super::numbers::{format_f64, int_arg, parse_f64, parse_i64};
use super::CmdResult;
use crate::meta::{Collection, Kind};
use crate::resp::Reply;
use crate::store::{Pairs, Txn};

fn read(txn: &mut Txn, key: &[u8]) -> Result<Option<Collection>, Reply> {
    txn.pin_snapshot();
    Ok(txn.collection(key, Kind::Hash)?.map(|(_, c)| c))
}

fn fields(txn: &mut Txn, key: &[u8]) -> Result<Pairs, Reply> {
    match read(txn, key)? {
        Some(c) => txn.members(key, &c, b""),
        None => Ok(Vec::new()),
    }
}

/// Sets `pairs`; returns how many fields are new.
fn set_fields(txn: &mut Txn, key: &[u8], pairs: &[Vec<u8>]) -> Result<i64, Reply> {
    let (expire_at, mut c) = txn.collection_or_new(key, Kind::Hash)?;
    let mut added = 0;
    for pair in pairs.chunks(2) {
        if txn.member(key, &c, &pair[0])?.is_none() {
            added += 1;
            c.size += 1;
        }
        txn.put_member(key, &c, &pair[0], &pair[1])?;
    }
    txn.save_collection(key, Kind::Hash, expire_at, c)?;
    Ok(added)
}

pub fn hset(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    if !args.len().is_multiple_of(2) {
        return Err(wrong_args(args));
    }
    Ok(Reply::Int(set_fields(txn, &args[1], &args[2..])?))
}

pub fn hmset(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    hset(txn, args)?;
    Ok(Reply::OK)
}

pub fn hsetnx(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    if let Some((_, c)) = txn.collection(&args[1], Kind::Hash)? {
        if txn.member(&args[1], &c, &args[2])?.is_some() {
            return Ok(Reply::Int(0));
        }
    }
    Ok(Reply::Int(set_fields(txn, &args[1], &args[2..4])?))
}

pub fn hget(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    match read(txn, &args[1])? {
        Some(c) => Ok(Reply::optional_bulk(txn.member(&args[1], &c, &args[2])?)),
        None => Ok(Reply::Nil),
    }
}

pub fn hmget(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    let c = read(txn, &args[1])?;
    let mut out = Vec::new();
    for field in &args[2..] {
        out.push(match &c {
            Some(c) => Reply::optional_bulk(txn.member(&args[1], c, field)?),
            None => Reply::Nil,
        });
    }
    Ok(Reply::Array(out))
}

pub fn hdel(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    let key = &args[1];
    let Some((expire_at, mut c)) = txn.collection(key, Kind::Hash)? else {
        return Ok(Reply::Int(0));
    };
    let mut removed = 0;
    for field in &args[2..] {
        if txn.member(key, &c, field)?.is_some() {
            txn.delete_member(key, &c, field)?;
            c.size -= 1;
            removed += 1;
        }
    }
    if removed > 0 {
        txn.save_collection(key, Kind::Hash, expire_at, c)?;
    }
    Ok(Reply::Int(removed))
}

pub fn hgetall(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    Ok(Reply::Map(
        fields(txn, &args[1])?
            .into_iter()
            .map(|(f, v)| (Reply::Bulk(f), Reply::Bulk(v)))
            .collect(),
    ))
}

pub fn hkeys(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    Ok(Reply::Array(
        fields(txn, &args[1])?
            .into_iter()
            .map(|(f, _)| Reply::Bulk(f))
            .collect(),
    ))
}

pub fn hvals(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    Ok(Reply::Array(
        fields(txn, &args[1])?
            .into_iter()
            .map(|(_, v)| Reply::Bulk(v))
            .collect(),
    ))
}

pub fn hlen(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    Ok(Reply::Int(read(txn, &args[1])?.map_or(0, |c| c.size) as i64))
}

pub fn hexists(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    let found = match read(txn, &args[1])? {
        Some(c) => txn.member(&args[1], &c, &args[2])?.is_some(),
        None => false,
    };
    Ok(Reply::Int(i64::from(found)))
}

pub fn hstrlen(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    let len = match read(txn, &args[1])? {
        Some(c) => txn.member(&args[1], &c, &args[2])?.map_or(0, |v| v.len()),
        None => 0,
    };
    Ok(Reply::Int(len as i64))
}

fn current_field(txn: &mut Txn, key: &[u8], field: &[u8]) -> Result<Option<Vec<u8>>, Reply> {
    match txn.collection(key, Kind::Hash)? {
        Some((_, c)) => txn.member(key, &c, field),
        None => Ok(None),
    }
}

pub fn hincrby(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    let by = int_arg(&args[3])?;
    let current = match current_field(txn, &args[1], &args[2])? {
        Some(v) => parse_i64(&v).ok_or_else(|| Reply::error("ERR hash value is not an integer"))?,
        None => 0,
    };
    let next = current
        .checked_add(by)
        .ok_or_else(|| Reply::error("ERR increment or decrement would overflow"))?;
    set_fields(
        txn,
        &args[1],
        &[args[2].clone(), next.to_string().into_bytes()],
    )?;
    Ok(Reply::Int(next))
}

pub fn hincrbyfloat(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    let by = parse_f64(&args[3]).ok_or_else(|| Reply::error("ERR value is not a valid float"))?;
    if by.is_infinite() {
        return Err(Reply::error("ERR value is NaN or Infinity"));
    }
    let current = match current_field(txn, &args[1], &args[2])? {
        Some(v) => parse_f64(&v).ok_or_else(|| Reply::error("ERR hash value is not a float"))?,
        None => 0.0,
    };
    let next = current + by;
    if !next.is_finite() {
        return Err(Reply::error("ERR increment would produce NaN or Infinity"));
    }
    let text = format_f64(next);
    set_fields(txn, &args[1], &[args[2].clone(), text.clone().into_bytes()])?;
    Ok(Reply::bulk(text))
}

/// `HRANDFIELD key [count [WITHVALUES]]`.
pub fn hrandfield(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    let count = args.get(2).map(|a| count_arg(a)).transpose()?;
    let with_values = match args.get(3) {
        None => false,
        Some(w) if args.len() == 4 && w.eq_ignore_ascii_case(b"WITHVALUES") => true,
        Some(_) => return Err(super::syntax_error()),
    };
    let all = fields(txn, &args[1])?;
    let Some(count) = count else {
        return Ok(match pick_distinct(&all, 1).pop() {
            Some((f, _)) => Reply::Bulk(f),
            None => Reply::Nil,
        });
    };
    if all.is_empty() {
        return Ok(Reply::Array(Vec::new()));
    }
    let picked = if count >= 0 {
        pick_distinct(&all, count as usize)
    } else {
        pick_repeating(&all, count.unsigned_abs() as usize)
    };
    let mut out = Vec::new();
    for (f, v) in picked {
        out.push(Reply::Bulk(f));
        if with_values {
            out.push(Reply::Bulk(v));
        }
    }
    Ok(Reply::Array(out))
}

pub fn hscan(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    let entries = fields(txn, &args[1])?
        .into_iter()
        .map(|(f, v)| (f, Some(v)))
        .collect();
    scan_reply(args, entries)
}
