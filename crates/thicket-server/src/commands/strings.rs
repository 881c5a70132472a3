//! String commands. A string without an expiry is the engine's value,
//! unchanged; one with an expiry lives in the companion (`typed`).
//! Read-modify-write commands run under their keys' locks (see `store`).

use super::expire::{parse_expiry_option, string_meta, ExpiryOption};
use super::numbers::{format_f64, int_arg, not_a_float, not_an_integer, parse_f64, parse_i64};
use super::{syntax_error, CmdResult};
use crate::meta::{Body, Kind, Meta};
use crate::resp::Reply;
use crate::store::Txn;
use crate::typed::wrongtype;

/// Longest string SETRANGE and APPEND may build (Redis's default
/// `proto-max-bulk-len`; the engine refuses values over its own limit).
const MAX_STRING: usize = 512 << 20;

pub fn get(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    Ok(Reply::optional_bulk(txn.get_string(&args[1])?))
}

struct SetOptions {
    only_if_absent: bool,
    only_if_present: bool,
    get: bool,
    expiry: ExpiryOption,
}

fn parse_set_options(options: &[Vec<u8>], now: u64) -> Result<SetOptions, Reply> {
    let mut parsed = SetOptions {
        only_if_absent: false,
        only_if_present: false,
        get: false,
        expiry: ExpiryOption::Unset,
    };
    let mut i = 0;
    while i < options.len() {
        if parse_expiry_option("set", options, &mut i, now, &mut parsed.expiry, false, true)? {
            continue;
        }
        match options[i].to_ascii_uppercase().as_slice() {
            b"NX" if !parsed.only_if_present => parsed.only_if_absent = true,
            b"XX" if !parsed.only_if_absent => parsed.only_if_present = true,
            b"GET" => parsed.get = true,
            _ => return Err(syntax_error()),
        }
        i += 1;
    }
    Ok(parsed)
}

pub fn set(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    let options = parse_set_options(&args[3..], txn.now)?;
    let (key, value) = (&args[1], &args[2]);
    let plain = !options.get
        && !options.only_if_absent
        && !options.only_if_present
        && options.expiry == ExpiryOption::Unset;
    if plain {
        // The common case reads nothing but the companion (to remove a
        // typed key being replaced).
        txn.set_string(key, value, 0)?;
        return Ok(Reply::OK);
    }
    let old = txn.lookup(key)?;
    let old_value = match (&old, options.get) {
        (Some(meta), true) => match &meta.body {
            Body::String(v) => Some(v.clone()),
            Body::Collection(..) => return Err(wrongtype()),
        },
        _ => None,
    };
    let blocked =
        (options.only_if_absent && old.is_some()) || (options.only_if_present && old.is_none());
    if !blocked {
        txn.put_meta(key, &string_meta(value, options.expiry, old.as_ref()))?;
    }
    Ok(match (options.get, blocked) {
        (true, _) => Reply::optional_bulk(old_value),
        (false, false) => Reply::OK,
        (false, true) => Reply::Nil,
    })
}

pub fn setnx(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    if txn.lookup(&args[1])?.is_some() {
        return Ok(Reply::Int(0));
    }
    txn.set_string(&args[1], &args[2], 0)?;
    Ok(Reply::Int(1))
}

pub fn getset(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    let old = txn.get_string(&args[1])?;
    txn.set_string(&args[1], &args[2], 0)?;
    Ok(Reply::optional_bulk(old))
}

pub fn getdel(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    let old = txn.get_string(&args[1])?;
    if old.is_some() {
        txn.delete_key(&args[1])?;
    }
    Ok(Reply::optional_bulk(old))
}

pub fn mget(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    // One point in time: a concurrent MSET is seen whole or not at all.
    txn.pin_snapshot();
    let values = args[1..]
        .iter()
        .map(|key| {
            // MGET answers nil for a key of another type.
            txn.get_string(key)
                .or_else(|e| if e == wrongtype() { Ok(None) } else { Err(e) })
                .map(Reply::optional_bulk)
        })
        .collect::<Result<_, _>>()?;
    Ok(Reply::Array(values))
}

fn check_pairs(args: &[Vec<u8>]) -> Result<(), Reply> {
    if args.len() % 2 == 1 {
        Ok(())
    } else {
        let name = String::from_utf8_lossy(&args[0]).to_lowercase();
        Err(Reply::error(format!(
            "ERR wrong number of arguments for '{name}' command"
        )))
    }
}

pub fn mset(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    check_pairs(args)?;
    for pair in args[1..].chunks(2) {
        txn.set_string(&pair[0], &pair[1], 0)?;
    }
    Ok(Reply::OK)
}

pub fn msetnx(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    check_pairs(args)?;
    for pair in args[1..].chunks(2) {
        if txn.lookup(&pair[0])?.is_some() {
            return Ok(Reply::Int(0));
        }
    }
    mset(txn, args)?;
    Ok(Reply::Int(1))
}

