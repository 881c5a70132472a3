//! Custom filter policies (the `filter_policy` option): the engine builds
//! each table's filter with the policy, consults it on gets, and ignores
//! filters built by a policy of another name.

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use common::*;
use thicketdb::table::FilterPolicy;
use thicketdb::{Db, Options};

/// A policy whose filter is the keys themselves, counting its calls; with
/// `matches` false it denies every key (a wrong policy hides keys).
struct Counting {
    name: &'static str,
    matches: bool,
    keys_filtered: AtomicU64,
    probes: AtomicU64,
}

impl Counting {
    fn new(name: &'static str, matches: bool) -> Arc<Counting> {
        Arc::new(Counting {
            name,
            matches,
            keys_filtered: AtomicU64::new(0),
            probes: AtomicU64::new(0),
        })
    }
}

impl FilterPolicy for Counting {
    fn name(&self) -> &str {
        self.name
    }

    fn create_filter(&self, user_keys: &[&[u8]], dst: &mut Vec<u8>) {
        self.keys_filtered
            .fetch_add(user_keys.len() as u64, Ordering::Relaxed);
        for key in user_keys {
            dst.push(key.len() as u8);
            dst.extend_from_slice(key);
        }
    }

    fn key_may_match(&self, _user_key: &[u8], _filter: &[u8]) -> bool {
        self.probes.fetch_add(1, Ordering::Relaxed);
        self.matches
    }
}

fn options_with(policy: Option<Arc<Counting>>) -> Options {
    small_options().filter_policy(policy.map(|p| p as Arc<dyn FilterPolicy>))
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:05}").into_bytes()
}

fn fill(db: &Db, n: u32) {
    for i in 0..n {
        db.put(key(i), format!("value{i}")).unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
}

fn all_found(db: &Db, n: u32) -> bool {
    (0..n).all(|i| db.get(key(i)).unwrap() == Some(format!("value{i}").into_bytes()))
}

#[test]
fn a_policy_builds_the_filters_and_answers_lookups() {
    let dir = tempfile::tempdir().unwrap();
    let policy = Counting::new("test.Counting", true);
    let db = Db::open(dir.path(), options_with(Some(policy.clone()))).unwrap();
    fill(&db, 2000);
    // Every key went into a filter at least once (flushes, then the
    // compaction's output).
    assert!(policy.keys_filtered.load(Ordering::Relaxed) >= 2000);
    let before = policy.probes.load(Ordering::Relaxed);
    assert!(all_found(&db, 2000));
    assert!(policy.probes.load(Ordering::Relaxed) >= before + 2000);
}

#[test]
fn a_policy_that_never_matches_makes_gets_skip_its_tables() {
    let dir = tempfile::tempdir().unwrap();
    let never = Counting::new("test.Never", false);
    let db = Db::open(dir.path(), options_with(Some(never.clone()))).unwrap();
    fill(&db, 500);
    assert!(db.stats().tables_per_level.iter().sum::<usize>() > 0);
    let misses = db.stats().block_cache_misses;
    let hits = db.stats().block_cache_hits;
    for i in 0..500 {
        assert_eq!(db.get(key(i)).unwrap(), None, "the filter hides key {i}");
    }
    // No data block was even looked for.
    assert_eq!(db.stats().block_cache_misses, misses);
    assert_eq!(db.stats().block_cache_hits, hits);
    assert!(never.probes.load(Ordering::Relaxed) >= 500);
    // Iterators do not consult filters.
    assert_eq!(scan(&db, Default::default()).unwrap().len(), 500);
}

#[test]
fn filters_of_another_policy_name_are_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(
        dir.path(),
        options_with(Some(Counting::new("test.Never", false))),
    )
    .unwrap();
    fill(&db, 1000);
    assert!(!all_found(&db, 1000));
    db.close().unwrap();

    // Another name: the old filters are not used, so every key is found.
    let other = Counting::new("test.Other", false);
    let db = Db::open(dir.path(), options_with(Some(other.clone()))).unwrap();
    assert!(all_found(&db, 1000));
    assert_eq!(other.probes.load(Ordering::Relaxed), 0);
    db.close().unwrap();

    // The built-in Bloom filter: the same.
    let db = Db::open(dir.path(), options_with(None)).unwrap();
    assert!(all_found(&db, 1000));
    // Tables it writes (rewriting every key) get Bloom filters, which a
    // reopen under the first policy's name ignores in turn.
    fill(&db, 1000);
    db.close().unwrap();
    let never = Counting::new("test.Never", false);
    let db = Db::open(dir.path(), options_with(Some(never.clone()))).unwrap();
    assert!(all_found(&db, 1000));
    assert_eq!(never.probes.load(Ordering::Relaxed), 0);
}

#[test]
fn filter_policy_is_not_settable_by_name() {
    let err = Options::default()
        .set("filter_policy", "test.Counting")
        .unwrap_err();
    assert!(err.to_string().contains("through the API"), "{err}");
}
