//! Walks over a database's keys in key order: its keyspace's plain strings
//! merged with the typed keys in its companion (`meta`), at one snapshot,
//! skipping expired keys. SCAN, KEYS, DBSIZE and INFO keyspace use it.

use thicketdb::{DbIterator, Keyspace, ReadOptions, Snapshot};

use crate::meta::{Kind, Meta, MEMBER_PREFIX, META_PREFIX};
use crate::resp::Reply;
use crate::store::{engine_error, Database, Store};

/// One side of the merge, positioned on its next key (without the
/// companion's prefix byte).
struct Side {
    iter: DbIterator,
    strip: usize,
}

impl Side {
    fn open(
        keyspace: &Keyspace,
        snapshot: &Snapshot,
        prefix: &[u8],
        start: &[u8],
        companion: bool,
    ) -> Result<Side, Reply> {
        let with = |key: &[u8]| -> Vec<u8> {
            if companion {
                [&[META_PREFIX][..], key].concat()
            } else {
                key.to_vec()
            }
        };
        let opts = ReadOptions {
            snapshot: Some(snapshot.clone()),
            lower_bound: Some(with(prefix)),
            upper_bound: companion.then(|| vec![MEMBER_PREFIX]),
            fill_cache: false,
        };
        let mut iter = keyspace.iter(opts).map_err(engine_error)?;
        iter.seek(&with(start.max(prefix)));
        Ok(Side {
            iter,
            strip: usize::from(companion),
        })
    }

    fn key(&self, prefix: &[u8]) -> Option<&[u8]> {
        if !self.iter.valid() {
            return None;
        }
        Some(&self.iter.key()[self.strip..]).filter(|k| k.starts_with(prefix))
    }
}

/// Visits the live keys of `database` from `start` on that begin with
/// `prefix`, in order, with their types and whether they have an expiry,
/// until `visit` returns false.
/// Returns the key it stopped before, if any.
pub fn walk_keys(
    store: &Store,
    database: &Database,
    start: &[u8],
    prefix: &[u8],
    now: u64,
    mut visit: impl FnMut(&[u8], Kind, bool) -> bool,
) -> Result<Option<Vec<u8>>, Reply> {
    let snapshot = store.db().snapshot();
    let mut main = match store.keyspace(database)? {
        Some(k) => Some(Side::open(&k, &snapshot, prefix, start, false)?),
        None => None,
    };
    let mut typed = match store.companion(database)? {
        Some(k) => Some(Side::open(&k, &snapshot, prefix, start, true)?),
        None => None,
    };
    let result = loop {
        let a = main.as_ref().and_then(|s| s.key(prefix));
        let b = typed.as_ref().and_then(|s| s.key(prefix));
        let take_main = match (a, b) {
            (None, None) => break None,
            (Some(a), Some(b)) => a <= b,
            (Some(_), None) => true,
            (None, Some(_)) => false,
        };
        let (key, kind, advance_main, advance_typed) = if take_main {
            // A plain string shadows a typed copy of the same key.
            let a = a.unwrap_or_default();
            (a.to_vec(), Some((Kind::String, false)), true, b == Some(a))
        } else {
            let value = typed.as_ref().map(|s| s.iter.value()).unwrap_or_default();
            let kind = Meta::decode(value)
                .filter(|m| !m.expired(now))
                .map(|m| (m.kind(), m.expire_at != 0));
            (b.unwrap_or_default().to_vec(), kind, false, true)
        };
        if let Some((kind, expiring)) = kind {
            if !visit(&key, kind, expiring) {
                break Some(key);
            }
        }
        if advance_main {
            if let Some(side) = &mut main {
                side.iter.next();
            }
        }
        if advance_typed {
            if let Some(side) = &mut typed {
                side.iter.next();
            }
        }
    };
    for side in [main, typed].into_iter().flatten() {
        side.iter.status().map_err(engine_error)?;
    }
    Ok(result)
}

/// Counts the live keys of `database`, and those with an expiry: a walk
/// over its keys (see docs/server.md).
pub fn count_keys(store: &Store, database: &Database, now: u64) -> Result<(i64, i64), Reply> {
    let (mut count, mut expiring) = (0, 0);
    walk_keys(store, database, b"", b"", now, |_, _, expires| {
        count += 1;
        expiring += i64::from(expires);
        true
    })?;
    Ok((count, expiring))
}
