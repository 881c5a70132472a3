//! A close stops a compaction under way, as LevelDB and RocksDB do: the
//! merge's unreferenced output is removed, its inputs stay, nothing is lost
//! and the store records no failure. (A close used to wait for the whole
//! merge, and the benchmarks' device bytes counted it.)

use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use crate::db::tests::scan;
use crate::db::*;
use crate::io::counting::CountingFs;
use crate::io::fault::FaultFs;
use crate::io::FileSystem;
use crate::options::Options;

fn is_segment(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "seg")
}

fn options() -> Options {
    Options {
        write_buffer_size: 256 << 10,
        target_table_size: 64 << 10,
        block_size: 1024,
        l0_compaction_trigger: 4,
        ..Options::default()
    }
}

fn segments(fs: &FaultFs) -> usize {
    fs.list(Path::new("db"))
        .unwrap()
        .iter()
        .filter(|name| is_segment(Path::new(name)))
        .count()
}

#[test]
fn a_close_stops_a_compaction_under_way_and_fails_nothing() {
    let base = Arc::new(FaultFs::new());
    let (started, merge_started) = mpsc::channel();
    let (resume, resumed) = mpsc::channel::<()>();
    let resumed = Mutex::new(resumed);
    // The first segment a compaction thread creates holds the merge there
    // until the test has begun the close.
    let fs = CountingFs::new(base.clone(), is_segment).with_create_hook(Box::new(move |_| {
        let in_compaction = std::thread::current()
            .name()
            .is_some_and(|n| n.starts_with("thicket-compact"));
        if in_compaction && started.send(()).is_ok() {
            let _ = resumed.lock().unwrap().recv();
        }
    }));
    let db = Db::open_with_fs(Path::new("db"), options(), Arc::new(fs)).unwrap();
    for round in 0..4u32 {
        // 1,000 entries of ~220 bytes: one flush each, under the memtable.
        for i in (0..4000).step_by(4) {
            db.put(format!("key{:06}", i + round % 2), [round as u8; 200])
                .unwrap();
        }
        db.flush().unwrap();
    }
    merge_started
        .recv_timeout(Duration::from_secs(60))
        .expect("four L0 runs start a compaction");
    drop(merge_started);
    // The merge waits before creating its output: nothing has changed yet.
    let expected = scan(&db, ReadOptions::default());
    let l0_runs = db.stats().runs_per_level[0];
    let flushed = segments(&base);
    assert!(l0_runs >= 4);
    let Engine::Lsm(handle) = &db.engine else {
        unreachable!("an LSM store")
    };
    let inner = handle.inner.clone();
    // What `close` does first; the merge then stops at its next look.
    inner.closed.store(true, Ordering::Release);
    resume.send(()).unwrap();
    db.close().unwrap();
    assert!(
        !inner.failed.load(Ordering::Acquire),
        "a compaction stopped by the close failed the store"
    );
    assert!(inner.background.lock().error.is_none());
    drop(inner);
    assert_eq!(
        segments(&base),
        flushed,
        "the stopped merge's output is removed, the flushes' segments stay"
    );

    let reopened = Db::open_with_fs(
        Path::new("db"),
        Options {
            disable_auto_compactions: true,
            ..options()
        },
        base,
    )
    .unwrap();
    assert_eq!(
        reopened.stats().runs_per_level[0],
        l0_runs,
        "the merge's inputs stay in L0"
    );
    assert_eq!(scan(&reopened, ReadOptions::default()), expected);
}
