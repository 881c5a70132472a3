//! Records read back by address: every size class, both write modes, a log
//! still being written, and each kind of damage reported at the offset of
//! the fragment it is in.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use proptest::prelude::*;

use super::*;
use crate::error::{Error, Result};
use crate::io::fault::FaultFs;
use crate::io::{FileSystem, PosixFs, RandomAccessFile};

const BLOCK: u64 = BLOCK_SIZE as u64;
const FILL: usize = BLOCK_SIZE - HEADER_SIZE;

fn record(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(29) ^ seed ^ (i >> 8) as u8)
        .collect()
}

/// Appends `records` and flushes; returns the offsets the writer reported.
fn append_all(writer: &mut LogWriter, records: &[Vec<u8>]) -> Vec<u64> {
    let offsets = records
        .iter()
        .map(|r| writer.add_record(r).unwrap())
        .collect();
    writer.flush().unwrap();
    offsets
}

fn reader(fs: &dyn FileSystem, path: &Path) -> RandomAccessLogReader {
    RandomAccessLogReader::new(fs.open_random(path).unwrap(), path.to_path_buf())
}

/// The offsets the sequential reader finds records at.
fn sequential_offsets(fs: &dyn FileSystem, path: &Path) -> Vec<u64> {
    let mut log = LogReader::new(
        fs.open_sequential(path).unwrap(),
        path.to_path_buf(),
        RecoveryMode::TolerateTailCorruption,
    );
    let mut offsets = Vec::new();
    while let Some((offset, _)) = log.read_record().unwrap() {
        offsets.push(offset);
    }
    offsets
}

fn corruption(result: Result<Vec<u8>>) -> (String, u64, String) {
    match result {
        Err(Error::Corruption {
            file,
            offset,
            reason,
        }) => (file, offset, reason),
        other => panic!("expected corruption, got {other:?}"),
    }
}

/// Records of every size class, laid out so that the interesting block
/// positions occur; the expected addresses are spelled out.
fn size_classes(largest: usize) -> (Vec<Vec<u8>>, Vec<u64>) {
    let sizes = [
        FILL,                     // 0: fills block 0 exactly
        0,                        // B: empty
        1,                        // B + 7
        FILL - 15 - 3,            // B + 15: leaves a 3-byte trailer
        100,                      // 2B: after the trailer
        FILL - 107 - HEADER_SIZE, // 2B + 107: leaves exactly a header
        50,                       // 3B - 7: an empty FIRST, then LAST
        BLOCK_SIZE,               // spans two blocks
        5 * BLOCK_SIZE + 123,     // spans many blocks
        largest,                  // the largest the reader accepts
        7,                        // after it
    ];
    let records = sizes
        .iter()
        .enumerate()
        .map(|(i, &n)| record(n, i as u8))
        .collect();
    (
        records,
        vec![
            0,
            BLOCK,
            BLOCK + 7,
            BLOCK + 15,
            2 * BLOCK,
            2 * BLOCK + 107,
            3 * BLOCK - 7,
        ],
    )
}

const LARGEST: usize = 300_000;

fn check_size_classes(fs: &dyn FileSystem, path: &Path, mapped: bool) {
    let file = if mapped {
        fs.create_mapped(path).unwrap()
    } else {
        fs.create(path).unwrap()
    };
    let mut writer = LogWriter::new(file);
    let (records, expected_start) = size_classes(LARGEST);
    let offsets = append_all(&mut writer, &records);
    assert_eq!(offsets[..expected_start.len()], expected_start);

    // While the writer is still open (a mapped file is then longer than
    // what was written, zero-padded).
    let live = reader(fs, path).with_max_record_size(LARGEST);
    for (record, &offset) in records.iter().zip(&offsets) {
        assert_eq!(&live.read_record_at(offset).unwrap(), record, "at {offset}");
    }
    let (_, at, reason) = corruption(live.read_record_at(writer.len()));
    assert_eq!(at, writer.len());
    assert!(reason.starts_with("no record starts here"), "{reason}");

    let smaller = reader(fs, path).with_max_record_size(LARGEST - 1);
    let (_, _, reason) = corruption(smaller.read_record_at(offsets[9]));
    assert!(reason.contains("maximum record size"), "{reason}");

    drop(writer);
    assert_eq!(sequential_offsets(fs, path), offsets);
    let closed = reader(fs, path).with_max_record_size(LARGEST);
    let mut buf = Vec::new();
    for (record, &offset) in records.iter().zip(&offsets).rev() {
        closed.read_record_at_into(offset, &mut buf).unwrap();
        assert_eq!(&buf, record, "at {offset}");
    }
    check_read_ahead(&closed, &records, &offsets);
}

