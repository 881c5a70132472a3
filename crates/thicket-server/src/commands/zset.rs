//! Sorted sets: a metadata key and two member keys per member: `0x00
//! member` → its score (8 bytes, `f64` bits), and `0x01 score member`
//! (score as order-preserving bytes, `meta::score_key`) → empty, so the
//! members read in score order, ties by member, as Redis orders them.

use super::collection::{count_arg, scan_reply};
use super::numbers::{format_g17, int_arg, parse_f64};
use super::{syntax_error, CmdResult};
use crate::meta::{score_from_key, score_key, Collection, Kind};
use crate::resp::Reply;
use crate::store::Txn;

const BY_MEMBER: u8 = 0x00;
const BY_SCORE: u8 = 0x01;

fn member_part(member: &[u8]) -> Vec<u8> {
    [&[BY_MEMBER][..], member].concat()
}

fn index_part(score: f64, member: &[u8]) -> Vec<u8> {
    [&[BY_SCORE][..], &score_key(score), member].concat()
}

fn score_of(
    txn: &mut Txn,
    key: &[u8],
    c: &Collection,
    member: &[u8],
) -> Result<Option<f64>, Reply> {
    Ok(txn
        .member(key, c, &member_part(member))?
        .and_then(|v| v.try_into().ok())
        .map(|bits: [u8; 8]| f64::from_bits(u64::from_be_bytes(bits))))
}

/// Every member in order, with its score.
fn entries(txn: &mut Txn, key: &[u8], c: &Collection) -> Result<Vec<(f64, Vec<u8>)>, Reply> {
    let found = txn.members(key, c, &[BY_SCORE])?;
    Ok(found
        .into_iter()
        .filter_map(|(part, _)| {
            let score: [u8; 8] = part.get(1..9)?.try_into().ok()?;
            Some((score_from_key(score), part[9..].to_vec()))
        })
        .collect())
}

fn read(txn: &mut Txn, key: &[u8]) -> Result<Option<Collection>, Reply> {
    txn.pin_snapshot();
    Ok(txn.collection(key, Kind::ZSet)?.map(|(_, c)| c))
}

fn read_entries(txn: &mut Txn, key: &[u8]) -> Result<Vec<(f64, Vec<u8>)>, Reply> {
    match read(txn, key)? {
        Some(c) => entries(txn, key, &c),
        None => Ok(Vec::new()),
    }
}

/// Sets `member`'s score (it may be new); returns whether it was new.
fn put_score(
    txn: &mut Txn,
    key: &[u8],
    c: &mut Collection,
    member: &[u8],
    old: Option<f64>,
    score: f64,
) -> Result<(), Reply> {
    if let Some(old) = old {
        txn.delete_member(key, c, &index_part(old, member))?;
    } else {
        c.size += 1;
    }
    txn.put_member(key, c, &member_part(member), &score.to_bits().to_be_bytes())?;
    txn.put_member(key, c, &index_part(score, member), b"")
}

fn remove_member(
    txn: &mut Txn,
    key: &[u8],
    c: &mut Collection,
    member: &[u8],
    score: f64,
) -> Result<(), Reply> {
    txn.delete_member(key, c, &member_part(member))?;
    txn.delete_member(key, c, &index_part(score, member))?;
    c.size -= 1;
    Ok(())
}

fn not_float() -> Reply {
    Reply::error("ERR value is not a valid float")
}

fn score_reply(score: f64) -> Reply {
    Reply::bulk(format_g17(score))
}

pub fn zadd(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    let (mut nx, mut xx, mut gt, mut lt, mut ch, mut incr) =
        (false, false, false, false, false, false);
    let mut i = 2;
    while i < args.len() {
        match args[i].to_ascii_uppercase().as_slice() {
            b"NX" => nx = true,
            b"XX" => xx = true,
            b"GT" => gt = true,
            b"LT" => lt = true,
            b"CH" => ch = true,
            b"INCR" => incr = true,
            _ => break,
        }
        i += 1;
    }
    let pairs = &args[i..];
    if pairs.is_empty() || !pairs.len().is_multiple_of(2) {
        return Err(syntax_error());
    }
    if nx && xx {
        return Err(Reply::error(
            "ERR XX and NX options at the same time are not compatible",
        ));
    }
    if (nx && (gt || lt)) || (gt && lt) {
        return Err(Reply::error(
            "ERR GT, LT, and/or NX options at the same time are not compatible",
        ));
    }
    if incr && pairs.len() > 2 {
        return Err(Reply::error(
            "ERR INCR option supports a single increment-element pair",
        ));
    }
    let mut parsed = Vec::with_capacity(pairs.len() / 2);
    for pair in pairs.chunks(2) {
        parsed.push((parse_f64(&pair[0]).ok_or_else(not_float)?, &pair[1]));
    }
    let key = &args[1];
    let (expire_at, mut c) = txn.collection_or_new(key, Kind::ZSet)?;
    let (mut added, mut changed) = (0, 0);
    let mut incr_result = None;
    for (score, member) in parsed {
        let old = score_of(txn, key, &c, member)?;
        if (nx && old.is_some()) || (xx && old.is_none()) {
            continue;
        }
        let new = match (incr, old) {
            (true, Some(old)) => old + score,
            _ => score,
        };
        if new.is_nan() {
            return Err(Reply::error("ERR resulting score is not a number (NaN)"));
        }
        if let Some(old) = old {
            if (gt && new <= old) || (lt && new >= old) {
                continue;
            }
        }
        incr_result = Some(new);
        match old {
            Some(old) if old == new => {}
            Some(_) => {
                put_score(txn, key, &mut c, member, old, new)?;
                changed += 1;
            }
            None => {
                put_score(txn, key, &mut c, member, None, new)?;
                added += 1;
            }
        }
    }
    txn.save_collection(key, Kind::ZSet, expire_at, c)?;
    if incr {
        return Ok(incr_result.map_or(Reply::Nil, score_reply));
    }
    Ok(Reply::Int(if ch { added + changed } else { added }))
}

