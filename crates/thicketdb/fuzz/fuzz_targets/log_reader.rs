//! A log (WAL or MANIFEST) of fuzzed bytes, read in both recovery modes.
//! An odd first byte has the fragment checksums fixed up first, so that
//! record assembly and recovery-mode handling get fuzzed too.
#![no_main]

use std::path::PathBuf;

use libfuzzer_sys::fuzz_target;
use thicketdb::log::{LogReader, RecoveryMode};

fuzz_target!(|data: &[u8]| {
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    let mut log = rest.to_vec();
    if flags & 1 == 1 {
        thicketdb_fuzz::fix_log_checksums(&mut log);
    }
    for &mode in RecoveryMode::ALL {
        let mut reader = LogReader::new(
            thicketdb_fuzz::sequential_file(&log),
            PathBuf::from("fuzz.log"),
            mode,
        )
        .with_max_record_size(1 << 20);
        let mut record = Vec::new();
        let mut last = None;
        for _ in 0..thicketdb_fuzz::MAX_STEPS {
            match reader.read_record_into(&mut record) {
                Ok(Some(offset)) => {
                    // Records start in file order.
                    assert!(last < Some(offset), "{last:?} then {offset}");
                    assert!(offset < log.len() as u64);
                    last = Some(offset);
                }
                Ok(None) | Err(_) => break,
            }
        }
        let _ = (reader.skipped(), reader.dropped_tail());
    }
});
