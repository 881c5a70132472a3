//! Measures this machine's latency for a random dependent load (a pointer
//! chase through one cache line per step) over buffers of growing size: the
//! floor under any lookup whose data is spread over that much memory.
//!
//! `cargo run --release -p thicketdb --example memory_latency`

use std::time::Instant;

const LINE_WORDS: usize = 8;
const STEPS: usize = 2_000_000;

fn main() {
    for mib in [1usize, 4, 16, 64, 128, 256] {
        let lines = mib * 1024 * 1024 / (LINE_WORDS * 8);
        // A random cyclic order of the lines, so every load depends on the
        // previous one and the prefetchers cannot guess the next.
        let mut order: Vec<usize> = (0..lines).collect();
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        for i in (1..lines).rev() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            order.swap(i, (x % (i as u64 + 1)) as usize);
        }
        let mut next = vec![0usize; lines * LINE_WORDS];
        for i in 0..lines {
            next[order[i] * LINE_WORDS] = order[(i + 1) % lines] * LINE_WORDS;
        }
        let mut at = 0usize;
        let start = Instant::now();
        for _ in 0..STEPS {
            at = next[at];
        }
        let ns = start.elapsed().as_nanos() as f64 / STEPS as f64;
        println!(
            "{mib:>4} MiB: {ns:6.1} ns per dependent load (ended at {})",
            std::hint::black_box(at)
        );
    }
}
