//! The chunk logs' write buffers stay within `chunk_log_buffer_bytes`
//! however many chunks the data spreads over. Each log held a 64 KiB
//! buffer of its own before, so the memory grew with the data: the
//! `yodb` store was killed by its memory cap at 4x memory (issue 32,
//! `docs/reproduction.md`).

use std::path::Path;
use std::sync::Arc;

use super::tests::{store, tiny_uncached};
use crate::db::Db;
use crate::io::fault::FaultFs;
use crate::options::{Durability, Options};

#[test]
fn log_buffers_stay_within_their_budget_as_chunks_multiply() {
    let budget = 64 << 10;
    let options = Options {
        durability: Durability::Async,
        // No checkpoint frees the buffers behind the test's back (a build
        // may still take one).
        checkpoint_interval: 3_600_000,
        chunk_log_buffer_bytes: budget,
        ..tiny_uncached()
    };
    let fs = FaultFs::new();
    let db = Db::open_with_fs(Path::new("/store"), options, Arc::new(fs)).unwrap();
    let keys = 12_000u64;
    let (mut most, mut grouped) = (0, 0);
    for i in 0..keys {
        // Spread over the key space: every chunk keeps taking appends.
        let key = format!("key{:08}", (i * 7_919) % keys);
        db.put(key.as_bytes(), [b'v'; 100]).unwrap();
        if i % 16 == 0 {
            let held = store(&db).log_buffer_bytes();
            most = most.max(held);
            grouped += u64::from(held > 0);
        }
    }
    let chunks = store(&db).stats().chunks;
    assert!(chunks >= 100, "the data spread over {chunks} chunks only");
    assert!(
        most <= budget,
        "the chunk logs' buffers held {most} bytes, past the budget of {budget}"
    );
    assert!(grouped > 0, "no append was ever left in a group");
}
