//! What bounds a random fill (issue 12): the writer's insert into the
//! memtable skiplist, measured alone. Fills memtables of ENTRIES random
//! 16-byte keys with 100-byte values (a 64 MiB memtable of
//! `thicket bench --workload fillrandom` holds ~450k), ROUNDS times, then
//! gets as many keys, half present and half absent, from the last one
//! built without and the last one built with a Bloom filter (rounds
//! alternate). One thread; prints ns per insert (best of the rounds) and
//! per get.
//!
//! `cargo run --release -p thicketdb --example memtable_insert -- [ENTRIES] [ROUNDS]`

use std::time::Instant;

use thicketdb::format::internal_key::{InternalKey, ValueKind};
use thicketdb::memtable::Memtable;
use thicketdb::KeyOrder;

/// splitmix64: the keys' random source, the same every run.
fn next(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn key(id: u64) -> [u8; 16] {
    let mut k = *b"k0000000________";
    k[8..].copy_from_slice(&id.to_be_bytes());
    k
}

fn main() {
    let mut args = std::env::args().skip(1);
    let entries: u64 = args.next().map_or(450_000, |a| a.parse().expect("ENTRIES"));
    let rounds: u32 = args.next().map_or(5, |a| a.parse().expect("ROUNDS"));
    let value = [7u8; 100];
    let mut best_insert = f64::MAX;
    // The last memtable built without and with a filter.
    let mut built: [Option<Memtable>; 2] = [None, None];
    for round in 0..rounds.max(2) {
        let filter = if round % 2 == 0 { 671_088 } else { 0 };
        let mem = Memtable::new(0, KeyOrder::Bytewise).with_filter(filter);
        let mut rng = 42;
        let start = Instant::now();
        for seq in 1..=entries {
            mem.add(seq, ValueKind::Value, &key(next(&mut rng)), &value);
        }
        let ns = start.elapsed().as_nanos() as f64 / entries as f64;
        best_insert = best_insert.min(ns);
        println!("round {round}: {ns:.0} ns/insert (filter {filter} bytes)");
        built[usize::from(filter > 0)] = Some(mem);
    }
    println!("best {best_insert:.0} ns/insert");
    for (filtered, mem) in built.iter().enumerate() {
        let mem = mem.as_ref().expect("both kinds built");
        let mut rng = 42;
        let mut absent = 7;
        let start = Instant::now();
        let mut found = 0u64;
        for i in 0..entries {
            let id = match i % 2 {
                0 => next(&mut rng),
                _ => next(&mut absent) | 1 << 63,
            };
            let lookup = InternalKey::new(&key(id), u64::MAX >> 8, ValueKind::SEEK);
            found += u64::from(mem.get(lookup.encoded()).is_some());
        }
        let ns = start.elapsed().as_nanos() as f64 / entries as f64;
        println!(
            "{ns:.0} ns/get, filter {}: {found} of {entries} found (half are absent)",
            ["off", "on"][filtered]
        );
    }
}
