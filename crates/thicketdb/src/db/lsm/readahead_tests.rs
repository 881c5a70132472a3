//! Compaction read-ahead (`compaction_readahead_bytes`): a compaction reads
//! its input tables through descriptors of its own, in spans, and writes
//! what block-by-block reads would.

use std::path::Path;
use std::sync::Arc;

use crate::db::tests::scan;
use crate::db::*;
use crate::io::counting::CountingFs;
use crate::io::fault::FaultFs;
use crate::options::Options;

fn is_segment(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "seg")
}

fn options(readahead: u64) -> Options {
    Options {
        write_buffer_size: 256 << 10,
        target_table_size: 64 << 10,
        block_size: 1024,
        compaction_readahead_bytes: readahead,
        ..Options::default()
    }
}

/// Loads 4,000 keys in 4 flushes and compacts everything; returns the
/// read calls on segment files until then (opening tables reads their
/// metadata too), the scattered opens, and the store's contents.
/// What the load and compaction read, and what the store holds after them.
struct Compacted {
    read_calls: u64,
    scattered_opens: u64,
    contents: Vec<(Vec<u8>, Vec<u8>)>,
}

fn compact(readahead: u64) -> Compacted {
    let fs = CountingFs::new(Arc::new(FaultFs::new()), is_segment);
    let reads = fs.reads();
    let db = Db::open_with_fs(Path::new("db"), options(readahead), Arc::new(fs)).unwrap();
    for round in 0..4u32 {
        for i in (round..4000).step_by(4) {
            db.put(format!("key{i:06}"), [round as u8; 200]).unwrap();
        }
        db.flush().unwrap();
    }
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    // Before the scan, which reads through the shared descriptors.
    Compacted {
        read_calls: reads.calls(),
        scattered_opens: reads.scattered_opens(),
        contents: scan(&db, ReadOptions::default()),
    }
}

#[test]
fn a_compaction_reads_its_tables_in_spans_through_its_own_descriptors() {
    let plain = compact(0);
    let read_ahead = compact(1 << 20);
    let (block_by_block, spans) = (plain.read_calls, read_ahead.read_calls);
    assert_eq!(
        plain.scattered_opens, 0,
        "without read-ahead compactions share descriptors"
    );
    assert!(
        read_ahead.scattered_opens > 0,
        "each input table gets a descriptor of its own"
    );
    // Two merges read the four flushes' tables (1 KiB blocks): about
    // 1,300 read calls block by block, about 115 with read-ahead (one or
    // two spans per table, besides the metadata every table open reads).
    assert!(
        block_by_block > 500,
        "{block_by_block} reads without read-ahead"
    );
    assert!(
        spans * 5 < block_by_block,
        "{spans} reads with read-ahead against {block_by_block} without"
    );
    assert_eq!(plain.contents.len(), 4000);
    assert_eq!(
        read_ahead.contents, plain.contents,
        "read-ahead changed what the compaction wrote"
    );
}