/// The read-ahead reader returns what `log` does, in order, backwards and
/// past the end (the same corruption).
fn check_read_ahead(log: &RandomAccessLogReader, records: &[Vec<u8>], offsets: &[u64]) {
    let ahead = log.read_ahead();
    for (record, &offset) in records.iter().zip(offsets) {
        assert_eq!(
            &ahead.read_record_at(offset).unwrap(),
            record,
            "at {offset}"
        );
    }
    for (record, &offset) in records.iter().zip(offsets).rev() {
        assert_eq!(
            &ahead.read_record_at(offset).unwrap(),
            record,
            "at {offset}"
        );
    }
    let end = offsets.last().unwrap() + 1_000_000;
    assert_eq!(
        corruption(ahead.read_record_at(end)),
        corruption(log.read_record_at(end))
    );
}

/// Records larger than the read-ahead window and many small ones after
/// them: the window is refilled at each record it does not hold.
#[test]
fn read_ahead_refills_its_window() {
    let fs = FaultFs::new();
    let path = Path::new("000011.log");
    let mut writer = LogWriter::new(fs.create(path).unwrap());
    let mut records = vec![record(100, 1), record(1_500_000, 2)];
    records.extend((0..400).map(|i| record(1000 + i * 37 % 9000, i as u8)));
    records.push(record(3_000_000, 3));
    let offsets = append_all(&mut writer, &records);
    drop(writer);
    let log = reader(&fs, path).with_max_record_size(4 << 20);
    check_read_ahead(&log, &records, &offsets);
}

#[test]
fn size_classes_read_back_buffered() {
    let dir = tempfile::tempdir().unwrap();
    check_size_classes(&PosixFs, &dir.path().join("000001.log"), false);
}

#[test]
fn size_classes_read_back_mapped() {
    let dir = tempfile::tempdir().unwrap();
    check_size_classes(&PosixFs, &dir.path().join("000002.log"), true);
}

#[test]
fn size_classes_read_back_in_memory() {
    check_size_classes(&FaultFs::new(), Path::new("000003.log"), false);
}

#[test]
fn unflushed_record_is_not_readable_yet() {
    let fs = FaultFs::new();
    let path = Path::new("000004.log");
    let mut writer = LogWriter::new(fs.create(path).unwrap());
    let first = append_all(&mut writer, &[record(10, 1)])[0];
    let second = writer.add_record(&record(20, 2)).unwrap();
    let log = reader(&fs, path);
    assert_eq!(log.read_record_at(first).unwrap(), record(10, 1));
    let (file, at, reason) = corruption(log.read_record_at(second));
    assert_eq!((file.as_str(), at), ("000004.log", second));
    assert!(reason.contains("end of the log"), "{reason}");
    writer.flush().unwrap();
    assert_eq!(log.read_record_at(second).unwrap(), record(20, 2));
}

