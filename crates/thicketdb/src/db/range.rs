//! `Db::range` and `Db::prefix`: Rust iterators (both ends) over the
//! key-value pairs of a key range, for code that reads a range through
//! rather than seeking (`DbIterator` stays the cursor for seek-heavy use).
//!
//! The two ends are two cursors over one snapshot: the front one only
//! moves forward, the back one (made on the first `next_back`) only
//! backward, and they stop where they meet, so each pair comes out once.

use std::ops::{Bound, RangeBounds};

use super::{Db, DbIterator, Keyspace, ReadOptions};
use crate::error::{Error, Result};
use crate::format::KeyOrder;

/// The pairs of a key range, in key order from the front and in reverse
/// from the back; an error ends the iteration after it is returned.
pub struct Range {
    /// The keyspace read.
    keyspace: Keyspace,
    /// Bounds and the snapshot both cursors read.
    opts: ReadOptions,
    front: Option<DbIterator>,
    back: Option<DbIterator>,
    /// The last key returned from the front and from the back.
    last_front: Option<Vec<u8>>,
    last_back: Option<Vec<u8>>,
    done: bool,
    order: KeyOrder,
}

/// The key range's `[lower, upper)` bounds as `ReadOptions` takes them.
fn bounds<K: AsRef<[u8]>>(range: &impl RangeBounds<K>) -> (Option<Vec<u8>>, Option<Vec<u8>>) {
    // The key right after `k` in byte order is `k` followed by a zero byte.
    let after = |k: &K| {
        let mut next = k.as_ref().to_vec();
        next.push(0);
        next
    };
    let lower = match range.start_bound() {
        Bound::Included(k) => Some(k.as_ref().to_vec()),
        Bound::Excluded(k) => Some(after(k)),
        Bound::Unbounded => None,
    };
    let upper = match range.end_bound() {
        Bound::Included(k) => Some(after(k)),
        Bound::Excluded(k) => Some(k.as_ref().to_vec()),
        Bound::Unbounded => None,
    };
    (lower, upper)
}

/// The smallest key above every key starting with `prefix`; `None` when
/// there is none (the prefix is empty or all `0xff`).
fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < u8::MAX {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

/// `Db::range_opt` and `Keyspace::range_opt` in `keyspace`.
pub(super) fn range_in<K: AsRef<[u8]>, R: RangeBounds<K>>(
    keyspace: Keyspace,
    range: R,
    opts: ReadOptions,
) -> Result<Range> {
    let bytewise_only = matches!(range.start_bound(), Bound::Excluded(_))
        || matches!(range.end_bound(), Bound::Included(_));
    if bytewise_only {
        require_bytewise(
            keyspace.db(),
            "a range with an excluded start or an included end",
        )?;
    }
    let (lower_bound, upper_bound) = bounds(&range);
    ranged(
        keyspace,
        ReadOptions {
            lower_bound,
            upper_bound,
            ..opts
        },
    )
}

/// `Db::prefix_opt` and `Keyspace::prefix_opt` in `keyspace`.
pub(super) fn prefix_in(keyspace: Keyspace, prefix: &[u8], opts: ReadOptions) -> Result<Range> {
    require_bytewise(keyspace.db(), "a prefix iteration")?;
    ranged(
        keyspace,
        ReadOptions {
            lower_bound: Some(prefix.to_vec()),
            upper_bound: prefix_end(prefix),
            ..opts
        },
    )
}

fn require_bytewise(db: &Db, what: &str) -> Result<()> {
    let order = &db.options().comparator;
    if order.is_bytewise() {
        return Ok(());
    }
    Err(Error::InvalidArgument(format!(
        "{what} needs the built-in byte order; this store orders keys by {:?}",
        order.name()
    )))
}

fn ranged(keyspace: Keyspace, mut opts: ReadOptions) -> Result<Range> {
    if opts.snapshot.is_none() {
        opts.snapshot = Some(keyspace.db().snapshot());
    }
    let mut front = keyspace.iter(opts.clone())?;
    front.seek_to_first();
    Ok(Range {
        order: keyspace.db().options().comparator.clone(),
        keyspace,
        opts,
        front: Some(front),
        back: None,
        last_front: None,
        last_back: None,
        done: false,
    })
}

impl Range {
    /// The pair under `cursor` unless it is past the other end's last key
    /// (at or past it in the cursor's direction); ends the iteration
    /// otherwise.
    fn yield_at(&mut self, at_front: bool) -> Option<Result<(Vec<u8>, Vec<u8>)>> {
        let (cursor, other_end) = if at_front {
            (self.front.as_ref()?, &self.last_back)
        } else {
            (self.back.as_ref()?, &self.last_front)
        };
        if !cursor.valid() {
            self.done = true;
            return cursor.status().err().map(Err);
        }
        let key = cursor.key();
        let crossed = |other: &[u8]| match at_front {
            true => self.order.le(other, key),
            false => self.order.le(key, other),
        };
        if other_end.as_deref().is_some_and(crossed) {
            self.done = true;
            return None;
        }
        let pair = (cursor.key().to_vec(), cursor.value().to_vec());
        let last = if at_front {
            &mut self.last_front
        } else {
            &mut self.last_back
        };
        *last = Some(pair.0.clone());
        Some(Ok(pair))
    }
}

impl Iterator for Range {
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        if self.last_front.is_some() {
            self.front.as_mut()?.next();
        }
        self.yield_at(true)
    }
}

