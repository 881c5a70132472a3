//! The cost of a point get beside range tombstones: two stores with the
//! same `COUNT` keys (`VALUE_SIZE`-byte values, compacted, blocks warm in
//! the block cache); the second also has `COUNT / 1000` range tombstones
//! of ten keys each, spread over the key space. Both read the same random
//! keys (about 1% of them covered in the second store) in alternating
//! rounds, with the tombstones (1) in the memtable, (2) flushed into an L0
//! table, (3) merged into the bottom level's tables (a held snapshot keeps
//! them there). The median round of each is reported, in ns per get.
//! Under a chunked profile (`yodb`) the stages are (1) in the chunk logs
//! and (2) in the funk tables after a funk rebalance (a held snapshot
//! keeps them).
//!
//! `cargo run --release -p thicketdb --example range_delete_get -- [COUNT] [VALUE_SIZE] [PROFILE]`

use std::time::Instant;

use thicketdb::{Db, Layout, Profile};

const ROUNDS: usize = 7;
const LOOKUPS: u64 = 200_000;

fn key(i: u64) -> String {
    format!("key{i:016}")
}

fn load(
    profile: Profile,
    count: u64,
    value_size: usize,
) -> Result<(tempfile::TempDir, Db), thicketdb::Error> {
    let dir = tempfile::tempdir().map_err(|e| thicketdb::Error::InvalidArgument(e.to_string()))?;
    let options = profile
        .options()
        .block_cache_size(512 << 20)
        .write_buffer_size(64 << 20);
    let db = Db::open(dir.path(), options)?;
    let value = vec![b'v'; value_size];
    for i in 0..count {
        db.put(key(i), &value)?;
    }
    db.compact_range(None, None)?;
    Ok((dir, db))
}

/// Median ns per get of `ROUNDS` rounds over `keys` (after a warming
/// round), and the keys found per round.
fn rounds(
    plain: &Db,
    tombstoned: &Db,
    keys: &[String],
) -> Result<[(f64, u64); 2], thicketdb::Error> {
    let mut times = [Vec::new(), Vec::new()];
    let mut found = [0u64; 2];
    for round in 0..=ROUNDS {
        for (n, db) in [plain, tombstoned].into_iter().enumerate() {
            let start = Instant::now();
            let mut hits = 0;
            for k in keys {
                hits += u64::from(db.get_with(k, |v| v.len())?.is_some());
            }
            let ns = start.elapsed().as_nanos() as f64 / keys.len() as f64;
            if round > 0 {
                times[n].push(ns);
            }
            found[n] = hits;
        }
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    Ok([
        (median(&mut times[0]), found[0]),
        (median(&mut times[1]), found[1]),
    ])
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let count: u64 = args
        .next()
        .map(|a| a.parse())
        .transpose()?
        .unwrap_or(200_000);
    let value_size: usize = args.next().map(|a| a.parse()).transpose()?.unwrap_or(100);
    let profile: Profile = args
        .next()
        .map(|a| a.parse())
        .transpose()?
        .unwrap_or(Profile::Default);
    let (_plain_dir, plain) = load(profile, count, value_size)?;
    let (_dir, tombstoned) = load(profile, count, value_size)?;
    let tombstones = count / 1000;
    for t in 0..tombstones {
        let start = t * 1000 + 500;
        tombstoned.delete_range(key(start), key(start + 10))?;
    }
    let keys: Vec<String> = {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        (0..LOOKUPS)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                key(x % count)
            })
            .collect()
    };
    println!(
        "{profile}: {count} keys, {value_size}-byte values, {tombstones} range tombstones of 10 keys, median of {ROUNDS} rounds of {LOOKUPS} gets (ns per get)"
    );
    let report = |place: &str, [(plain_ns, plain_found), (ns, found)]: [(f64, u64); 2]| {
        println!(
            "tombstones {place:<10} without {plain_ns:>6.0}  with {ns:>6.0}  ratio {:.2}  (found {plain_found} / {found})",
            ns / plain_ns
        );
    };
    let keep = tombstoned.snapshot();
    if profile.options().layout == Layout::Chunked {
        report("in logs", rounds(&plain, &tombstoned, &keys)?);
        tombstoned.compact_range(None, None)?;
        report("in funks", rounds(&plain, &tombstoned, &keys)?);
    } else {
        report("in memtable", rounds(&plain, &tombstoned, &keys)?);
        tombstoned.flush()?;
        report("in L0", rounds(&plain, &tombstoned, &keys)?);
        tombstoned.compact_range(None, None)?;
        report("at bottom", rounds(&plain, &tombstoned, &keys)?);
    }
    drop(keep);
    plain.close()?;
    tombstoned.close()?;
    Ok(())
}