/// A small record A at 0, a record B spanning four blocks (FIRST at 27,
/// MIDDLE at B and 2B, LAST at 3B) and a small record C after it.
fn spanning_log() -> (Vec<u8>, [u64; 3]) {
    let fs = FaultFs::new();
    let path = Path::new("000009.log");
    let mut writer = LogWriter::new(fs.create(path).unwrap());
    let records = [record(20, 1), record(3 * BLOCK_SIZE, 2), record(10, 3)];
    let offsets = append_all(&mut writer, &records);
    assert_eq!(offsets, [0, 27, 3 * BLOCK + 55]);
    (fs.read_to_vec(path).unwrap(), [0, 27, 3 * BLOCK + 55])
}

/// Reads `bytes` (as file `000009.log`) at `offset`.
fn read_bytes(bytes: &[u8], offset: u64) -> Result<Vec<u8>> {
    let fs = FaultFs::new();
    let path = Path::new("000009.log");
    fs.write_durably(path, bytes).unwrap();
    reader(&fs, path).read_record_at(offset)
}

#[test]
fn damage_is_reported_at_the_fragment_holding_it() {
    let (clean, [a, b, _]) = spanning_log();
    let cases: &[(usize, u64, u64, &str)] = &[
        // (byte flipped, record read, expected offset, reason)
        (0, a, 0, "checksum"),                  // A's checksum
        (4, a, 0, "checksum"),                  // A's length
        (6, a, 0, "unknown fragment type 254"), // A's type
        (10, a, 0, "checksum"),                 // A's payload
        (27 + 100, b, 27, "checksum"),          // B's FIRST payload
        (BLOCK_SIZE + 6, b, BLOCK, "unknown fragment type 252"),
        (2 * BLOCK_SIZE + 100, b, 2 * BLOCK, "checksum"),
        (
            3 * BLOCK_SIZE + 5,
            b,
            3 * BLOCK,
            "runs past the end of its block",
        ),
    ];
    for &(flip, read_at, expected, why) in cases {
        let mut bytes = clean.clone();
        bytes[flip] ^= 0xff;
        let (file, at, reason) = corruption(read_bytes(&bytes, read_at));
        assert_eq!(file, "000009.log");
        assert_eq!(at, expected, "byte {flip}: {reason}");
        assert!(reason.contains(why), "byte {flip}: {reason}");
        if expected != read_at {
            assert!(
                reason.contains(&format!("record starting at offset {read_at}")),
                "{reason}"
            );
        }
    }
}

#[test]
fn offsets_that_are_not_record_starts() {
    let (bytes, [_, b, c]) = spanning_log();
    let len = bytes.len() as u64;
    let cases: &[(u64, &str)] = &[
        (1, ""),      // inside A's header
        (b + 40, ""), // inside B's payload
        (BLOCK, "MIDDLE"),
        (3 * BLOCK, "LAST"),
        (BLOCK - 3, "trailer"),
        (c + 1, ""),
        (len, "end of the log"),
        (len + 5000, "end of the log"),
        (u64::MAX, ""),
    ];
    for &(offset, why) in cases {
        let (_, at, reason) = corruption(read_bytes(&bytes, offset));
        assert_eq!(at, offset, "{reason}");
        assert!(
            reason.to_lowercase().contains(&why.to_lowercase()),
            "at {offset}: {reason}"
        );
    }
}

/// Addresses decoded from a damaged file may lie anywhere in the offset
/// space: near its top, stepping over fragments to reach the value must
/// report corruption, not overflow.
#[test]
fn value_addresses_near_the_largest_offset_are_corruption() {
    let (bytes, _) = spanning_log();
    let fs = FaultFs::new();
    let path = Path::new("000009.log");
    fs.write_durably(path, &bytes).unwrap();
    let log = reader(&fs, path);
    let top = u64::MAX - u64::MAX % BLOCK;
    for (record, offset, len) in [
        (top, 4 * BLOCK, 10),
        (top + 8, 0, 10),
        (u64::MAX - 7, 0, 1),
        (0, u64::MAX - 3, 10),
    ] {
        let address = ValueAddress {
            record: LogAddress::new(9, record),
            offset,
            len,
        };
        let mut out = Vec::new();
        let err = log
            .read_value_into(&address, &mut out, |start, pos| {
                log.read_fragment_at(start, pos)
            })
            .unwrap_err();
        assert!(err.is_corruption(), "{address:?}: {err:?}");
    }
}