pub fn zincrby(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    let words = [
        args[0].clone(),
        args[1].clone(),
        b"INCR".to_vec(),
        args[2].clone(),
        args[3].clone(),
    ];
    zadd(txn, &words)
}

pub fn zrem(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    let key = &args[1];
    let Some((expire_at, mut c)) = txn.collection(key, Kind::ZSet)? else {
        return Ok(Reply::Int(0));
    };
    let mut removed = 0;
    for member in &args[2..] {
        if let Some(score) = score_of(txn, key, &c, member)? {
            remove_member(txn, key, &mut c, member, score)?;
            removed += 1;
        }
    }
    txn.save_collection(key, Kind::ZSet, expire_at, c)?;
    Ok(Reply::Int(removed))
}

pub fn zscore(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    Ok(match read(txn, &args[1])? {
        Some(c) => score_of(txn, &args[1], &c, &args[2])?.map_or(Reply::Nil, score_reply),
        None => Reply::Nil,
    })
}

pub fn zmscore(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    let c = read(txn, &args[1])?;
    let mut out = Vec::new();
    for member in &args[2..] {
        out.push(match &c {
            Some(c) => score_of(txn, &args[1], c, member)?.map_or(Reply::Nil, score_reply),
            None => Reply::Nil,
        });
    }
    Ok(Reply::Array(out))
}

pub fn zcard(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    Ok(Reply::Int(read(txn, &args[1])?.map_or(0, |c| c.size) as i64))
}

/// A score bound: the value and whether it is excluded (`(1.5`).
#[derive(Clone, Copy)]
struct ScoreBound(f64, bool);

fn score_bound(arg: &[u8]) -> Result<ScoreBound, Reply> {
    let bad = || Reply::error("ERR min or max is not a float");
    let (text, open) = match arg.strip_prefix(b"(") {
        Some(rest) => (rest, true),
        None => (arg, false),
    };
    let value = parse_f64(text).ok_or_else(bad)?;
    Ok(ScoreBound(value, open))
}

impl ScoreBound {
    fn below(self, score: f64) -> bool {
        if self.1 {
            self.0 < score
        } else {
            self.0 <= score
        }
    }
    fn above(self, score: f64) -> bool {
        if self.1 {
            score < self.0
        } else {
            score <= self.0
        }
    }
}

/// A lex bound: `-`, `+`, `[member` (included) or `(member` (excluded).
#[derive(Clone)]
enum LexBound {
    Min,
    Max,
    Inclusive(Vec<u8>),
    Exclusive(Vec<u8>),
}

fn lex_bound(arg: &[u8]) -> Result<LexBound, Reply> {
    match arg {
        b"-" => Ok(LexBound::Min),
        b"+" => Ok(LexBound::Max),
        [b'[', rest @ ..] => Ok(LexBound::Inclusive(rest.to_vec())),
        [b'(', rest @ ..] => Ok(LexBound::Exclusive(rest.to_vec())),
        _ => Err(Reply::error("ERR min or max not valid string range item")),
    }
}

impl LexBound {
    fn below(&self, member: &[u8]) -> bool {
        match self {
            LexBound::Min => true,
            LexBound::Max => false,
            LexBound::Inclusive(m) => m.as_slice() <= member,
            LexBound::Exclusive(m) => m.as_slice() < member,
        }
    }
    fn above(&self, member: &[u8]) -> bool {
        match self {
            LexBound::Min => false,
            LexBound::Max => true,
            LexBound::Inclusive(m) => member <= m.as_slice(),
            LexBound::Exclusive(m) => member < m.as_slice(),
        }
    }
}

