//! Records of a log of fuzzed bytes read by address. Input: a flags byte
//! (odd: fix the fragment checksums up first, as `log_reader` does), an
//! 8-byte offset, then the log. Checks that reads at the fuzzed offset fail
//! only with corruption, that every record the sequential reader returns
//! reads back the same at its offset, and that records cut from the input
//! and written by `LogWriter` read back at the addresses it returned.
#![no_main]

use std::path::PathBuf;

use libfuzzer_sys::fuzz_target;
use thicketdb::io::FileSystem;
use thicketdb::log::{LogReader, RandomAccessLogReader, RecoveryMode};

/// The same cap as the `log_reader` target.
const MAX_RECORD_SIZE: usize = 1 << 20;

fuzz_target!(|data: &[u8]| {
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    let Some((offset, rest)) = rest.split_first_chunk::<8>() else {
        return;
    };
    let mut log = rest.to_vec();
    if flags & 1 == 1 {
        thicketdb_fuzz::fix_log_checksums(&mut log);
    }
    let (fs, path) = thicketdb_fuzz::single_file("fuzz.log", &log);
    let reader = RandomAccessLogReader::new(fs.open_random(&path).expect("in-memory open"), path)
        .with_max_record_size(MAX_RECORD_SIZE);

    let raw = u64::from_le_bytes(*offset);
    for at in [raw, raw % (log.len() as u64 + 1)] {
        if let Err(err) = reader.read_record_at(at) {
            assert!(err.is_corruption(), "{err:?}");
        }
    }

    for &mode in RecoveryMode::ALL {
        let mut sequential = LogReader::new(
            thicketdb_fuzz::sequential_file(&log),
            PathBuf::from("fuzz.log"),
            mode,
        )
        .with_max_record_size(MAX_RECORD_SIZE);
        let mut record = Vec::new();
        for _ in 0..thicketdb_fuzz::MAX_STEPS {
            match sequential.read_record_into(&mut record) {
                Ok(Some(at)) => assert_eq!(reader.read_record_at(at).as_ref(), Ok(&record)),
                Ok(None) | Err(_) => break,
            }
        }
    }

    round_trip(rest, offset);
});

/// Logs records cut from `data` and reads each back by address.
fn round_trip(data: &[u8], sizes: &[u8; 8]) {
    let (fs, path, records) = thicketdb_fuzz::write_records(data, sizes);
    let reader = RandomAccessLogReader::new(fs.open_random(&path).expect("in-memory open"), path);
    for (offset, record) in records {
        assert_eq!(reader.read_record_at(offset).as_deref(), Ok(record));
    }
}