#[test]
fn truncated_record_is_reported_where_it_is_cut() {
    let (bytes, [_, b, _]) = spanning_log();
    for (cut, expected) in [
        (2 * BLOCK_SIZE + 50, 2 * BLOCK), // inside a payload
        (2 * BLOCK_SIZE + 3, 2 * BLOCK),  // inside a header
        (2 * BLOCK_SIZE, 2 * BLOCK),      // at a block boundary
        (30, 27),                         // inside the first header
    ] {
        let (_, at, reason) = corruption(read_bytes(&bytes[..cut], b));
        assert_eq!(at, expected, "cut at {cut}: {reason}");
        assert!(reason.contains("cut short"), "cut at {cut}: {reason}");
    }
}

#[test]
fn record_start_where_a_continuation_is_expected() {
    let (mut bytes, [a, b, _]) = spanning_log();
    // Overwrite B's second MIDDLE with a copy of A: a valid FULL fragment.
    let full = bytes[..27].to_vec();
    bytes[2 * BLOCK_SIZE..2 * BLOCK_SIZE + 27].copy_from_slice(&full);
    let (_, at, reason) = corruption(read_bytes(&bytes, b));
    assert_eq!(at, 2 * BLOCK, "{reason}");
    assert!(reason.contains("no last fragment"), "{reason}");
    assert_eq!(read_bytes(&bytes, a).unwrap(), record(20, 1));
    assert_eq!(read_bytes(&bytes, 2 * BLOCK).unwrap(), record(20, 1));
}

#[test]
fn zero_filled_space_is_no_record() {
    let (bytes, [a, b, c]) = spanning_log();
    let mut padded = bytes.clone();
    padded.resize(5 * BLOCK_SIZE, 0);
    let (_, at, reason) = corruption(read_bytes(&padded, bytes.len() as u64));
    assert_eq!(at, bytes.len() as u64);
    assert!(reason.contains("zero-filled"), "{reason}");
    assert_eq!(read_bytes(&padded, c).unwrap(), record(10, 3));

    let mut zeroed = bytes;
    zeroed[BLOCK_SIZE..2 * BLOCK_SIZE].fill(0);
    let (_, at, reason) = corruption(read_bytes(&zeroed, b));
    assert_eq!(at, BLOCK, "{reason}");
    assert!(reason.contains("cut short: zero-filled"), "{reason}");
    assert_eq!(read_bytes(&zeroed, a).unwrap(), record(20, 1));
}

/// Fails every read with an I/O error.
struct FailingFile;

impl RandomAccessFile for FailingFile {
    fn read_exact_at(&self, _: u64, _: &mut [u8]) -> Result<()> {
        Err(Error::io(
            std::io::Error::other("device gone"),
            "000010.log",
        ))
    }
    fn len(&self) -> Result<u64> {
        Ok(1 << 20)
    }
    fn punch_hole(&self, _: u64, _: u64) -> Result<bool> {
        Ok(false)
    }
}

#[test]
fn io_errors_are_not_corruption() {
    let log = RandomAccessLogReader::new(Arc::new(FailingFile), PathBuf::from("000010.log"));
    let err = log.read_record_at(0).unwrap_err();
    assert!(matches!(err, Error::Io { .. }), "{err:?}");
}