impl DoubleEndedIterator for Range {
    fn next_back(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        match self.back.as_mut() {
            Some(back) => back.prev(),
            None => match self.keyspace.iter(self.opts.clone()) {
                Ok(mut back) => {
                    back.seek_to_last();
                    self.back = Some(back);
                }
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
            },
        }
        self.yield_at(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::Options;

    fn db_with(keys: &[&[u8]]) -> (tempfile::TempDir, Db) {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), Options::default()).unwrap();
        for k in keys {
            db.put(k, [b"v".as_slice(), k].concat()).unwrap();
        }
        (dir, db)
    }

    fn keys(range: impl Iterator<Item = Result<(Vec<u8>, Vec<u8>)>>) -> Vec<Vec<u8>> {
        range.map(|pair| pair.unwrap().0).collect()
    }

    #[test]
    fn bounds_of_every_range_form() {
        let (_dir, db) = db_with(&[b"a", b"b", b"c", b"d", b"e"]);
        let k = |s: &[&str]| -> Vec<Vec<u8>> { s.iter().map(|k| k.as_bytes().to_vec()).collect() };
        assert_eq!(keys(db.range("b".."d").unwrap()), k(&["b", "c"]));
        assert_eq!(keys(db.range("b"..="d").unwrap()), k(&["b", "c", "d"]));
        assert_eq!(keys(db.range("c"..).unwrap()), k(&["c", "d", "e"]));
        assert_eq!(keys(db.range(.."b").unwrap()), k(&["a"]));
        assert_eq!(keys(db.range::<&str, _>(..).unwrap()).len(), 5);
        let excluded_start = (Bound::Excluded("b"), Bound::Included("d"));
        assert_eq!(
            keys(db.range::<&str, _>(excluded_start).unwrap()),
            k(&["c", "d"])
        );
        assert_eq!(keys(db.range("d".."b").unwrap()), k(&[]));
        assert_eq!(
            keys(db.range("a"..="e").unwrap().rev()),
            k(&["e", "d", "c", "b", "a"])
        );
    }

    #[test]
    fn both_ends_meet_without_repeating_a_pair() {
        let all: Vec<Vec<u8>> = (0u8..10).map(|i| vec![b'k', i]).collect();
        let refs: Vec<&[u8]> = all.iter().map(|k| k.as_slice()).collect();
        let (_dir, db) = db_with(&refs);
        for fronts in 0..=10 {
            let mut range = db.range::<&[u8], _>(..).unwrap();
            let mut seen: Vec<Vec<u8>> = (&mut range).take(fronts).map(|p| p.unwrap().0).collect();
            let mut backs = keys(range.by_ref().rev());
            backs.reverse();
            seen.extend(backs);
            assert_eq!(seen, all, "{fronts} from the front");
            assert!(range.next().is_none());
        }
        // Alternating ends.
        let mut range = db.range::<&[u8], _>(..).unwrap();
        let mut front = Vec::new();
        let mut back = Vec::new();
        while let Some(p) = range.next() {
            front.push(p.unwrap().0);
            match range.next_back() {
                Some(p) => back.push(p.unwrap().0),
                None => break,
            }
        }
        back.reverse();
        front.extend(back);
        assert_eq!(front, all);
    }

    #[test]
    fn prefix_covers_exactly_the_keys_that_start_with_it() {
        let (_dir, db) = db_with(&[b"ab", b"abc", b"ab\xff", b"ac", b"a", b"\xff\xff", b"\xff"]);
        assert_eq!(
            keys(db.prefix("ab").unwrap()),
            vec![b"ab".to_vec(), b"abc".to_vec(), b"ab\xff".to_vec()]
        );
        assert_eq!(
            keys(db.prefix([0xffu8]).unwrap()),
            vec![b"\xff".to_vec(), b"\xff\xff".to_vec()]
        );
        assert_eq!(keys(db.prefix("").unwrap()).len(), 7);
        assert_eq!(prefix_end(b"a\xff"), Some(b"b".to_vec()));
        assert_eq!(prefix_end(b"\xff\xff"), None);
    }

    #[test]
    fn a_range_reads_one_snapshot() {
        let (_dir, db) = db_with(&[b"a", b"b"]);
        let mut range = db.range::<&str, _>(..).unwrap();
        db.put("c", "late").unwrap();
        db.delete("b").unwrap();
        assert_eq!(range.next().unwrap().unwrap().0, b"a");
        assert_eq!(range.next_back().unwrap().unwrap().0, b"b");
        assert!(range.next().is_none());
    }
}
