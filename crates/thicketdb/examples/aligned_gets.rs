//! Random gets from a store larger than memory, with and without
//! `block_align` (issue 38), without the benchmark driver: loads KEYS
//! 16-byte keys of 200-byte values in random order (16 MiB memtables and
//! block cache), waits for compactions, reopens, then gets random keys for
//! SECONDS and prints gets/s and the device bytes per get
//! (`/proc/self/io` read_bytes). Run it inside a memory cgroup smaller than
//! the store so that gets reach the device.
//!
//! `cargo run --release -p thicketdb --example aligned_gets -- DIR ALIGN(0|1) [KEYS] [SECONDS]`

mod common;

use std::time::Instant;

use thicketdb::{Db, Options};

use common::{key, next, Args};

fn device_read_bytes() -> u64 {
    let io = std::fs::read_to_string("/proc/self/io").expect("/proc/self/io");
    io.lines()
        .find_map(|l| l.strip_prefix("read_bytes: "))
        .and_then(|v| v.trim().parse().ok())
        .expect("read_bytes in /proc/self/io")
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (dir, mut args) = Args::parse();
    let align = args.number(1) == 1;
    let keys = args.number(2_000_000);
    let seconds = args.number(30);
    let mut options = Options::default().block_cache_size(16 << 20);
    options.write_buffer_size = 16 << 20;
    options.block_align = align;
    let mut state = 1;
    let db = Db::open(&dir, options.clone())?;
    for _ in 0..keys {
        db.put(key(next(&mut state) % keys), [b'v'; 200])?;
    }
    db.wait_for_compactions()?;
    db.close()?;

    let db = Db::open(&dir, options)?;
    let before = device_read_bytes();
    let start = Instant::now();
    let mut gets = 0u64;
    while start.elapsed().as_secs() < seconds {
        db.get(key(next(&mut state) % keys))?;
        gets += 1;
    }
    let elapsed = start.elapsed().as_secs_f64();
    let bytes = device_read_bytes() - before;
    println!(
        "block_align={align} gets/s {:.0} device bytes/get {:.0}",
        gets as f64 / elapsed,
        bytes as f64 / gets as f64
    );
    Ok(())
}
