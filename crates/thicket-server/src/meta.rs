//! The server's on-disk encoding of keys that are not plain strings
//! (`docs/format.md`, "Server data"): strings with an expiry and the
//! collections. A database's plain strings stay raw in its keyspace (so
//! stores written before stay readable unchanged); everything else lives
//! in the database's companion keyspace:
//!
//! - `0x01 key` → metadata: format version, type, expiry, and for a
//!   collection its version, size and (lists) the index range;
//! - `0x02 len(key) key version member` → one member of a collection. The
//!   version is the collection's at creation, so deleting or overwriting
//!   the metadata drops every member in one write (the old members are
//!   unreachable garbage until compaction reclaims them).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// Prefix of metadata keys in a companion keyspace.
pub const META_PREFIX: u8 = 0x01;
/// Prefix of member keys in a companion keyspace.
pub const MEMBER_PREFIX: u8 = 0x02;
/// Metadata encoding version (byte 0 of every metadata value).
pub const FORMAT_VERSION: u8 = 1;

/// A list's first element gets this index, so that pushes on the left can
/// go down as far as pushes on the right go up.
pub const LIST_MIDDLE: u64 = 1 << 63;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    String,
    Hash,
    Set,
    ZSet,
    List,
}

impl Kind {
    fn tag(self) -> u8 {
        match self {
            Kind::String => 0,
            Kind::Hash => 1,
            Kind::Set => 2,
            Kind::ZSet => 3,
            Kind::List => 4,
        }
    }

    fn from_tag(tag: u8) -> Option<Kind> {
        Some(match tag {
            0 => Kind::String,
            1 => Kind::Hash,
            2 => Kind::Set,
            3 => Kind::ZSet,
            4 => Kind::List,
            _ => return None,
        })
    }

    /// The name TYPE replies.
    pub fn name(self) -> &'static str {
        match self {
            Kind::String => "string",
            Kind::Hash => "hash",
            Kind::Set => "set",
            Kind::ZSet => "zset",
            Kind::List => "list",
        }
    }
}

/// A collection's metadata: its members are the member keys under
/// `version`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Collection {
    pub version: u64,
    /// Number of members (list: `tail - head`).
    pub size: u64,
    /// Lists: elements have indexes `head..tail`.
    pub head: u64,
    pub tail: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Body {
    String(Vec<u8>),
    Collection(Kind, Collection),
}

/// One key's metadata as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Meta {
    /// Unix time in milliseconds at which the key expires; 0: never.
    pub expire_at: u64,
    pub body: Body,
}

impl Meta {
    pub fn kind(&self) -> Kind {
        match &self.body {
            Body::String(_) => Kind::String,
            Body::Collection(kind, _) => *kind,
        }
    }

    pub fn expired(&self, now: u64) -> bool {
        self.expire_at != 0 && self.expire_at <= now
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(42);
        out.push(FORMAT_VERSION);
        out.push(self.kind().tag());
        out.extend_from_slice(&self.expire_at.to_be_bytes());
        match &self.body {
            Body::String(value) => out.extend_from_slice(value),
            Body::Collection(kind, c) => {
                out.extend_from_slice(&c.version.to_be_bytes());
                out.extend_from_slice(&c.size.to_be_bytes());
                if *kind == Kind::List {
                    out.extend_from_slice(&c.head.to_be_bytes());
                    out.extend_from_slice(&c.tail.to_be_bytes());
                }
            }
        }
        out
    }

    /// `None` for a value this version cannot read (a newer format).
    pub fn decode(bytes: &[u8]) -> Option<Meta> {
        let (&version, rest) = bytes.split_first()?;
        if version != FORMAT_VERSION {
            return None;
        }
        let (&tag, rest) = rest.split_first()?;
        let kind = Kind::from_tag(tag)?;
        let (expire_at, rest) = take_u64(rest)?;
        let body = if kind == Kind::String {
            Body::String(rest.to_vec())
        } else {
            let (version, rest) = take_u64(rest)?;
            let (size, rest) = take_u64(rest)?;
            let (head, tail) = if kind == Kind::List {
                let (head, rest) = take_u64(rest)?;
                let (tail, _) = take_u64(rest)?;
                (head, tail)
            } else {
                (0, 0)
            };
            Body::Collection(
                kind,
                Collection {
                    version,
                    size,
                    head,
                    tail,
                },
            )
        };
        Some(Meta { expire_at, body })
    }
}

