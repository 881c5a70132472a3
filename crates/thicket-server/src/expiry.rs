//! The active expiry pass: every 100 ms it reads up to `BATCH` typed keys of
//! each database's companion, continuing where the last pass stopped, and
//! deletes those that have expired through the ordinary write path (under
//! the key's lock, after reading it again). Reads already hide expired keys;
//! this bounds the space they hold. (A compaction filter in the engine will
//! reclaim them without a write; see docs/server.md.)

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use thicketdb::ReadOptions;

use crate::meta::{now_ms, Meta, MEMBER_PREFIX, META_PREFIX};
use crate::shared::Shared;
use crate::store::{is_companion, Database, Txn, COMPANION_PREFIX};

/// Typed keys examined per database per pass.
const BATCH: usize = 256;
const INTERVAL: Duration = Duration::from_millis(100);

/// Runs passes until the server shuts down.
pub async fn run(shared: Arc<Shared>) {
    let mut shutdown = shared.shutdown.subscribe();
    let mut resume: HashMap<String, Vec<u8>> = HashMap::new();
    loop {
        tokio::select! {
            _ = tokio::time::sleep(INTERVAL) => {}
            _ = shutdown.wait_for(|stop| *stop) => return,
        }
        let shared = shared.clone();
        let cursors = std::mem::take(&mut resume);
        match tokio::task::spawn_blocking(move || pass(&shared, cursors)).await {
            Ok(next) => resume = next,
            Err(_) => return,
        }
    }
}

/// One pass over every companion; returns where each should resume.
fn pass(shared: &Shared, mut resume: HashMap<String, Vec<u8>>) -> HashMap<String, Vec<u8>> {
    let db = shared.store.db();
    let mut next = HashMap::new();
    for name in db.list_keyspaces().into_iter().filter(|n| is_companion(n)) {
        let database = database_of(&name[COMPANION_PREFIX.len()..]);
        let start = resume.remove(&name).unwrap_or_default();
        let (expired, stopped_at) = match find_expired(shared, &name, &start) {
            Some(found) => found,
            None => continue,
        };
        for key in expired {
            let _lock = shared.store.lock([key.as_slice()]);
            let mut txn = Txn::new(&shared.store, &database);
            // Read again under the lock: a write may have renewed it.
            let still = matches!(txn.stored(&key), Ok(Some(meta)) if meta.expired(txn.now));
            if still && txn.delete_key(&key).is_ok() && txn.commit().is_ok() {
                shared.metrics.expired_keys.fetch_add(1, Ordering::Relaxed);
            }
        }
        if let Some(key) = stopped_at {
            next.insert(name, key);
        }
    }
    next
}

/// The database whose keyspace is `keyspace`.
fn database_of(keyspace: &str) -> Database {
    if keyspace == thicketdb::DEFAULT_KEYSPACE_NAME {
        return Database::Index(0);
    }
    match keyspace
        .strip_prefix("db")
        .and_then(|i| i.parse::<u32>().ok())
    {
        Some(i) if i > 0 && crate::store::index_keyspace_name(i) == keyspace => Database::Index(i),
        _ => Database::Named(keyspace.to_string()),
    }
}

/// The expired keys of one batch, and where the next batch starts.
type Found = (Vec<Vec<u8>>, Option<Vec<u8>>);

/// Up to `BATCH` typed keys from `start` on: the expired ones, and the key
/// the next pass starts at (`None`: the end was reached).
fn find_expired(shared: &Shared, companion: &str, start: &[u8]) -> Option<Found> {
    let keyspace = shared.store.db().keyspace(companion).ok()?;
    let opts = ReadOptions {
        lower_bound: Some(vec![META_PREFIX]),
        upper_bound: Some(vec![MEMBER_PREFIX]),
        fill_cache: false,
        ..ReadOptions::default()
    };
    let mut iter = keyspace.iter(opts).ok()?;
    iter.seek(&[&[META_PREFIX][..], start].concat());
    let now = now_ms();
    let mut expired = Vec::new();
    for _ in 0..BATCH {
        if !iter.valid() {
            return Some((expired, None));
        }
        if Meta::decode(iter.value()).is_some_and(|m| m.expired(now)) {
            expired.push(iter.key()[1..].to_vec());
        }
        iter.next();
    }
    let stopped_at = iter.valid().then(|| iter.key()[1..].to_vec());
    Some((expired, stopped_at))
}
