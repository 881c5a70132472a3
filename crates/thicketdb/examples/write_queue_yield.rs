//! The direct loop behind `write_thread_max_yield_micros`'s figures: the
//! `default` profile with that option, THREADS threads putting KEYS random
//! 16-byte keys of 100-byte values between them (no sync), one clock read
//! before and one after. Prints puts/s and the write groups formed.
//!
//! `cargo run --release -p thicketdb --example write_queue_yield -- DIR [YIELD_US] [THREADS] [KEYS]`

mod common;

use std::time::Instant;

use thicketdb::{Db, Profile};

fn main() {
    let (dir, mut args) = common::Args::parse();
    let (yield_us, threads, keys) = (args.number(50), args.number(4), args.number(1_000_000));
    let options = Profile::Default
        .options()
        .write_thread_max_yield_micros(yield_us);
    let db = Db::open(&dir, options).expect("open");
    let value = [b'v'; 100];
    let started = Instant::now();
    std::thread::scope(|s| {
        for t in 0..threads {
            let db = &db;
            s.spawn(move || {
                let mut state = t;
                for _ in 0..keys / threads {
                    let id = common::next(&mut state);
                    db.put(common::key(id), value).expect("put");
                }
            });
        }
    });
    let secs = started.elapsed().as_secs_f64();
    let stats = db.stats();
    println!(
        "yield {yield_us} us, {threads} threads: {:.0} puts/s, {} write groups for {} puts",
        (keys / threads * threads) as f64 / secs,
        stats.write_groups,
        stats.user_writes
    );
}