fn take_u64(bytes: &[u8]) -> Option<(u64, &[u8])> {
    let (head, rest) = bytes.split_first_chunk::<8>()?;
    Some((u64::from_be_bytes(*head), rest))
}

/// The prefix of every member key of `key`'s collection at `version`.
pub fn member_prefix(key: &[u8], version: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(key.len() + 12);
    out.extend_from_slice(&(key.len() as u32).to_be_bytes());
    out.extend_from_slice(key);
    out.extend_from_slice(&version.to_be_bytes());
    out
}

/// The smallest key greater than every key starting with `prefix` (`None`:
/// there is none, the prefix is all `0xff`).
pub fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

/// Scores as 8 bytes that sort as the numbers do (negative ones flipped
/// whole, positive ones with the sign bit set).
pub fn score_key(score: f64) -> [u8; 8] {
    // -0.0 and 0.0 are one score.
    let score = if score == 0.0 { 0.0 } else { score };
    let bits = score.to_bits();
    let ordered = if bits >> 63 == 1 {
        !bits
    } else {
        bits | (1 << 63)
    };
    ordered.to_be_bytes()
}

pub fn score_from_key(bytes: [u8; 8]) -> f64 {
    let ordered = u64::from_be_bytes(bytes);
    let bits = if ordered >> 63 == 1 {
        ordered & !(1 << 63)
    } else {
        !ordered
    };
    f64::from_bits(bits)
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// A new collection version: microseconds since the epoch, made strictly
/// increasing within the process, so that a key deleted and created again
/// (also after a restart, unless the clock went back) gets a version its
/// old members do not have.
pub fn new_version() -> u64 {
    static LAST: AtomicU64 = AtomicU64::new(0);
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64);
    let mut last = LAST.load(Ordering::Relaxed);
    loop {
        let next = now.max(last + 1);
        match LAST.compare_exchange_weak(last, next, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => return next,
            Err(seen) => last = seen,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_round_trips() {
        let metas = [
            Meta {
                expire_at: 0,
                body: Body::String(b"hello".to_vec()),
            },
            Meta {
                expire_at: 1_700_000_000_000,
                body: Body::Collection(
                    Kind::List,
                    Collection {
                        version: 7,
                        size: 2,
                        head: LIST_MIDDLE - 1,
                        tail: LIST_MIDDLE + 1,
                    },
                ),
            },
            Meta {
                expire_at: 5,
                body: Body::Collection(
                    Kind::ZSet,
                    Collection {
                        version: 9,
                        size: 3,
                        head: 0,
                        tail: 0,
                    },
                ),
            },
        ];
        for meta in metas {
            assert_eq!(Meta::decode(&meta.encode()), Some(meta));
        }
        assert_eq!(Meta::decode(&[2, 0, 0]), None, "a newer format");
        assert_eq!(Meta::decode(&[1, 1, 0, 0]), None, "truncated");
    }

    #[test]
    fn score_keys_sort_as_scores() {
        let scores = [
            f64::NEG_INFINITY,
            -1e300,
            -2.5,
            -1.0,
            -1e-300,
            0.0,
            1e-300,
            1.0,
            2.5,
            1e300,
            f64::INFINITY,
        ];
        for pair in scores.windows(2) {
            assert!(score_key(pair[0]) < score_key(pair[1]), "{pair:?}");
        }
        for s in scores {
            assert_eq!(score_from_key(score_key(s)), s);
        }
        assert_eq!(score_key(-0.0), score_key(0.0));
    }

    #[test]
    fn versions_increase_and_prefixes_end() {
        let a = new_version();
        assert!(new_version() > a);
        assert_eq!(prefix_end(b"ab"), Some(b"ac".to_vec()));
        assert_eq!(prefix_end(b"a\xff"), Some(b"b".to_vec()));
        assert_eq!(prefix_end(b"\xff\xff"), None);
    }
}
