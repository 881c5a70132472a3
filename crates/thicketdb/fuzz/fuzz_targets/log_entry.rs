//! A log table's entry (TRIAD-LOG): a value address and the value read at
//! it. Input: a flags byte (odd: fix the fragment checksums up first, as
//! `log_reader` does), the length of the encoded address (one byte), the
//! address, then the log. Checks that an address decodes or fails cleanly
//! and its encoding decodes to it again, that reading a value at it fails only with
//! corruption, and that values cut from records written by `LogWriter`
//! (inside one fragment or spanning blocks) read back exactly at their
//! addresses.
#![no_main]

use libfuzzer_sys::fuzz_target;
use thicketdb::io::FileSystem;
use thicketdb::log::{LogAddress, RandomAccessLogReader, ValueAddress};

/// The same cap as the `log_reader` target.
const MAX_RECORD_SIZE: usize = 1 << 20;

fuzz_target!(|data: &[u8]| {
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    let Some((&len, rest)) = rest.split_first() else {
        return;
    };
    let (encoded, log) = rest.split_at(usize::from(len).min(rest.len()));
    let mut log = log.to_vec();
    if flags & 1 == 1 {
        thicketdb_fuzz::fix_log_checksums(&mut log);
    }
    let (fs, path) = thicketdb_fuzz::single_file("fuzz.log", &log);
    let reader = RandomAccessLogReader::new(fs.open_random(&path).expect("in-memory open"), path)
        .with_max_record_size(MAX_RECORD_SIZE);
    if let Ok(address) = ValueAddress::decode(encoded) {
        let mut again = Vec::new();
        address.encode_to(&mut again);
        // Varints may be overlong: the round trip is of the address.
        assert_eq!(ValueAddress::decode(&again), Ok(address));
        let mut value = Vec::new();
        match reader.read_value_into(&address, &mut value, |start, pos| {
            reader.read_fragment_at(start, pos)
        }) {
            Ok(()) => assert_eq!(value.len() as u64, address.len),
            Err(err) => assert!(err.is_corruption(), "{err:?}"),
        }
    }
    round_trip(&log, encoded);
});

/// Logs records cut from `data` and reads a slice of each (from a third
/// of it to its last byte but one) back by its address.
fn round_trip(data: &[u8], sizes: &[u8]) {
    let (fs, path, records) = thicketdb_fuzz::write_records(data, sizes);
    let reader = RandomAccessLogReader::new(fs.open_random(&path).expect("in-memory open"), path);
    let mut got = Vec::new();
    for (offset, record) in records {
        let (from, to) = (
            record.len() / 3,
            record.len().saturating_sub(1).max(record.len() / 3),
        );
        let address = ValueAddress {
            record: LogAddress::new(1, offset),
            offset: from as u64,
            len: (to - from) as u64,
        };
        reader
            .read_value_into(&address, &mut got, |start, pos| {
                reader.read_fragment_at(start, pos)
            })
            .expect("a value written reads back");
        assert_eq!(got, &record[from..to], "{address:?}");
    }
}
