//! The direct loop behind the driver's short-scan figures in the chunked
//! layout: `yodb` loaded with KEYS 16-byte keys of 800-byte values in key
//! order, with chunks of CHUNK bytes (funk logs of CHUNK/5, CHUNK*2 with a
//! munk) and 32 MiB of munks; then SCANS scans from uniformly random keys,
//! each reading LEN entries, from one thread, with one clock read before
//! and one after the scans. Prints scans/s.
//!
//! `cargo run --release -p thicketdb --example yodb_short_scans -- DIR [KEYS] [CHUNK] [SCANS] [LEN]`

mod common;

use std::time::Instant;

use thicketdb::{Db, Profile, ReadOptions};

use common::{key, next};

fn main() {
    let (dir, mut args) = common::Args::parse();
    let (keys, chunk, scans, len) = (
        args.number(160_000),
        args.number(1 << 20),
        args.number(20_000),
        args.number(10),
    );
    let mut options = Profile::YoDb.options();
    options.chunk_size = chunk;
    options.funk_log_limit = chunk / 5;
    options.funk_log_limit_with_munk = chunk * 2;
    options.munk_cache_bytes = 32 << 20;
    let db = Db::open(&dir, options).expect("open");
    let value = [7u8; 800];
    for id in 0..keys {
        db.put(key(id), value).expect("put");
    }
    let mut state = 42;
    let mut read = 0u64;
    let start = Instant::now();
    for _ in 0..scans {
        let mut it = db.iter(ReadOptions::default()).expect("iter");
        it.seek(&key(next(&mut state) % keys));
        for _ in 0..len {
            if !it.valid() {
                break;
            }
            read += it.value().len() as u64;
            it.next();
        }
        it.status().expect("scan");
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "keys {keys} chunk {chunk} scans {scans} len {len}: {:.0} scans/s ({} bytes read)",
        scans as f64 / secs,
        read
    );
    db.close().expect("close");
}
