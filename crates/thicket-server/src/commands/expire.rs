//! Key expiry: the EX/PX/EXAT/PXAT/KEEPTTL/PERSIST options of SET and
//! GETEX, EXPIRE and its variants, TTL, PTTL, EXPIRETIME, PEXPIRETIME,
//! PERSIST. An expiry is a Unix time in milliseconds in the key's metadata
//! (`meta`); reads treat a key past it as absent.

use super::numbers::int_arg;
use super::{syntax_error, CmdResult};
use crate::meta::{Body, Meta};
use crate::resp::Reply;
use crate::store::Txn;

/// What the expiry options of SET or GETEX ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExpiryOption {
    /// No option: SET clears the expiry, GETEX keeps it.
    Unset,
    KeepTtl,
    Persist,
    /// Expire at this Unix time in milliseconds (already past when <= now).
    At(i64),
}

/// One of SET's or GETEX's expiry options at `options[*i]` (advancing
/// `*i` past it and its argument); `Ok(false)` when it is not one.
pub fn parse_expiry_option(
    command: &str,
    options: &[Vec<u8>],
    i: &mut usize,
    now: u64,
    parsed: &mut ExpiryOption,
    allow_persist: bool,
    allow_keepttl: bool,
) -> Result<bool, Reply> {
    let word = options[*i].to_ascii_uppercase();
    let (unit_ms, relative) = match word.as_slice() {
        b"KEEPTTL"
            if allow_keepttl && matches!(parsed, ExpiryOption::Unset | ExpiryOption::KeepTtl) =>
        {
            *parsed = ExpiryOption::KeepTtl;
            *i += 1;
            return Ok(true);
        }
        b"PERSIST"
            if allow_persist && matches!(parsed, ExpiryOption::Unset | ExpiryOption::Persist) =>
        {
            *parsed = ExpiryOption::Persist;
            *i += 1;
            return Ok(true);
        }
        b"EX" => (false, true),
        b"PX" => (true, true),
        b"EXAT" => (false, false),
        b"PXAT" => (true, false),
        _ => return Ok(false),
    };
    // Only one form of expiry; the same one twice is allowed (the last wins).
    let Some(value) = options.get(*i + 1) else {
        return Err(syntax_error());
    };
    if !matches!(parsed, ExpiryOption::Unset | ExpiryOption::At(_)) {
        return Err(syntax_error());
    }
    let mut ms = int_arg(value)?;
    let invalid = || Reply::error(format!("ERR invalid expire time in '{command}' command"));
    if ms <= 0 || (!unit_ms && ms > i64::MAX / 1000) {
        return Err(invalid());
    }
    if !unit_ms {
        ms *= 1000;
    }
    if relative {
        ms = ms.checked_add(now as i64).ok_or_else(invalid)?;
    }
    *parsed = ExpiryOption::At(ms);
    *i += 2;
    Ok(true)
}

/// The expiry to store for `At(ms)` (at least 1: 0 means none).
pub fn stored_expiry(at: i64) -> u64 {
    at.max(1) as u64
}

#[derive(Clone, Copy)]
enum Base {
    Now,
    Epoch,
}

fn expire_generic(txn: &mut Txn, args: &[Vec<u8>], unit_ms: bool, base: Base) -> CmdResult {
    let name = String::from_utf8_lossy(&args[0]).to_lowercase();
    let (mut nx, mut xx, mut gt, mut lt) = (false, false, false, false);
    for option in &args[3..] {
        match option.to_ascii_uppercase().as_slice() {
            b"NX" => nx = true,
            b"XX" => xx = true,
            b"GT" => gt = true,
            b"LT" => lt = true,
            _ => {
                return Err(Reply::error(format!(
                    "ERR Unsupported option {}",
                    String::from_utf8_lossy(option)
                )))
            }
        }
    }
    if nx && (xx || gt || lt) {
        return Err(Reply::error(
            "ERR NX and XX, GT or LT options at the same time are not compatible",
        ));
    }
    if gt && lt {
        return Err(Reply::error(
            "ERR GT and LT options at the same time are not compatible",
        ));
    }
    let invalid = || Reply::error(format!("ERR invalid expire time in '{name}' command"));
    let mut when = int_arg(&args[2])?;
    if !unit_ms {
        when = when.checked_mul(1000).ok_or_else(invalid)?;
    }
    if let Base::Now = base {
        when = when.checked_add(txn.now as i64).ok_or_else(invalid)?;
    }
    let key = &args[1];
    let Some(mut meta) = txn.lookup(key)? else {
        return Ok(Reply::Int(0));
    };
    let current = (meta.expire_at != 0).then_some(meta.expire_at as i64);
    let refused = (nx && current.is_some())
        || (xx && current.is_none())
        || (gt && current.is_none_or(|c| when <= c))
        || (lt && current.is_some_and(|c| when >= c));
    if refused {
        return Ok(Reply::Int(0));
    }
    if when <= txn.now as i64 {
        txn.delete_key(key)?;
    } else {
        meta.expire_at = stored_expiry(when);
        txn.put_meta(key, &meta)?;
    }
    Ok(Reply::Int(1))
}