enum By {
    Rank(i64, i64),
    Score(ScoreBound, ScoreBound),
    Lex(LexBound, LexBound),
}

/// The members `by` selects (bounds as min, max), in order or reversed,
/// after `LIMIT offset count`.
fn select(
    all: Vec<(f64, Vec<u8>)>,
    by: &By,
    rev: bool,
    limit: Option<(i64, i64)>,
) -> Vec<(f64, Vec<u8>)> {
    let mut ordered = all;
    if rev {
        ordered.reverse();
    }
    let chosen: Vec<(f64, Vec<u8>)> = match by {
        By::Rank(start, stop) => {
            let len = ordered.len() as i64;
            let start = if *start < 0 {
                (start + len).max(0)
            } else {
                *start
            };
            let stop = if *stop < 0 {
                stop + len
            } else {
                (*stop).min(len - 1)
            };
            if start > stop || start >= len {
                Vec::new()
            } else {
                ordered[start as usize..=stop as usize].to_vec()
            }
        }
        By::Score(min, max) => ordered
            .into_iter()
            .filter(|(s, _)| min.below(*s) && max.above(*s))
            .collect(),
        By::Lex(min, max) => ordered
            .into_iter()
            .filter(|(_, m)| min.below(m) && max.above(m))
            .collect(),
    };
    match limit {
        Some((offset, count)) if offset >= 0 => {
            let taken = chosen.into_iter().skip(offset as usize);
            if count < 0 {
                taken.collect()
            } else {
                taken.take(count as usize).collect()
            }
        }
        Some(_) => Vec::new(),
        None => chosen,
    }
}

