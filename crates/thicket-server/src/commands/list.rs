//! Lists: a metadata key with the index range `head..tail` and one member
//! key per element, its 8-byte big-endian index as member part (pushes on
//! the left take `head - 1`, on the right `tail`). Blocking pops are
//! refused.

use super::numbers::int_arg;
use super::{syntax_error, CmdResult};
use crate::meta::{Collection, Kind};
use crate::resp::Reply;
use crate::store::Txn;

fn index(i: u64) -> [u8; 8] {
    i.to_be_bytes()
}

fn read(txn: &mut Txn, key: &[u8]) -> Result<Option<Collection>, Reply> {
    txn.pin_snapshot();
    Ok(txn.collection(key, Kind::List)?.map(|(_, c)| c))
}

/// The elements at positions `from..=to` (clamped by the caller).
fn elements(
    txn: &mut Txn,
    key: &[u8],
    c: &Collection,
    from: u64,
    to: u64,
) -> Result<Vec<Vec<u8>>, Reply> {
    let found = txn.members_between(key, c, &index(c.head + from), &index(c.head + to + 1))?;
    Ok(found.into_iter().map(|(_, v)| v).collect())
}

fn all(txn: &mut Txn, key: &[u8], c: &Collection) -> Result<Vec<Vec<u8>>, Reply> {
    if c.size == 0 {
        return Ok(Vec::new());
    }
    elements(txn, key, c, 0, c.size - 1)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum End {
    Left,
    Right,
}

fn end_arg(arg: &[u8]) -> Result<End, Reply> {
    match arg.to_ascii_uppercase().as_slice() {
        b"LEFT" => Ok(End::Left),
        b"RIGHT" => Ok(End::Right),
        _ => Err(syntax_error()),
    }
}

fn push(txn: &mut Txn, key: &[u8], values: &[Vec<u8>], end: End, only_existing: bool) -> CmdResult {
    let existing = txn.collection(key, Kind::List)?;
    if only_existing && existing.is_none() {
        return Ok(Reply::Int(0));
    }
    let (expire_at, mut c) = match existing {
        Some(found) => found,
        None => txn.collection_or_new(key, Kind::List)?,
    };
    for value in values {
        let at = match end {
            End::Left => {
                c.head -= 1;
                c.head
            }
            End::Right => {
                c.tail += 1;
                c.tail - 1
            }
        };
        txn.put_member(key, &c, &index(at), value)?;
        c.size += 1;
    }
    txn.save_collection(key, Kind::List, expire_at, c)?;
    Ok(Reply::Int(c.size as i64))
}

pub fn lpush(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    push(txn, &args[1], &args[2..], End::Left, false)
}

pub fn rpush(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    push(txn, &args[1], &args[2..], End::Right, false)
}

pub fn lpushx(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    push(txn, &args[1], &args[2..], End::Left, true)
}

pub fn rpushx(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    push(txn, &args[1], &args[2..], End::Right, true)
}

/// Removes up to `count` elements from `end`, in pop order.
fn pop_n(txn: &mut Txn, key: &[u8], end: End, count: u64) -> Result<Option<Vec<Vec<u8>>>, Reply> {
    let Some((expire_at, mut c)) = txn.collection(key, Kind::List)? else {
        return Ok(None);
    };
    let mut popped = Vec::new();
    while (popped.len() as u64) < count && c.size > 0 {
        let at = match end {
            End::Left => c.head,
            End::Right => c.tail - 1,
        };
        if let Some(value) = txn.member(key, &c, &index(at))? {
            popped.push(value);
        }
        txn.delete_member(key, &c, &index(at))?;
        match end {
            End::Left => c.head += 1,
            End::Right => c.tail -= 1,
        }
        c.size -= 1;
    }
    txn.save_collection(key, Kind::List, expire_at, c)?;
    Ok(Some(popped))
}

fn pop(txn: &mut Txn, args: &[Vec<u8>], end: End) -> CmdResult {
    let count = match args.len() {
        2 => None,
        3 => Some(
            u64::try_from(int_arg(&args[2])?)
                .map_err(|_| Reply::error("ERR value is out of range, must be positive"))?,
        ),
        _ => return Err(super::collection::wrong_args(args)),
    };
    let popped = pop_n(txn, &args[1], end, count.unwrap_or(1))?;
    Ok(match (popped, count) {
        (None, None) => Reply::Nil,
        (None, Some(_)) => Reply::NilArray,
        (Some(mut values), None) => Reply::optional_bulk(values.pop()),
        (Some(values), Some(_)) => Reply::Array(values.into_iter().map(Reply::Bulk).collect()),
    })
}

pub fn lpop(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    pop(txn, args, End::Left)
}

pub fn rpop(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    pop(txn, args, End::Right)
}

pub fn llen(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    Ok(Reply::Int(read(txn, &args[1])?.map_or(0, |c| c.size) as i64))
}

/// Redis's index rules for LRANGE and LTRIM: `Some((from, to))` inclusive
/// positions, `None` for an empty range.
fn clamp(start: i64, stop: i64, len: u64) -> Option<(u64, u64)> {
    let len = len as i64;
    let start = if start < 0 {
        (start + len).max(0)
    } else {
        start
    };
    let stop = if stop < 0 { stop + len } else { stop };
    if start > stop || start >= len {
        return None;
    }
    Some((start as u64, stop.min(len - 1) as u64))
}

pub fn lrange(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    let (start, stop) = (int_arg(&args[2])?, int_arg(&args[3])?);
    let Some(c) = read(txn, &args[1])? else {
        return Ok(Reply::Array(Vec::new()));
    };
    let Some((from, to)) = clamp(start, stop, c.size) else {
        return Ok(Reply::Array(Vec::new()));
    };
    let values = elements(txn, &args[1], &c, from, to)?;
    Ok(Reply::Array(values.into_iter().map(Reply::Bulk).collect()))
}

/// The position of index argument `i` in a list of `len`, if inside.
fn position(i: i64, len: u64) -> Option<u64> {
    let i = if i < 0 { i + len as i64 } else { i };
    (0..len as i64).contains(&i).then_some(i as u64)
}

pub fn lindex(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    let i = int_arg(&args[2])?;
    let Some(c) = read(txn, &args[1])? else {
        return Ok(Reply::Nil);
    };
    match position(i, c.size) {
        Some(p) => Ok(Reply::optional_bulk(txn.member(
            &args[1],
            &c,
            &index(c.head + p),
        )?)),
        None => Ok(Reply::Nil),
    }
}

pub fn lset(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    let i = int_arg(&args[2])?;
    let Some((_, c)) = txn.collection(&args[1], Kind::List)? else {
        return Err(Reply::error("ERR no such key"));
    };
    let p = position(i, c.size).ok_or_else(|| Reply::error("ERR index out of range"))?;
    txn.put_member(&args[1], &c, &index(c.head + p), &args[3])?;
    Ok(Reply::OK)
}

/// Stores `values` as the whole list (positions from `head` on).
fn rewrite(
    txn: &mut Txn,
    key: &[u8],
    expire_at: u64,
    mut c: Collection,
    values: &[Vec<u8>],
) -> Result<(), Reply> {
    for (i, value) in values.iter().enumerate() {
        txn.put_member(key, &c, &index(c.head + i as u64), value)?;
    }
    for i in values.len() as u64..c.size {
        txn.delete_member(key, &c, &index(c.head + i))?;
    }
    c.size = values.len() as u64;
    c.tail = c.head + c.size;
    txn.save_collection(key, Kind::List, expire_at, c)
}

pub fn linsert(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    let after = match args[2].to_ascii_uppercase().as_slice() {
        b"BEFORE" => false,
        b"AFTER" => true,
        _ => return Err(syntax_error()),
    };
    let key = &args[1];
    let Some((expire_at, c)) = txn.collection(key, Kind::List)? else {
        return Ok(Reply::Int(0));
    };
    let mut values = all(txn, key, &c)?;
    let Some(at) = values.iter().position(|v| *v == args[3]) else {
        return Ok(Reply::Int(-1));
    };
    values.insert(at + usize::from(after), args[4].clone());
    rewrite(txn, key, expire_at, c, &values)?;
    Ok(Reply::Int(values.len() as i64))
}

pub fn lrem(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    let count = int_arg(&args[2])?;
    let key = &args[1];
    let Some((expire_at, c)) = txn.collection(key, Kind::List)? else {
        return Ok(Reply::Int(0));
    };
    let values = all(txn, key, &c)?;
    let limit = if count == 0 {
        usize::MAX
    } else {
        count.unsigned_abs() as usize
    };
    let mut keep = vec![true; values.len()];
    let mut removed = 0;
    let order: Box<dyn Iterator<Item = usize>> = if count < 0 {
        Box::new((0..values.len()).rev())
    } else {
        Box::new(0..values.len())
    };
    for i in order {
        if removed == limit {
            break;
        }
        if values[i] == args[3] {
            keep[i] = false;
            removed += 1;
        }
    }
    if removed > 0 {
        let kept: Vec<Vec<u8>> = values
            .into_iter()
            .zip(keep)
            .filter_map(|(v, k)| k.then_some(v))
            .collect();
        rewrite(txn, key, expire_at, c, &kept)?;
    }
    Ok(Reply::Int(removed as i64))
}

pub fn ltrim(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    let (start, stop) = (int_arg(&args[2])?, int_arg(&args[3])?);
    let key = &args[1];
    let Some((expire_at, mut c)) = txn.collection(key, Kind::List)? else {
        return Ok(Reply::OK);
    };
    let (from, to) = clamp(start, stop, c.size).unwrap_or((c.size, c.size));
    let (new_head, new_tail) = (c.head + from, (c.head + to + 1).min(c.tail));
    let new_tail = new_tail.max(new_head);
    // One range tombstone for each end cut off.
    if new_head > c.head {
        txn.delete_members_between(key, &c, &index(c.head), &index(new_head))?;
    }
    if new_tail < c.tail {
        txn.delete_members_between(key, &c, &index(new_tail), &index(c.tail))?;
    }
    c.head = new_head;
    c.tail = new_tail;
    c.size = new_tail - new_head;
    txn.save_collection(key, Kind::List, expire_at, c)?;
    Ok(Reply::OK)
}

/// `LPOS key element [RANK r] [COUNT n] [MAXLEN m]`.
pub fn lpos(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    let mut rank = 1i64;
    let mut count: Option<usize> = None;
    let mut maxlen = 0usize;
    let mut options = args[3..].iter();
    while let Some(option) = options.next() {
        let value = int_arg(options.next().ok_or_else(syntax_error)?)?;
        match option.to_ascii_uppercase().as_slice() {
            b"RANK" => {
                if value == 0 || value == i64::MIN {
                    return Err(Reply::error(
                        "ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list",
                    ));
                }
                rank = value;
            }
            b"COUNT" => {
                count = Some(
                    usize::try_from(value)
                        .map_err(|_| Reply::error("ERR COUNT can't be negative"))?,
                );
            }
            b"MAXLEN" => {
                maxlen = usize::try_from(value)
                    .map_err(|_| Reply::error("ERR MAXLEN can't be negative"))?;
            }
            _ => return Err(syntax_error()),
        }
    }
    let values = match read(txn, &args[1])? {
        Some(c) => all(txn, &args[1], &c)?,
        None => Vec::new(),
    };
    let positions: Box<dyn Iterator<Item = usize>> = if rank < 0 {
        Box::new((0..values.len()).rev())
    } else {
        Box::new(0..values.len())
    };
    let wanted = match count {
        Some(0) => usize::MAX,
        Some(n) => n,
        None => 1,
    };
    let mut skip = rank.unsigned_abs() - 1;
    let mut found = Vec::new();
    for (examined, i) in positions.enumerate() {
        if maxlen != 0 && examined >= maxlen {
            break;
        }
        if values[i] == args[2] {
            if skip > 0 {
                skip -= 1;
                continue;
            }
            found.push(Reply::Int(i as i64));
            if found.len() == wanted {
                break;
            }
        }
    }
    Ok(match count {
        Some(_) => Reply::Array(found),
        None => found.pop().unwrap_or(Reply::Nil),
    })
}

fn move_element(txn: &mut Txn, from: &[u8], to: &[u8], from_end: End, to_end: End) -> CmdResult {
    // Both types are checked before anything moves.
    if txn.collection(from, Kind::List)?.is_none() {
        return Ok(Reply::Nil);
    }
    txn.collection(to, Kind::List)?;
    let Some(mut popped) = pop_n(txn, from, from_end, 1)? else {
        return Ok(Reply::Nil);
    };
    let Some(value) = popped.pop() else {
        return Ok(Reply::Nil);
    };
    push(txn, to, std::slice::from_ref(&value), to_end, false)?;
    Ok(Reply::Bulk(value))
}

pub fn lmove(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    let (from_end, to_end) = (end_arg(&args[3])?, end_arg(&args[4])?);
    move_element(txn, &args[1], &args[2], from_end, to_end)
}

pub fn rpoplpush(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    move_element(txn, &args[1], &args[2], End::Right, End::Left)
}

/// BLPOP, BRPOP, BLMOVE, BRPOPLPUSH.
pub fn blocking(_txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    Err(Reply::error(format!(
        "ERR thicket: blocking list commands are not supported ('{}'); poll with the non-blocking form",
        String::from_utf8_lossy(&args[0]).to_lowercase()
    )))
}
