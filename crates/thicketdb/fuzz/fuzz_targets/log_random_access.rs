//! Records of a log of fuzzed bytes read by address. Input: a flags byte
//! (odd: fix the fragment checksums up first, as `log_reader` does), an
//! 8-byte offset, then the log. Checks that reads at the fuzzed offset fail
//! only with corruption, that every record the sequential reader returns
//! reads back the same at its offset, and that records cut from the input
//! and written by `LogWriter` read back at the addresses it returned.
#![no_main]

use std::path::{Path, PathBuf};

use libfuzzer_sys::fuzz_target;
use thicketdb::io::FileSystem;
use thicketdb::log::{LogReader, LogWriter, RandomAccessLogReader, RecoveryMode};

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

/// Cuts `data` into records of sizes taken from `sizes` (cycled, scaled so
/// that records span blocks), logs them and reads each back by address.
fn round_trip(data: &[u8], sizes: &[u8; 8]) {
    let fs = thicketdb::io::fault::FaultFs::new();
    let path = Path::new("round-trip.log");
    let mut writer = LogWriter::new(fs.create(path).expect("in-memory create"));
    let mut records = Vec::new();
    let mut rest = data;
    for &size in sizes.iter().cycle().take(64) {
        let (record, tail) = rest.split_at((usize::from(size) * 300).min(rest.len()));
        let offset = writer.add_record(record).expect("in-memory append");
        records.push((offset, record));
        rest = tail;
        if rest.is_empty() {
            break;
        }
    }
    writer.flush().expect("in-memory flush");
    let reader = RandomAccessLogReader::new(
        fs.open_random(path).expect("in-memory open"),
        path.to_path_buf(),
    );
    for (offset, record) in records {
        assert_eq!(reader.read_record_at(offset).as_deref(), Ok(record));
    }
}
