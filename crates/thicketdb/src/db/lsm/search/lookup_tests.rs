//! Parallel search inside the store: when a lookup goes to the search
//! threads (only with two or more candidates whose blocks need a read) and
//! that every block read, on any thread, is counted.

use crate::db::*;
use crate::options::{Options, Profile};

/// `runs` L0 runs (no compaction, no filters), each holding every even key
/// below 400 and key `k{run}001` only in its own run; table blocks read
/// with `O_DIRECT` when `direct` (a block cache miss is a device read).
fn store(dir: &std::path::Path, runs: u32, direct: bool) -> Db {
    let options = Options {
        write_buffer_size: 1 << 20,
        bloom_bits_per_key: 0,
        disable_auto_compactions: true,
        search_threads: 3,
        use_direct_reads: direct,
        l0_slowdown_writes_trigger: 100,
        l0_stop_writes_trigger: 100,
        ..Profile::Sifr.options()
    };
    let db = Db::open(dir, options).unwrap();
    for run in 0..runs {
        for i in (0..400).step_by(2) {
            db.put(format!("k{i:03}"), [run as u8; 100]).unwrap();
        }
        db.put(format!("k{run:03}001"), b"own").unwrap();
        db.flush().unwrap();
    }
    db
}

#[test]
fn lookups_needing_reads_go_parallel_and_count_every_thread_s_blocks() {
    let dir = tempfile::tempdir().unwrap();
    let runs = 6;
    let db = store(dir.path(), runs, true);
    // Opens every table (index and metadata reads) and caches a data
    // block far from the key below.
    assert_eq!(db.get("k300001").unwrap(), None);
    let before = db.stats();
    // The oldest run's own key: every run is a candidate (no filters), and
    // every newer one must answer `Absent` first, each from a block not
    // yet cached.
    assert_eq!(db.get("k000001").unwrap(), Some(b"own".to_vec()));
    let s = db.stats();
    assert_eq!(s.search_lookups - before.search_lookups, 1, "{s:?}");
    let probes = s.search_probes - before.search_probes;
    assert_eq!(probes, u64::from(runs), "{s:?}");
    // One data block per probe, whichever thread probed.
    assert_eq!(s.block_cache_misses - before.block_cache_misses, probes);
    assert_eq!(s.get_blocks_read - before.get_blocks_read, probes, "{s:?}");
}

#[test]
fn lookups_answered_from_the_block_cache_stay_on_the_caller() {
    let dir = tempfile::tempdir().unwrap();
    let db = store(dir.path(), 6, true);
    assert_eq!(db.get("k000001").unwrap(), Some(b"own".to_vec()));
    let warm = db.stats();
    for _ in 0..20 {
        assert_eq!(db.get("k000001").unwrap(), Some(b"own".to_vec()));
    }
    let s = db.stats();
    assert_eq!(s.search_lookups, warm.search_lookups, "{s:?}");
    assert_eq!(s.get_blocks_read, warm.get_blocks_read, "{s:?}");
    // One candidate needing a read is probed by the caller too: the key
    // of the newest run, whose block holds keys no lookup read yet.
    let newest = db.stats();
    assert_eq!(db.get("k005001").unwrap(), Some(b"own".to_vec()));
    assert_eq!(db.stats().search_lookups, newest.search_lookups);
}

#[test]
fn buffered_reads_never_go_parallel() {
    let dir = tempfile::tempdir().unwrap();
    let db = store(dir.path(), 6, false);
    assert_eq!(db.get("k300001").unwrap(), None);
    let before = db.stats();
    assert_eq!(db.get("k000001").unwrap(), Some(b"own".to_vec()));
    let s = db.stats();
    assert_eq!(s.search_lookups, before.search_lookups, "{s:?}");
    assert_eq!(s.get_blocks_read - before.get_blocks_read, 6, "{s:?}");
}