/// A string's value and expiry for a read-modify-write that keeps the
/// expiry (INCR, APPEND, SETRANGE...).
fn current(txn: &mut Txn, key: &[u8]) -> Result<(Option<Vec<u8>>, u64), Reply> {
    Ok(match txn.lookup_as(key, Kind::String)? {
        Some(Meta {
            expire_at,
            body: Body::String(value),
        }) => (Some(value), expire_at),
        _ => (None, 0),
    })
}

fn increment(txn: &mut Txn, key: &[u8], by: i64) -> CmdResult {
    let (value, expire_at) = current(txn, key)?;
    let current = match value {
        Some(value) => parse_i64(&value).ok_or_else(not_an_integer)?,
        None => 0,
    };
    let next = current
        .checked_add(by)
        .ok_or_else(|| Reply::error("ERR increment or decrement would overflow"))?;
    txn.set_string(key, next.to_string().as_bytes(), expire_at)?;
    Ok(Reply::Int(next))
}

pub fn incr(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    increment(txn, &args[1], 1)
}

pub fn decr(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    increment(txn, &args[1], -1)
}

pub fn incrby(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    let by = int_arg(&args[2])?;
    increment(txn, &args[1], by)
}

pub fn decrby(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    let by = int_arg(&args[2])?;
    let negated = by
        .checked_neg()
        .ok_or_else(|| Reply::error("ERR decrement would overflow"))?;
    increment(txn, &args[1], negated)
}

pub fn incrbyfloat(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    let (value, expire_at) = current(txn, &args[1])?;
    let by = parse_f64(&args[2]).ok_or_else(not_a_float)?;
    let current = match value {
        Some(value) => parse_f64(&value).ok_or_else(not_a_float)?,
        None => 0.0,
    };
    let next = current + by;
    if !next.is_finite() {
        return Err(Reply::error("ERR increment would produce NaN or Infinity"));
    }
    let text = format_f64(next);
    txn.set_string(&args[1], text.as_bytes(), expire_at)?;
    Ok(Reply::bulk(text))
}

fn too_long() -> Reply {
    Reply::error("ERR string exceeds maximum allowed size (proto-max-bulk-len)")
}

pub fn append(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    let (value, expire_at) = current(txn, &args[1])?;
    let mut value = value.unwrap_or_default();
    if value.len() + args[2].len() > MAX_STRING {
        return Err(too_long());
    }
    value.extend_from_slice(&args[2]);
    txn.set_string(&args[1], &value, expire_at)?;
    Ok(Reply::Int(value.len() as i64))
}

pub fn setrange(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    let offset = int_arg(&args[2])?;
    let offset = usize::try_from(offset).map_err(|_| Reply::error("ERR offset is out of range"))?;
    let patch = &args[3];
    let (current, expire_at) = current(txn, &args[1])?;
    if patch.is_empty() {
        return Ok(Reply::Int(current.map_or(0, |v| v.len()) as i64));
    }
    if offset.saturating_add(patch.len()) > MAX_STRING {
        return Err(too_long());
    }
    let mut value = current.unwrap_or_default();
    if value.len() < offset + patch.len() {
        value.resize(offset + patch.len(), 0);
    }
    value[offset..offset + patch.len()].copy_from_slice(patch);
    txn.set_string(&args[1], &value, expire_at)?;
    Ok(Reply::Int(value.len() as i64))
}

pub fn strlen(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    Ok(Reply::Int(
        txn.get_string(&args[1])?.map_or(0, |v| v.len()) as i64
    ))
}

pub fn getrange(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    let start = int_arg(&args[2])?;
    let end = int_arg(&args[3])?;
    let value = txn.get_string(&args[1])?.unwrap_or_default();
    Ok(Reply::Bulk(substring(&value, start, end).to_vec()))
}

/// Redis's GETRANGE index rules: negative counts from the end, the range
/// is clamped, an empty or inverted range is empty.
fn substring(value: &[u8], start: i64, end: i64) -> &[u8] {
    let len = value.len() as i64;
    if len == 0 || (start < 0 && end < 0 && start > end) {
        return &[];
    }
    let start = if start < 0 {
        (len + start).max(0)
    } else {
        start
    };
    let end = if end < 0 {
        (len + end).max(0)
    } else {
        end.min(len - 1)
    };
    if start > end {
        return &[];
    }
    &value[start as usize..=end as usize]
}

#[cfg(test)]
mod tests {
    use super::substring;

    #[test]
    fn getrange_indexes() {
        let v = b"Hello World";
        assert_eq!(substring(v, 0, 3), b"Hell");
        assert_eq!(substring(v, -3, -1), b"rld");
        assert_eq!(substring(v, 0, -1), v);
        assert_eq!(substring(v, 10, 100), b"d");
        assert_eq!(substring(v, 5, 3), b"");
        assert_eq!(substring(v, -1, -5), b"");
        assert_eq!(substring(v, 20, 30), b"");
    }
}
