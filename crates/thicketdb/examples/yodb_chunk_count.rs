//! How the chunked layout's per-operation costs grow with the number of
//! chunks (issue 32: costs within 1.5x from 1,000 to 100,000 chunks, an open
//! in under a second). Loads KEYS 16-byte keys of 100-byte values in key
//! order into a `yodb` store whose chunks are sized so that the load makes
//! about CHUNKS of them (munks of 8 MiB, so most chunks have none), closes
//! it, times the reopen, then times OPS random puts, OPS random gets and
//! OPS/10 scans of 10 entries from one thread, one clock read before and
//! after each phase. Prints one line of figures per run; compare runs of
//! the same KEYS with different CHUNKS.
//!
//! `cargo run --release -p thicketdb --example yodb_chunk_count -- DIR CHUNKS [KEYS] [OPS]`

mod common;

use std::time::Instant;

use thicketdb::{Db, Profile, ReadOptions};

use common::{key, next};

/// Microseconds per operation of `ops` runs of `op`.
fn per_op(ops: u64, mut op: impl FnMut()) -> f64 {
    let start = Instant::now();
    for _ in 0..ops {
        op();
    }
    start.elapsed().as_secs_f64() * 1e6 / ops as f64
}

fn main() {
    let (dir, mut args) = common::Args::parse();
    let (chunks, keys, ops) = (
        args.number(1000),
        args.number(200_000),
        args.number(100_000),
    );
    let mut options = Profile::YoDb.options();
    // A split fills each chunk to `chunk_fill_factor` of the size.
    let entry = 16 + 100 + 16;
    options.chunk_size =
        ((keys * entry) as f64 / chunks as f64 / options.chunk_fill_factor).max(4096.0) as u64;
    options.funk_log_limit = (options.chunk_size / 5).max(1024);
    options.funk_log_limit_with_munk = options.chunk_size * 2;
    options.munk_cache_bytes = 8 << 20;
    options.row_cache_bytes = 4 << 20;
    options.block_cache_size = 16 << 20;
    let value = [7u8; 100];
    let load = Instant::now();
    let db = Db::open(&dir, options.clone()).expect("open");
    for id in 0..keys {
        db.put(key(id), value).expect("put");
    }
    db.close().expect("close");
    let load = load.elapsed().as_secs_f64();
    let opened = Instant::now();
    let db = Db::open(&dir, options).expect("reopen");
    let open_ms = opened.elapsed().as_secs_f64() * 1e3;
    let made = db.stats().chunks;
    let before = db.stats();
    let mut state = 42;
    let put_us = per_op(ops, || {
        db.put(key(next(&mut state) % keys), value).expect("put");
    });
    let get_us = per_op(ops, || {
        assert!(db.get(key(next(&mut state) % keys)).expect("get").is_some());
    });
    let scan_us = per_op(ops / 10, || {
        let mut it = db.iter(ReadOptions::default()).expect("iter");
        it.seek(&key(next(&mut state) % keys));
        for _ in 0..10 {
            if !it.valid() {
                break;
            }
            it.next();
        }
    });
    let stats = db.stats();
    println!(
        "chunks={made} keys={keys} load_s={load:.1} open_ms={open_ms:.1} put_us={put_us:.2} \
         get_us={get_us:.2} scan10_us={scan_us:.2} open_tables={} munks={} | after the open: \
         rebalances={} puts_waited_for_build={} munk_loads={} munk_evictions={} fsyncs={}",
        stats.open_segment_files,
        stats.munks_resident,
        stats.chunk_funk_rebalances - before.chunk_funk_rebalances,
        stats.chunk_puts_waited_for_build - before.chunk_puts_waited_for_build,
        stats.chunk_munk_loads - before.chunk_munk_loads,
        stats.chunk_munk_evictions - before.chunk_munk_evictions,
        stats.fsyncs - before.fsyncs,
    );
}
