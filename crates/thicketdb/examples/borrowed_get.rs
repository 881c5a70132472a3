//! Compares `Db::get` (copies the value into a new `Vec`) with
//! `Db::get_with` (borrows it from the cached block) on one thread: a store
//! of `COUNT` keys with `VALUE_SIZE`-byte values, flushed and compacted,
//! blocks warm in the block cache; both read the same random keys, in
//! alternating rounds, and the median round of each is reported.
//!
//! `cargo run --release -p thicketdb --example borrowed_get -- [COUNT] [VALUE_SIZE]`

use std::time::Instant;

use thicketdb::{Db, Options};

const ROUNDS: usize = 7;
const LOOKUPS: u64 = 200_000;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let count: u64 = args
        .next()
        .map(|a| a.parse())
        .transpose()?
        .unwrap_or(200_000);
    let value_size: usize = args.next().map(|a| a.parse()).transpose()?.unwrap_or(100);
    let dir = tempfile::tempdir()?;
    let options = Options::default().block_cache_size(512 << 20);
    let db = Db::open(dir.path(), options)?;
    let value = vec![b'v'; value_size];
    for i in 0..count {
        db.put(format!("key{i:016}"), &value)?;
    }
    db.compact_range(None, None)?;
    let keys: Vec<Vec<u8>> = {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        (0..LOOKUPS)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                format!("key{:016}", x % count).into_bytes()
            })
            .collect()
    };
    let mut owned = Vec::new();
    let mut borrowed = Vec::new();
    let mut checksum = 0usize;
    for round in 0..=ROUNDS {
        let start = Instant::now();
        for k in &keys {
            checksum += db.get(k)?.map_or(0, |v| v.len());
        }
        let get_ns = start.elapsed().as_nanos() as f64 / LOOKUPS as f64;
        let start = Instant::now();
        for k in &keys {
            checksum += db.get_with(k, |v| v.len())?.unwrap_or(0);
        }
        let with_ns = start.elapsed().as_nanos() as f64 / LOOKUPS as f64;
        // Round 0 warms the block cache.
        if round > 0 {
            owned.push(get_ns);
            borrowed.push(with_ns);
        }
    }
    assert_eq!(checksum, 2 * (ROUNDS + 1) * LOOKUPS as usize * value_size);
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    println!(
        "{count} keys, {value_size}-byte values, cached blocks: get {:.0} ns, get_with {:.0} ns (median of {ROUNDS} rounds of {LOOKUPS})",
        median(&mut owned),
        median(&mut borrowed)
    );
    db.close()?;
    Ok(())
}
