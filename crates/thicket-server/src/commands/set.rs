//! Sets: a metadata key and one empty-valued member key per member.

use std::collections::BTreeSet;

use super::collection::{count_arg, pick_distinct, pick_repeating, scan_reply};
use super::numbers::int_arg;
use super::{syntax_error, CmdResult};
use crate::meta::{Collection, Kind};
use crate::resp::Reply;
use crate::store::Txn;

type Members = BTreeSet<Vec<u8>>;

fn members_of(txn: &mut Txn, key: &[u8]) -> Result<Members, Reply> {
    txn.pin_snapshot();
    match txn.collection(key, Kind::Set)? {
        Some((_, c)) => Ok(txn
            .members(key, &c, b"")?
            .into_iter()
            .map(|(m, _)| m)
            .collect()),
        None => Ok(Members::new()),
    }
}

fn array(members: impl IntoIterator<Item = Vec<u8>>) -> Reply {
    Reply::Array(members.into_iter().map(Reply::Bulk).collect())
}

/// Adds `members`; returns how many are new.
fn add(txn: &mut Txn, key: &[u8], members: &[Vec<u8>]) -> Result<i64, Reply> {
    let (expire_at, mut c) = txn.collection_or_new(key, Kind::Set)?;
    let mut added = 0;
    for member in members {
        if txn.member(key, &c, member)?.is_none() {
            txn.put_member(key, &c, member, b"")?;
            c.size += 1;
            added += 1;
        }
    }
    if added > 0 {
        txn.save_collection(key, Kind::Set, expire_at, c)?;
    }
    Ok(added)
}

/// Removes `members`; returns how many were there.
fn remove(txn: &mut Txn, key: &[u8], members: &[Vec<u8>]) -> Result<i64, Reply> {
    let Some((expire_at, mut c)) = txn.collection(key, Kind::Set)? else {
        return Ok(0);
    };
    let mut removed = 0;
    for member in members {
        if txn.member(key, &c, member)?.is_some() {
            txn.delete_member(key, &c, member)?;
            c.size -= 1;
            removed += 1;
        }
    }
    if removed > 0 {
        txn.save_collection(key, Kind::Set, expire_at, c)?;
    }
    Ok(removed)
}

pub fn sadd(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    Ok(Reply::Int(add(txn, &args[1], &args[2..])?))
}

pub fn srem(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    Ok(Reply::Int(remove(txn, &args[1], &args[2..])?))
}

pub fn smembers(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    Ok(array(members_of(txn, &args[1])?))
}

fn contains(
    txn: &mut Txn,
    c: &Option<(u64, Collection)>,
    key: &[u8],
    member: &[u8],
) -> Result<bool, Reply> {
    match c {
        Some((_, c)) => Ok(txn.member(key, c, member)?.is_some()),
        None => Ok(false),
    }
}

pub fn sismember(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    let c = txn.collection(&args[1], Kind::Set)?;
    Ok(Reply::Int(i64::from(contains(
        txn, &c, &args[1], &args[2],
    )?)))
}

pub fn smismember(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    txn.pin_snapshot();
    let c = txn.collection(&args[1], Kind::Set)?;
    let mut out = Vec::new();
    for member in &args[2..] {
        out.push(Reply::Int(i64::from(contains(txn, &c, &args[1], member)?)));
    }
    Ok(Reply::Array(out))
}

pub fn scard(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    Ok(Reply::Int(
        txn.collection(&args[1], Kind::Set)?
            .map_or(0, |(_, c)| c.size) as i64,
    ))
}

pub fn spop(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    let count = match args.len() {
        2 => None,
        3 => Some(positive_count(&args[2])?),
        _ => return Err(syntax_error()),
    };
    let all: Vec<Vec<u8>> = members_of(txn, &args[1])?.into_iter().collect();
    let picked = pick_distinct(&all, count.unwrap_or(1));
    remove(txn, &args[1], &picked)?;
    Ok(match count {
        None => Reply::optional_bulk(picked.into_iter().next()),
        Some(_) => array(picked),
    })
}

fn positive_count(arg: &[u8]) -> Result<usize, Reply> {
    usize::try_from(count_arg(arg)?)
        .map_err(|_| Reply::error("ERR value is out of range, must be positive"))
}

