//! What the collection commands share: counts, random picks, and the
//! *SCAN replies.

use std::sync::atomic::{AtomicU64, Ordering};

use super::numbers::int_arg;
use super::syntax_error;
use crate::glob::glob_match;
use crate::resp::Reply;

/// A pseudo-random number (xorshift over a clock-seeded state): enough for
/// SPOP, SRANDMEMBER, HRANDFIELD and ZRANDMEMBER, not for secrets.
pub fn random_u64() -> u64 {
    static STATE: AtomicU64 = AtomicU64::new(0);
    let mut x = STATE.load(Ordering::Relaxed);
    if x == 0 {
        x = crate::meta::new_version() | 1;
    }
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    STATE.store(x, Ordering::Relaxed);
    x
}

/// A random index below `n` (n > 0).
pub fn random_index(n: usize) -> usize {
    (random_u64() % n as u64) as usize
}

/// `count` random distinct picks from `items` (all of them when fewer).
pub fn pick_distinct<T: Clone>(items: &[T], count: usize) -> Vec<T> {
    let mut pool: Vec<T> = items.to_vec();
    let count = count.min(pool.len());
    for i in 0..count {
        let j = i + random_index(pool.len() - i);
        pool.swap(i, j);
    }
    pool.truncate(count);
    pool
}

/// `count` random picks from `items`, repeats allowed (`items` non-empty).
pub fn pick_repeating<T: Clone>(items: &[T], count: usize) -> Vec<T> {
    (0..count)
        .map(|_| items[random_index(items.len())].clone())
        .collect()
}

/// A count argument within what one reply may hold.
pub fn count_arg(arg: &[u8]) -> Result<i64, Reply> {
    let count = int_arg(arg)?;
    if count.unsigned_abs() > crate::store::MAX_RANGE_READ as u64 {
        return Err(Reply::error("ERR value is out of range"));
    }
    Ok(count)
}

/// HSCAN, SSCAN, ZSCAN: `key cursor [MATCH p] [COUNT n]`. The whole
/// collection comes back in one reply with cursor 0 (a valid SCAN answer:
/// COUNT is a hint); `entries` are (member, value) pairs, values left out
/// when `with_values` is false.
pub fn scan_reply(
    args: &[Vec<u8>],
    entries: Vec<(Vec<u8>, Option<Vec<u8>>)>,
) -> Result<Reply, Reply> {
    let cursor = std::str::from_utf8(&args[2])
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .ok_or_else(|| Reply::error("ERR invalid cursor"))?;
    let mut pattern: Option<&[u8]> = None;
    for option in args[3..].chunks(2) {
        let [name, value] = option else {
            return Err(syntax_error());
        };
        match name.to_ascii_uppercase().as_slice() {
            b"MATCH" => pattern = Some(value),
            b"COUNT" => {
                if int_arg(value)? < 1 {
                    return Err(syntax_error());
                }
            }
            _ => return Err(syntax_error()),
        }
    }
    let mut out = Vec::new();
    // A cursor other than 0 can only come from elsewhere: nothing is left.
    if cursor == 0 {
        for (member, value) in entries {
            if pattern.is_none_or(|p| glob_match(p, &member)) {
                out.push(Reply::Bulk(member));
                if let Some(value) = value {
                    out.push(Reply::Bulk(value));
                }
            }
        }
    }
    Ok(Reply::Array(vec![Reply::bulk("0"), Reply::Array(out)]))
}

/// Redis's arity error for commands taking pairs (HSET...).
pub fn wrong_args(args: &[Vec<u8>]) -> Reply {
    super::arity_error(&String::from_utf8_lossy(&args[0]).to_lowercase())
}
