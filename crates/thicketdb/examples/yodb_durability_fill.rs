//! The direct loop behind the driver's `durability` comparison (issue 17):
//! `yodb` filled with KEYS random 16-byte keys and 100-byte values (no
//! sync), once with `durability=sync` and once with `durability=async`
//! per round, each in a fresh directory under DIR; one clock read before
//! the loop and one after `close` (which, in the asynchronous mode, takes
//! the last checkpoint). Prints ops/s per run.
//!
//! `cargo run --release -p thicketdb --example yodb_durability_fill -- DIR [KEYS] [ROUNDS]`

use std::time::Instant;

use thicketdb::{Db, Durability, Profile};

/// splitmix64: the keys' random order, the same every run.
fn next(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let dir = std::path::PathBuf::from(args.next().expect("DIR"));
    let keys: u64 = args.next().map_or(300_000, |a| a.parse().expect("KEYS"));
    let rounds: u32 = args.next().map_or(2, |a| a.parse().expect("ROUNDS"));
    let value = [7u8; 100];
    for round in 0..rounds {
        for durability in [Durability::Sync, Durability::Async] {
            let path = dir.join(format!("{durability}-{round}"));
            let _ = std::fs::remove_dir_all(&path);
            let mut options = Profile::YoDb.options();
            options.durability = durability;
            let db = Db::open(&path, options).expect("open");
            let mut state = 42;
            let start = Instant::now();
            for _ in 0..keys {
                let id = next(&mut state) % keys;
                let mut key = *b"k0000000________";
                key[8..].copy_from_slice(&id.to_be_bytes());
                db.put(key, value).expect("put");
            }
            db.close().expect("close");
            let seconds = start.elapsed().as_secs_f64();
            println!(
                "round {round} durability={durability}: {:.0} ops/s",
                keys as f64 / seconds
            );
            let _ = std::fs::remove_dir_all(&path);
        }
    }
}
