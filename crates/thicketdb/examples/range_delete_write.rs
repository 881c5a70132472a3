//! The cost of a range delete as a memtable accumulates them: `COUNT`
//! disjoint two-key range deletes written one at a time into one memtable
//! (large enough that none is flushed), timed per thousand, then one
//! iterator and one get over the result. Before fragments were kept by
//! start key, each range delete copied the memtable's whole fragment list.
//!
//! `cargo run --release -p thicketdb --example range_delete_write -- [COUNT]`

use std::time::Instant;

use thicketdb::{Db, Options, ReadOptions};

fn key(i: u64) -> String {
    format!("key{i:016}")
}

fn main() -> Result<(), thicketdb::Error> {
    let count: u64 = std::env::args()
        .nth(1)
        .map(|a| a.parse().expect("COUNT is a number"))
        .unwrap_or(50_000);
    let dir = tempfile::tempdir().map_err(|e| thicketdb::Error::InvalidArgument(e.to_string()))?;
    let db = Db::open(dir.path(), Options::default().write_buffer_size(1 << 30))?;
    let mut per_thousand = Vec::new();
    let mut start = Instant::now();
    for i in 0..count {
        // Spread over the key space in a scrambled order, so inserts land
        // everywhere in the fragment list.
        let at = (i * 7919) % count;
        db.delete_range(key(3 * at), key(3 * at + 2))?;
        if (i + 1) % 1000 == 0 {
            per_thousand.push(start.elapsed().as_micros() as f64 / 1000.0);
            start = Instant::now();
        }
    }
    let shown: Vec<String> = per_thousand
        .iter()
        .enumerate()
        .filter(|(n, _)| (n + 1) % (per_thousand.len() / 5).max(1) == 0)
        .map(|(n, us)| format!("{}k: {us:.1}", n + 1))
        .collect();
    println!(
        "us per range delete, by thousands written: {}",
        shown.join(", ")
    );
    let start = Instant::now();
    let mut it = db.iter(ReadOptions::default())?;
    it.seek_to_first();
    it.status()?;
    println!("first iterator: {} us", start.elapsed().as_micros());
    let start = Instant::now();
    assert!(db.get(key(1))?.is_none());
    println!("a get: {} us", start.elapsed().as_micros());
    assert_eq!(
        db.stats().flushes,
        0,
        "the memtable must hold every range delete"
    );
    Ok(())
}