fn members_reply(chosen: Vec<(f64, Vec<u8>)>, with_scores: bool) -> Reply {
    let mut out = Vec::new();
    for (score, member) in chosen {
        out.push(Reply::Bulk(member));
        if with_scores {
            out.push(score_reply(score));
        }
    }
    Reply::Array(out)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Style {
    Rank,
    Score,
    Lex,
}

/// A parsed ZRANGE-family request.
struct RangeRequest {
    by: By,
    rev: bool,
    limit: Option<(i64, i64)>,
    with_scores: bool,
}

/// `start stop [BYSCORE|BYLEX] [REV] [LIMIT o c] [WITHSCORES]` (ZRANGE,
/// ZRANGESTORE); `style`, `rev` preset by the older commands.
fn parse_range(
    bounds: (&[u8], &[u8]),
    options: &[Vec<u8>],
    mut style: Style,
    mut rev: bool,
    allow_scores: bool,
) -> Result<RangeRequest, Reply> {
    // Only ZRANGE and ZRANGESTORE take BYSCORE, BYLEX and REV; the older
    // commands have them in their names.
    let generic = style == Style::Rank && !rev;
    let mut limit = None;
    let mut with_scores = false;
    let mut i = 0;
    while i < options.len() {
        match options[i].to_ascii_uppercase().as_slice() {
            b"BYSCORE" if generic && style == Style::Rank => style = Style::Score,
            b"BYLEX" if generic && style == Style::Rank => style = Style::Lex,
            b"REV" if generic => rev = true,
            b"WITHSCORES" if allow_scores => with_scores = true,
            b"LIMIT" if i + 2 < options.len() => {
                limit = Some((int_arg(&options[i + 1])?, int_arg(&options[i + 2])?));
                i += 2;
            }
            _ => return Err(syntax_error()),
        }
        i += 1;
    }
    if limit.is_some() && style == Style::Rank {
        return Err(Reply::error(
            "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX",
        ));
    }
    if with_scores && style == Style::Lex {
        return Err(Reply::error(
            "ERR syntax error, WITHSCORES not supported in combination with BYLEX",
        ));
    }
    // Reversed score and lex ranges are given max first.
    let (lo, hi) = if rev && style != Style::Rank {
        (bounds.1, bounds.0)
    } else {
        bounds
    };
    let by = match style {
        Style::Rank => By::Rank(int_arg(lo)?, int_arg(hi)?),
        Style::Score => By::Score(score_bound(lo)?, score_bound(hi)?),
        Style::Lex => By::Lex(lex_bound(lo)?, lex_bound(hi)?),
    };
    Ok(RangeRequest {
        by,
        rev,
        limit,
        with_scores,
    })
}

fn range_reply(txn: &mut Txn, args: &[Vec<u8>], style: Style, rev: bool) -> CmdResult {
    let request = parse_range((&args[2], &args[3]), &args[4..], style, rev, true)?;
    let all = read_entries(txn, &args[1])?;
    let chosen = select(all, &request.by, request.rev, request.limit);
    Ok(members_reply(chosen, request.with_scores))
}

pub fn zrange(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    range_reply(txn, args, Style::Rank, false)
}

pub fn zrevrange(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    range_reply(txn, args, Style::Rank, true)
}

pub fn zrangebyscore(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    range_reply(txn, args, Style::Score, false)
}

pub fn zrevrangebyscore(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    range_reply(txn, args, Style::Score, true)
}

pub fn zrangebylex(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    range_reply(txn, args, Style::Lex, false)
}

pub fn zrevrangebylex(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    range_reply(txn, args, Style::Lex, true)
}

/// `ZRANGESTORE dst src min max [BYSCORE|BYLEX] [REV] [LIMIT o c]`.
pub fn zrangestore(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    let request = parse_range((&args[3], &args[4]), &args[5..], Style::Rank, false, false)?;
    let all = read_entries(txn, &args[2])?;
    let chosen = select(all, &request.by, request.rev, request.limit);
    let dest = &args[1];
    txn.delete_key(dest)?;
    let (expire_at, mut c) = txn.collection_or_new(dest, Kind::ZSet)?;
    for (score, member) in &chosen {
        put_score(txn, dest, &mut c, member, None, *score)?;
    }
    txn.save_collection(dest, Kind::ZSet, expire_at, c)?;
    Ok(Reply::Int(chosen.len() as i64))
}

pub fn zcount(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    let by = By::Score(score_bound(&args[2])?, score_bound(&args[3])?);
    let all = read_entries(txn, &args[1])?;
    Ok(Reply::Int(select(all, &by, false, None).len() as i64))
}

pub fn zlexcount(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    let by = By::Lex(lex_bound(&args[2])?, lex_bound(&args[3])?);
    let all = read_entries(txn, &args[1])?;
    Ok(Reply::Int(select(all, &by, false, None).len() as i64))
}

fn rank(txn: &mut Txn, args: &[Vec<u8>], rev: bool) -> CmdResult {
    let all = read_entries(txn, &args[1])?;
    Ok(match all.iter().position(|(_, m)| *m == args[2]) {
        Some(i) if rev => Reply::Int((all.len() - 1 - i) as i64),
        Some(i) => Reply::Int(i as i64),
        None => Reply::Nil,
    })
}

pub fn zrank(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    rank(txn, args, false)
}

pub fn zrevrank(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    rank(txn, args, true)
}

/// Removes the chosen members; returns how many.
fn remove_chosen(txn: &mut Txn, key: &[u8], by: By) -> Result<i64, Reply> {
    let Some((expire_at, mut c)) = txn.collection(key, Kind::ZSet)? else {
        return Ok(0);
    };
    let chosen = select(entries(txn, key, &c)?, &by, false, None);
    for (score, member) in &chosen {
        remove_member(txn, key, &mut c, member, *score)?;
    }
    txn.save_collection(key, Kind::ZSet, expire_at, c)?;
    Ok(chosen.len() as i64)
}

fn pop(txn: &mut Txn, args: &[Vec<u8>], max: bool) -> CmdResult {
    let count = match args.len() {
        2 => 1,
        3 => usize::try_from(count_arg(&args[2])?)
            .map_err(|_| Reply::error("ERR value is out of range, must be positive"))?,
        _ => return Err(syntax_error()),
    };
    let key = &args[1];
    let Some((expire_at, mut c)) = txn.collection(key, Kind::ZSet)? else {
        return Ok(Reply::Array(Vec::new()));
    };
    if count == 0 {
        return Ok(Reply::Array(Vec::new()));
    }
    let chosen = select(
        entries(txn, key, &c)?,
        &By::Rank(0, count as i64 - 1),
        max,
        None,
    );
    for (score, member) in &chosen {
        remove_member(txn, key, &mut c, member, *score)?;
    }
    txn.save_collection(key, Kind::ZSet, expire_at, c)?;
    Ok(members_reply(chosen, true))
}

pub fn zpopmin(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    pop(txn, args, false)
}

pub fn zpopmax(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    pop(txn, args, true)
}

pub fn zremrangebyscore(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    let by = By::Score(score_bound(&args[2])?, score_bound(&args[3])?);
    Ok(Reply::Int(remove_chosen(txn, &args[1], by)?))
}

pub fn zremrangebyrank(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    let by = By::Rank(int_arg(&args[2])?, int_arg(&args[3])?);
    Ok(Reply::Int(remove_chosen(txn, &args[1], by)?))
}

pub fn zremrangebylex(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    let by = By::Lex(lex_bound(&args[2])?, lex_bound(&args[3])?);
    Ok(Reply::Int(remove_chosen(txn, &args[1], by)?))
}

pub fn zscan(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    let entries = read_entries(txn, &args[1])?
        .into_iter()
        .map(|(s, m)| (m, Some(format_g17(s).into_bytes())))
        .collect();
    scan_reply(args, entries)
}