fn records_strategy() -> impl Strategy<Value = Vec<Vec<u8>>> {
    let size = prop_oneof![0usize..64, 0usize..2 * BLOCK_SIZE];
    proptest::collection::vec(
        size.prop_flat_map(|n| proptest::collection::vec(any::<u8>(), n)),
        0..12,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn records_round_trip_by_address(
        records in records_strategy(),
        probes in proptest::collection::vec(any::<prop::sample::Index>(), 16),
    ) {
        let fs = FaultFs::new();
        let path = Path::new("000011.log");
        let mut writer = LogWriter::new(fs.create(path).unwrap());
        let offsets = append_all(&mut writer, &records);
        prop_assert_eq!(&sequential_offsets(&fs, path), &offsets);
        let log = reader(&fs, path);
        for (record, &offset) in records.iter().zip(&offsets) {
            prop_assert_eq!(&log.read_record_at(offset).unwrap(), record);
        }
        // Anywhere else: corruption at exactly that offset, never a panic.
        let len = writer.len() + 1;
        for probe in probes {
            let offset = probe.index(len as usize) as u64;
            if !offsets.contains(&offset) {
                let (_, at, _) = corruption(log.read_record_at(offset));
                prop_assert_eq!(at, offset);
            }
        }
    }
}

#[test]
fn continuation_after_a_trailer_is_found_as_the_sequential_reader_finds_it() {
    use super::format::{encode_header, FragmentType};
    // The writer never leaves a trailer inside a record, but the format
    // allows it: a FIRST fragment ending 3 bytes before the block's end.
    let first = record(BLOCK_SIZE - HEADER_SIZE - 3, 1);
    let last = b"tail".to_vec();
    let mut bytes = encode_header(FragmentType::First, &first).to_vec();
    bytes.extend_from_slice(&first);
    bytes.extend_from_slice(&[0; 3]);
    bytes.extend_from_slice(&encode_header(FragmentType::Last, &last));
    bytes.extend_from_slice(&last);

    let fs = FaultFs::new();
    let path = Path::new("000012.log");
    fs.write_durably(path, &bytes).unwrap();
    assert_eq!(sequential_offsets(&fs, path), [0]);
    assert_eq!(
        reader(&fs, path).read_record_at(0).unwrap(),
        [first, last].concat()
    );
}

/// A fragment read alone (for the log-fragment cache) is its header and
/// payload, no more, and is checked as a block's fragment is: damage and a
/// cut are corruption at the fragment.
#[test]
fn a_raw_fragment_is_read_alone_and_checked() {
    let (clean, [a, b, c]) = spanning_log();
    let fs = FaultFs::new();
    let path = Path::new("000009.log");
    let read = |bytes: &[u8], start: u64, pos: u64| -> Result<(FragmentType, Vec<u8>)> {
        fs.write_durably(path, bytes).unwrap();
        let log = reader(&fs, path);
        let raw = log.read_raw_fragment(start, pos)?;
        let (kind, payload) = log.fragment_at(start, pos, &raw)?;
        assert_eq!(payload.end, raw.len(), "nothing read past the fragment");
        Ok((kind, raw[payload].to_vec()))
    };
    assert_eq!(read(&clean, a, a).unwrap(), (FragmentType::Full, record(20, 1)));
    assert_eq!(read(&clean, c, c).unwrap(), (FragmentType::Full, record(10, 3)));
    let (kind, payload) = read(&clean, b, BLOCK).unwrap();
    assert_eq!(kind, FragmentType::Middle);
    assert_eq!(payload.len(), FILL);
    for (flip, pos, why) in [(10, a, "checksum"), (BLOCK_SIZE + 6, BLOCK, "unknown fragment type")] {
        let mut bytes = clean.clone();
        bytes[flip] ^= 0xff;
        let err = read(&bytes, pos, pos).unwrap_err();
        assert!(err.is_corruption() && err.to_string().contains(why), "{err}");
    }
    let err = read(&clean[..BLOCK_SIZE + 50], b, BLOCK).unwrap_err();
    assert!(err.is_corruption() && err.to_string().contains("cut short"), "{err}");
    let err = read(&clean, b, BLOCK - 3).unwrap_err();
    assert!(err.to_string().contains("trailer"), "{err}");
}
