//! The active expiry pass: every 100 ms it reads batches of `BATCH` typed
//! keys of each database's companion, continuing where the last pass
//! stopped (one batch, or up to `MAX_BATCHES` while a quarter of a batch
//! had expired), and deletes those that have expired through the ordinary
//! write path (under the key's lock, after reading it again). Reads already hide expired keys;
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

/// Typed keys examined per batch.
const BATCH: usize = 256;
/// Batches per database per pass when many keys are expiring.
const MAX_BATCHES: usize = 16;
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
        let mut start = resume.remove(&name).unwrap_or_default();
        // Another batch at once while a quarter or more of the last one had
        // expired (Redis's rule), up to `MAX_BATCHES`.
        for _ in 0..MAX_BATCHES {
            let Some((expired, stopped_at)) = find_expired(shared, &name, &start) else {
                break;
            };
            let busy = expired.len() * 4 >= BATCH;
            for key in expired {
                delete_if_expired(shared, &database, &key);
            }
            match stopped_at {
                Some(key) => start = key,
                None => {
                    start.clear();
                    break;
                }
            }
            if !busy {
                break;
            }
        }
        if !start.is_empty() {
            next.insert(name, start);
        }
    }
    next
}

fn delete_if_expired(shared: &Shared, database: &Database, key: &[u8]) {
    let _lock = shared.store.lock([key]);
    let mut txn = Txn::new(&shared.store, database);
    // Read again under the lock: a write may have renewed it.
    let still = matches!(txn.stored(key), Ok(Some(meta)) if meta.expired(txn.now));
    if still && txn.delete_key(key).is_ok() && txn.commit().is_ok() {
        shared.metrics.expired_keys.fetch_add(1, Ordering::Relaxed);
    }
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