pub fn srandmember(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    let count = match args.len() {
        2 => None,
        3 => Some(count_arg(&args[2])?),
        _ => return Err(syntax_error()),
    };
    let all: Vec<Vec<u8>> = members_of(txn, &args[1])?.into_iter().collect();
    Ok(match count {
        None => Reply::optional_bulk(pick_distinct(&all, 1).pop()),
        Some(_) if all.is_empty() => Reply::Array(Vec::new()),
        Some(n) if n >= 0 => array(pick_distinct(&all, n as usize)),
        Some(n) => array(pick_repeating(&all, n.unsigned_abs() as usize)),
    })
}

pub fn smove(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    let (from, to, member) = (&args[1], &args[2], &args[3]);
    let source = txn.collection(from, Kind::Set)?;
    txn.collection(to, Kind::Set)?;
    if !contains(txn, &source, from, member)? {
        return Ok(Reply::Int(0));
    }
    if from != to {
        remove(txn, from, std::slice::from_ref(member))?;
        add(txn, to, std::slice::from_ref(member))?;
    }
    Ok(Reply::Int(1))
}

#[derive(Clone, Copy)]
enum Op {
    Inter,
    Union,
    Diff,
}

fn combine(txn: &mut Txn, keys: &[Vec<u8>], op: Op) -> Result<Members, Reply> {
    txn.pin_snapshot();
    let mut sets = Vec::with_capacity(keys.len());
    for key in keys {
        sets.push(members_of(txn, key)?);
    }
    let mut sets = sets.into_iter();
    let first = sets.next().unwrap_or_default();
    Ok(sets.fold(first, |acc, s| match op {
        Op::Inter => acc.intersection(&s).cloned().collect(),
        Op::Union => acc.union(&s).cloned().collect(),
        Op::Diff => acc.difference(&s).cloned().collect(),
    }))
}

fn store_result(txn: &mut Txn, args: &[Vec<u8>], op: Op) -> CmdResult {
    let result = combine(txn, &args[2..], op)?;
    let dest = &args[1];
    txn.delete_key(dest)?;
    let members: Vec<Vec<u8>> = result.into_iter().collect();
    add(txn, dest, &members)?;
    Ok(Reply::Int(members.len() as i64))
}

pub fn sinter(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    Ok(array(combine(txn, &args[1..], Op::Inter)?))
}

pub fn sunion(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    Ok(array(combine(txn, &args[1..], Op::Union)?))
}

pub fn sdiff(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    Ok(array(combine(txn, &args[1..], Op::Diff)?))
}

pub fn sinterstore(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    store_result(txn, args, Op::Inter)
}

pub fn sunionstore(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    store_result(txn, args, Op::Union)
}

pub fn sdiffstore(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    store_result(txn, args, Op::Diff)
}

/// `SINTERCARD numkeys key... [LIMIT n]`.
pub fn sintercard(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    let numkeys = int_arg(&args[1]).unwrap_or(0);
    if numkeys <= 0 {
        return Err(Reply::error("ERR numkeys should be greater than 0"));
    }
    let numkeys = numkeys as usize;
    if numkeys > args.len() - 2 {
        return Err(Reply::error(
            "ERR Number of keys can't be greater than number of args",
        ));
    }
    let keys = &args[2..2 + numkeys];
    let mut limit = 0usize;
    let mut rest = args[2 + numkeys..].iter();
    while let Some(word) = rest.next() {
        if !word.eq_ignore_ascii_case(b"LIMIT") {
            return Err(syntax_error());
        }
        // Redis answers a non-number as it answers a negative one.
        let n = int_arg(rest.next().ok_or_else(syntax_error)?).unwrap_or(-1);
        limit = usize::try_from(n).map_err(|_| Reply::error("ERR LIMIT can't be negative"))?;
    }
    let count = combine(txn, keys, Op::Inter)?.len();
    Ok(Reply::Int(
        if limit > 0 { count.min(limit) } else { count } as i64
    ))
}

pub fn sscan(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    let entries = members_of(txn, &args[1])?
        .into_iter()
        .map(|m| (m, None))
        .collect();
    scan_reply(args, entries)
}