pub fn expire(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    expire_generic(txn, args, false, Base::Now)
}

pub fn pexpire(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    expire_generic(txn, args, true, Base::Now)
}

pub fn expireat(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    expire_generic(txn, args, false, Base::Epoch)
}

pub fn pexpireat(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    expire_generic(txn, args, true, Base::Epoch)
}

/// TTL, PTTL, EXPIRETIME, PEXPIRETIME: -2 absent, -1 no expiry.
fn ttl_generic(txn: &mut Txn, args: &[Vec<u8>], ms: bool, absolute: bool) -> CmdResult {
    let Some(meta) = txn.lookup(&args[1])? else {
        return Ok(Reply::Int(-2));
    };
    if meta.expire_at == 0 {
        return Ok(Reply::Int(-1));
    }
    let at = meta.expire_at as i64;
    let value = if absolute {
        at
    } else {
        (at - txn.now as i64).max(0)
    };
    Ok(Reply::Int(match (ms, absolute) {
        (true, _) => value,
        (false, false) => (value + 500) / 1000,
        (false, true) => value / 1000,
    }))
}

pub fn ttl(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    ttl_generic(txn, args, false, false)
}

pub fn pttl(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    ttl_generic(txn, args, true, false)
}

pub fn expiretime(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    ttl_generic(txn, args, false, true)
}

pub fn pexpiretime(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    ttl_generic(txn, args, true, true)
}

pub fn persist(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    match txn.lookup(&args[1])? {
        Some(mut meta) if meta.expire_at != 0 => {
            meta.expire_at = 0;
            txn.put_meta(&args[1], &meta)?;
            Ok(Reply::Int(1))
        }
        _ => Ok(Reply::Int(0)),
    }
}

/// SETEX and PSETEX: `key seconds|milliseconds value`.
fn setex_generic(txn: &mut Txn, args: &[Vec<u8>], unit_ms: bool) -> CmdResult {
    let name = String::from_utf8_lossy(&args[0]).to_lowercase();
    let option: &[u8] = if unit_ms { b"PX" } else { b"EX" };
    let options = [option.to_vec(), args[2].clone()];
    let mut expiry = ExpiryOption::Unset;
    parse_expiry_option(&name, &options, &mut 0, txn.now, &mut expiry, false, false)?;
    let ExpiryOption::At(at) = expiry else {
        return Err(syntax_error());
    };
    txn.set_string(&args[1], &args[3], stored_expiry(at))?;
    Ok(Reply::OK)
}

pub fn setex(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    setex_generic(txn, args, false)
}

pub fn psetex(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    setex_generic(txn, args, true)
}

/// GETEX key [EX s | PX ms | EXAT t | PXAT t | PERSIST].
pub fn getex(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    let options = &args[2..];
    let mut expiry = ExpiryOption::Unset;
    let mut i = 0;
    while i < options.len() {
        if !parse_expiry_option("getex", options, &mut i, txn.now, &mut expiry, true, false)? {
            return Err(syntax_error());
        }
    }
    let key = &args[1];
    let Some(mut meta) = txn.lookup_as(key, crate::meta::Kind::String)? else {
        return Ok(Reply::Nil);
    };
    let Body::String(value) = meta.body.clone() else {
        return Ok(Reply::Nil);
    };
    match expiry {
        ExpiryOption::At(at) if at <= txn.now as i64 => {
            txn.delete_key(key)?;
        }
        ExpiryOption::At(at) => {
            meta.expire_at = stored_expiry(at);
            txn.put_meta(key, &meta)?;
        }
        ExpiryOption::Persist if meta.expire_at != 0 => {
            meta.expire_at = 0;
            txn.put_meta(key, &meta)?;
        }
        _ => {}
    }
    Ok(Reply::Bulk(value))
}

/// A string's metadata with a new value and the expiry SET's options ask
/// for (`KeepTtl`: the old one).
pub fn string_meta(value: &[u8], expiry: ExpiryOption, old: Option<&Meta>) -> Meta {
    let expire_at = match expiry {
        ExpiryOption::At(at) => stored_expiry(at),
        ExpiryOption::KeepTtl => old.map_or(0, |m| m.expire_at),
        ExpiryOption::Unset | ExpiryOption::Persist => 0,
    };
    Meta {
        expire_at,
        body: Body::String(value.to_vec()),
    }
}
