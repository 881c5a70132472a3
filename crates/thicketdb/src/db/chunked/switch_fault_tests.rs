//! A fault at each fallible operation of a funk rebalance (its table, its
//! new logs, the tail copy, the syncs, the chunk list's temporary file,
//! the rename over `CHUNKS` and the directory sync after it): the write
//! that ran it fails and so does the store, and after a process crash the
//! store opens and holds every acknowledged put. Found by
//! `scripts/fault-campaign` (libfiu failing `fsync` of the directory after
//! the rename): the rebalance deleted the new chunks' files, which the
//! renamed `CHUNKS` named, so the store no longer opened.

use std::path::Path;
use std::sync::Arc;

use super::concurrency_tests::get;
use super::tests::tiny_uncached;
use super::ChunkStore;
use crate::db::{WriteBatch, WriteOptions};
use crate::io::fault::{FaultFs, FaultKind};
use crate::options::Options;

fn try_put(store: &ChunkStore, key: &[u8]) -> crate::error::Result<()> {
    let mut batch = WriteBatch::new();
    batch.put(key, [b'p'; 64]).unwrap();
    store.write(batch, WriteOptions { sync: false })
}

#[test]
fn a_fault_at_each_step_of_a_rebalance_keeps_every_acknowledged_put() {
    let options = Options {
        // The writer past the limit rebalances inline: one thread, one
        // order of operations, so `ops` walks through all of them.
        chunk_rebalance_threads: 0,
        ..tiny_uncached()
    };
    let dir = Path::new("/db");
    let mut faulted_after_rename = false;
    for ops in 0.. {
        let fs = FaultFs::new();
        let store = ChunkStore::open(dir, options.clone(), Arc::new(fs.clone())).unwrap();
        let chunk = store.default_space().chunk_set().chunks[0].clone();
        let mut acked = Vec::new();
        while chunk.log.len() + 200 <= store.options.funk_log_limit {
            let key = format!("k{:05}", acked.len()).into_bytes();
            try_put(&store, &key).unwrap();
            acked.push(key);
        }
        let renames = fs.stats().renames;
        fs.fail_after_ops(ops, FaultKind::Io);
        let mut failed = false;
        while !chunk.is_retired() {
            let key = format!("k{:05}", acked.len()).into_bytes();
            match try_put(&store, &key) {
                Ok(()) => acked.push(key),
                Err(_) => {
                    failed = true;
                    break;
                }
            }
        }
        let injected = fs.stats().injected_failures;
        faulted_after_rename |= failed && fs.stats().renames > renames;
        if failed {
            let refused = try_put(&store, b"after").unwrap_err();
            assert!(
                matches!(refused, crate::error::Error::Background(_)),
                "ops {ops}: {refused}"
            );
        }
        fs.clear_faults();
        let _ = store.close();
        drop((chunk, store));
        fs.crash_process();
        let store = ChunkStore::open(dir, options.clone(), Arc::new(fs.clone()))
            .unwrap_or_else(|e| panic!("fault after {ops} operations: reopen: {e}"));
        for key in &acked {
            assert!(
                get(&store, key).is_some(),
                "fault after {ops} operations: acknowledged {key:?} lost"
            );
        }
        store.close().unwrap();
        if injected == 0 {
            // The rebalance ran to its end before the fault was due.
            break;
        }
    }
    assert!(faulted_after_rename, "no fault fell after the rename");
}
