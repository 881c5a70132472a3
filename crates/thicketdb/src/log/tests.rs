//! Writer and reader together: round trips, block layout, torn tails and
//! mid-log damage.

use std::path::PathBuf;
use std::sync::Arc;

use parking_lot::Mutex;
use proptest::prelude::*;

use super::format::FragmentType;
use super::*;
use crate::error::{Error, Result};
use crate::io::{SequentialFile, WritableFile};

/// An in-memory writable file; clones share the bytes.
#[derive(Clone, Default)]
struct MemFile(Arc<Mutex<Vec<u8>>>);

impl WritableFile for MemFile {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.0.lock().extend_from_slice(data);
        Ok(())
    }
    fn flush(&mut self) -> Result<()> {
        Ok(())
    }
    fn sync(&mut self) -> Result<()> {
        Ok(())
    }
    fn len(&self) -> u64 {
        self.0.lock().len() as u64
    }
}

/// Serves at most `chunk` bytes per read, like a pipe or a network file
/// system returning short reads.
struct MemSource {
    data: Vec<u8>,
    pos: usize,
    chunk: usize,
}

impl SequentialFile for MemSource {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize> {
        let n = buf.len().min(self.chunk).min(self.data.len() - self.pos);
        buf[..n].copy_from_slice(&self.data[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

/// Encodes `records` as a log; also returns where each record starts.
fn encode(records: &[Vec<u8>]) -> (Vec<u8>, Vec<u64>) {
    let file = MemFile::default();
    let mut writer = LogWriter::new(Box::new(file.clone()));
    let mut starts = Vec::new();
    for record in records {
        let at = writer.len();
        let left = BLOCK_SIZE as u64 - at % BLOCK_SIZE as u64;
        starts.push(if left < HEADER_SIZE as u64 {
            at + left
        } else {
            at
        });
        writer.add_record(record).unwrap();
    }
    let bytes = file.0.lock().clone();
    (bytes, starts)
}

#[derive(Debug)]
struct Outcome {
    records: Vec<(u64, Vec<u8>)>,
    error: Option<Error>,
    skipped: Vec<Skipped>,
    tail: Option<Skipped>,
}

impl Outcome {
    fn payloads(&self) -> Vec<Vec<u8>> {
        self.records.iter().map(|(_, r)| r.clone()).collect()
    }
}

fn read_with(bytes: &[u8], mode: RecoveryMode, max: usize, chunk: usize) -> Outcome {
    let source = MemSource {
        data: bytes.to_vec(),
        pos: 0,
        chunk,
    };
    let mut reader = LogReader::new(Box::new(source), PathBuf::from("000001.log"), mode)
        .with_max_record_size(max);
    let mut records = Vec::new();
    // Every record takes at least a header, which bounds a correct reader.
    for _ in 0..=bytes.len() / HEADER_SIZE + 1 {
        match reader.read_record() {
            Ok(Some(record)) => records.push(record),
            Ok(None) => {
                return Outcome {
                    records,
                    error: None,
                    skipped: reader.skipped().to_vec(),
                    tail: reader.dropped_tail().cloned(),
                }
            }
            Err(err) => {
                assert_eq!(reader.read_record(), Err(err.clone()), "errors are sticky");
                return Outcome {
                    records,
                    error: Some(err),
                    skipped: reader.skipped().to_vec(),
                    tail: reader.dropped_tail().cloned(),
                };
            }
        }
    }
    panic!("reader returned more records than the file can hold");
}

fn read(bytes: &[u8], mode: RecoveryMode) -> Outcome {
    read_with(bytes, mode, DEFAULT_MAX_RECORD_SIZE, BLOCK_SIZE)
}

fn strict(bytes: &[u8]) -> Outcome {
    read(bytes, RecoveryMode::TolerateTailCorruption)
}

fn skip(bytes: &[u8]) -> Outcome {
    read(bytes, RecoveryMode::SkipAnyCorruption)
}

fn record(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31) ^ seed)
        .collect()
}

fn corruption_offset(err: &Error) -> u64 {
    match err {
        Error::Corruption { offset, .. } => *offset,
        other => panic!("expected corruption, got {other:?}"),
    }
}

#[test]
fn round_trip_edge_sizes() {
    let fill = BLOCK_SIZE - HEADER_SIZE;
    let sizes = [
        0,
        1,
        7,
        fill,                   // fills a block exactly
        fill - HEADER_SIZE - 3, // leaves a 3-byte trailer
        fill - HEADER_SIZE,     // leaves room for exactly one header
        5,
        BLOCK_SIZE,
        100 << 10, // fragments over four blocks
        0,
        1,
    ];
    let records: Vec<_> = sizes
        .iter()
        .enumerate()
        .map(|(i, &n)| record(n, i as u8))
        .collect();
    let (bytes, starts) = encode(&records);
    for chunk in [BLOCK_SIZE, 3] {
        let out = read_with(
            &bytes,
            RecoveryMode::TolerateTailCorruption,
            DEFAULT_MAX_RECORD_SIZE,
            chunk,
        );
        assert!(out.error.is_none() && out.tail.is_none(), "{out:?}");
        assert_eq!(out.payloads(), records);
        let offsets: Vec<u64> = out.records.iter().map(|(at, _)| *at).collect();
        assert_eq!(offsets, starts);
    }
}

#[test]
fn block_layout() {
    let fill = BLOCK_SIZE - HEADER_SIZE;
    // A block-filling record, then one leaving a 4-byte tail, then another.
    let records = vec![record(fill, 1), record(fill - 4, 2), record(3, 3)];
    let (bytes, starts) = encode(&records);
    assert_eq!(starts, [0, BLOCK_SIZE as u64, 2 * BLOCK_SIZE as u64]);
    assert_eq!(bytes[6], FragmentType::Full as u8);
    assert_eq!(&bytes[2 * BLOCK_SIZE - 4..2 * BLOCK_SIZE], &[0u8; 4]);
    assert_eq!(bytes.len(), 2 * BLOCK_SIZE + HEADER_SIZE + 3);

    // A long record: First, Middle..., Last, one per block.
    let (bytes, _) = encode(&[record(100 << 10, 4)]);
    let types: Vec<u8> = bytes.chunks(BLOCK_SIZE).map(|block| block[6]).collect();
    let expected = [
        FragmentType::First,
        FragmentType::Middle,
        FragmentType::Middle,
        FragmentType::Last,
    ];
    assert_eq!(types, expected.map(|t| t as u8));
}

#[test]
fn add_record_leaves_flushing_to_the_caller() {
    use crate::io::fault::FaultFs;
    use crate::io::FileSystem;

    let fs = FaultFs::new();
    let path = std::path::Path::new("000003.log");
    let mut writer = LogWriter::new(fs.create(path).unwrap());
    writer.add_record(b"buffered").unwrap();
    assert_eq!(writer.len(), (HEADER_SIZE + 8) as u64);
    assert_eq!(fs.file_size(path).unwrap(), 0);
    writer.flush().unwrap();
    assert_eq!(fs.file_size(path).unwrap(), writer.len());
}

#[test]
fn writer_refuses_use_after_an_error() {
    use crate::io::fault::{FaultFs, FaultKind};
    use crate::io::FileSystem;

    let fs = FaultFs::new();
    let mut writer = LogWriter::new(fs.create(std::path::Path::new("000004.log")).unwrap());
    writer.add_record(b"ok").unwrap();
    fs.set_write_error(Some(FaultKind::NoSpace));
    assert!(writer.add_record(b"lost").unwrap_err().is_no_space());
    fs.clear_faults();
    // The file may hold part of the failed record; appending after it would
    // bury that torn record mid-log.
    assert!(writer.add_record(b"later").unwrap_err().is_no_space());
    assert!(writer.sync().unwrap_err().is_no_space());
}

/// Reads `bytes[..cut]` and checks it yields exactly the records that end
/// by `cut`, with no error.
fn check_cut(records: &[Vec<u8>], bytes: &[u8], starts: &[u64], cut: usize) {
    let ends: Vec<u64> = starts[1..]
        .iter()
        .copied()
        .chain([bytes.len() as u64])
        .collect();
    let out = strict(&bytes[..cut]);
    assert!(out.error.is_none(), "cut at {cut}: {out:?}");
    let complete = ends.iter().filter(|&&end| end <= cut as u64).count();
    assert_eq!(out.payloads(), records[..complete], "cut at {cut}");
    let clean_cut = cut == 0 || ends.contains(&(cut as u64));
    assert_eq!(out.tail.is_none(), clean_cut, "cut at {cut}");
}

#[test]
fn crash_leaves_a_readable_prefix() {
    use crate::io::fault::{FaultFs, FaultKind};
    use crate::io::FileSystem;

    let fs = FaultFs::new();
    let path = PathBuf::from("000005.log");
    let mut writer = LogWriter::new(fs.create(&path).unwrap());
    fs.sync_dir(std::path::Path::new("")).unwrap();
    let records: Vec<_> = (0..6).map(|i| record(9000, i)).collect();
    for r in &records[..3] {
        writer.add_record(r).unwrap();
    }
    writer.sync().unwrap();
    // The disk fills up in the middle of the fifth record.
    fs.fail_after_bytes(9000 + 7 + 4000, FaultKind::NoSpace);
    for r in &records[3..] {
        writer.add_record(r).unwrap();
    }
    assert!(writer.flush().unwrap_err().is_no_space());
    fs.clear_faults();

    let read_back = |fs: &FaultFs| {
        let file = fs.open_sequential(&path).unwrap();
        let mut reader = LogReader::new(file, path.clone(), RecoveryMode::default());
        let mut out = Vec::new();
        while let Some((_, r)) = reader.read_record().unwrap() {
            out.push(r);
        }
        (out, reader.dropped_tail().is_some())
    };
    assert_eq!(read_back(&fs), (records[..4].to_vec(), true));
    fs.drop_unsynced();
    assert_eq!(read_back(&fs), (records[..3].to_vec(), false));
}

#[test]
fn truncation_anywhere_yields_a_prefix() {
    let records: Vec<_> = (0..8).map(|i| record(i * 5, i as u8)).collect();
    let (bytes, starts) = encode(&records);
    for cut in 0..=bytes.len() {
        check_cut(&records, &bytes, &starts, cut);
    }

    // Records spanning a block boundary: every byte near it, a sample elsewhere.
    let records = vec![record(BLOCK_SIZE - 30, 1), record(300, 2), record(5, 3)];
    let (bytes, starts) = encode(&records);
    for cut in 0..=bytes.len() {
        if cut.abs_diff(BLOCK_SIZE) < 400 || cut % 97 == 0 || cut + 20 > bytes.len() {
            check_cut(&records, &bytes, &starts, cut);
        }
    }
}

#[test]
fn flipped_byte_in_first_record() {
    let records: Vec<_> = (0..5).map(|i| record(20 + i, i as u8)).collect();
    let (clean, starts) = encode(&records);
    // Payload, length field, type byte, checksum.
    for pos in [12, 4, 6, 0] {
        let mut bytes = clean.clone();
        bytes[pos] ^= 0x40;
        let out = strict(&bytes);
        assert!(out.records.is_empty());
        assert_eq!(
            corruption_offset(out.error.as_ref().unwrap()),
            0,
            "byte {pos}"
        );

        let out = skip(&bytes);
        assert!(out.error.is_none());
        assert_eq!(out.payloads(), records[1..], "byte {pos}");
        assert_eq!(out.skipped.len(), 1);
        assert_eq!(
            (out.skipped[0].offset, out.skipped[0].len),
            (0, starts[1]),
            "byte {pos}"
        );
    }
}

#[test]
fn damaged_middle_fragment() {
    let records = vec![record(80 << 10, 1), record(10, 2)];
    let (mut bytes, _) = encode(&records);
    bytes[BLOCK_SIZE + 100] ^= 1;
    let err = strict(&bytes).error.unwrap();
    assert_eq!(corruption_offset(&err), BLOCK_SIZE as u64);
    let out = skip(&bytes);
    assert_eq!(out.payloads(), records[1..]);
    assert_eq!(
        out.skipped[0].offset, 0,
        "the whole damaged record is dropped"
    );
}

#[test]
fn damaged_final_record_is_a_torn_tail() {
    let records: Vec<_> = (0..3).map(|i| record(50, i)).collect();
    let (mut bytes, starts) = encode(&records);
    let last = bytes.len() - 10;
    bytes[last] ^= 0xff;
    for out in [strict(&bytes), skip(&bytes)] {
        assert!(out.error.is_none() && out.skipped.is_empty());
        assert_eq!(out.payloads(), records[..2]);
        assert_eq!(out.tail.unwrap().offset, starts[2]);
    }
}

#[test]
fn torn_record_holding_log_bytes_stays_a_tail() {
    // A value that is itself a log (say a backup of one) must not be taken
    // for valid records following the damage.
    let (inner, _) = encode(&[b"inner record".to_vec()]);
    let mut outer = vec![7u8; 100];
    outer.extend_from_slice(&inner);
    outer.extend_from_slice(&[9u8; 100]);
    let records = vec![b"first".to_vec(), outer];
    let (bytes, _) = encode(&records);
    let mut flipped = bytes.clone();
    flipped[30] ^= 1; // before the embedded log
    let cut = &bytes[..bytes.len() - 50];
    for damaged in [&flipped[..], cut] {
        let out = strict(damaged);
        assert!(out.error.is_none(), "{out:?}");
        assert_eq!(out.payloads(), records[..1]);
    }
}

#[test]
fn damaged_length_before_the_end_of_the_file_is_not_a_torn_tail() {
    // A length that runs past the end of the file looks like a write cut
    // short, but the payload checks at the true length and records follow.
    let records: Vec<_> = (0..6).map(|i| record(40, i)).collect();
    let (clean, starts) = encode(&records);
    for (victim, mask) in [(1, 0x40), (2, 0x80), (2, 0x70), (4, 0x10)] {
        let mut bytes = clean.clone();
        let length_field = starts[victim] as usize + 5;
        bytes[length_field] ^= mask;
        let err = strict(&bytes).error.expect("an error, not a torn tail");
        assert_eq!(corruption_offset(&err), starts[victim], "{err}");
        assert!(err.to_string().contains("length field"), "{err}");
        let out = skip(&bytes);
        let mut kept = records.clone();
        kept.remove(victim);
        assert_eq!(out.payloads(), kept, "record {victim}");
        assert_eq!(out.skipped.len(), 1);
        assert_eq!(out.skipped[0].offset, starts[victim]);
    }
}

#[test]
fn a_whole_final_record_with_a_damaged_header_is_reported() {
    let records: Vec<_> = (0..3).map(|i| record(30, i)).collect();
    let (clean, starts) = encode(&records);
    let header = starts[2] as usize;
    // Length past the end, length within the file, a type byte that is no
    // type, a type byte that is another type.
    for (at, mask) in [(5, 0x01), (4, 0x08), (4, 0x01), (6, 0x20), (6, 0x03)] {
        let mut bytes = clean.clone();
        bytes[header + at] ^= mask;
        let out = strict(&bytes);
        assert_eq!(out.payloads(), records[..2], "byte {at} ^ {mask:#x}");
        let err = out.error.expect("a whole record is not a torn tail");
        assert_eq!(corruption_offset(&err), starts[2]);
        let out = skip(&bytes);
        assert_eq!(out.payloads(), records[..2]);
        assert_eq!(out.skipped.len(), 1);
    }
}

#[test]
fn zero_filled_tail_is_dropped() {
    let records: Vec<_> = (0..3).map(|i| record(100, i)).collect();
    let (mut bytes, _) = encode(&records);
    bytes.resize(3 * BLOCK_SIZE + 500, 0);
    let out = strict(&bytes);
    assert!(out.error.is_none());
    assert_eq!(out.payloads(), records);
    assert!(out.tail.unwrap().reason.contains("zero"));
}

#[test]
fn zeroed_region_before_valid_records_is_corruption() {
    let records: Vec<_> = (0..3).map(|i| record(BLOCK_SIZE, i)).collect();
    let (mut bytes, starts) = encode(&records);
    bytes[..BLOCK_SIZE].fill(0);
    let err = strict(&bytes).error.unwrap();
    assert_eq!(corruption_offset(&err), 0);
    let out = skip(&bytes);
    assert_eq!(out.payloads(), records[1..]);
    assert_eq!(out.skipped[0].len, starts[1]);
}

#[test]
fn oversized_record_is_corruption_even_at_the_tail() {
    let records = vec![record(10, 1), record(5000, 2), record(10, 3)];
    let (bytes, _) = encode(&records);
    let out = read_with(
        &bytes,
        RecoveryMode::TolerateTailCorruption,
        4096,
        BLOCK_SIZE,
    );
    assert_eq!(corruption_offset(&out.error.unwrap()), 17);
    let out = read_with(&bytes, RecoveryMode::SkipAnyCorruption, 4096, BLOCK_SIZE);
    assert_eq!(out.payloads(), [records[0].clone(), records[2].clone()]);

    let (bytes, _) = encode(&records[..2]);
    let out = read_with(
        &bytes,
        RecoveryMode::TolerateTailCorruption,
        4096,
        BLOCK_SIZE,
    );
    assert!(out.error.unwrap().is_corruption());

    // Multi-block records are capped while being assembled.
    let (bytes, _) = encode(&[record(100 << 10, 4)]);
    let out = read_with(
        &bytes,
        RecoveryMode::TolerateTailCorruption,
        40 << 10,
        BLOCK_SIZE,
    );
    assert!(out.error.unwrap().is_corruption());
}

fn records_strategy() -> impl Strategy<Value = Vec<Vec<u8>>> {
    let size = prop_oneof![0usize..64, 0usize..2 * BLOCK_SIZE];
    proptest::collection::vec(
        size.prop_flat_map(|n| proptest::collection::vec(any::<u8>(), n)),
        0..12,
    )
}

/// True when `part` is `whole` with some elements removed.
fn is_subsequence(part: &[Vec<u8>], whole: &[Vec<u8>]) -> bool {
    let mut rest = whole.iter();
    part.iter().all(|p| rest.any(|w| w == p))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn round_trip(records in records_strategy()) {
        let (bytes, starts) = encode(&records);
        let out = strict(&bytes);
        prop_assert!(out.error.is_none() && out.tail.is_none());
        prop_assert_eq!(out.payloads(), records);
        let offsets: Vec<u64> = out.records.iter().map(|(at, _)| *at).collect();
        prop_assert_eq!(offsets, starts);
    }

    #[test]
    fn flipped_byte_loses_nothing_else(
        records in records_strategy(),
        at in any::<prop::sample::Index>(),
        mask in 1u8..,
    ) {
        let (mut bytes, _) = encode(&records);
        prop_assume!(!bytes.is_empty());
        let at = at.index(bytes.len());
        bytes[at] ^= mask;
        // Strict: a prefix, then an error, unless the damage is in the last
        // record, which a torn write could have left so.
        let out = strict(&bytes);
        prop_assert_eq!(&out.payloads()[..], &records[..out.records.len()]);
        if out.error.is_none() {
            prop_assert!(
                out.records.len() + 1 >= records.len(),
                "{} of {} records read without an error", out.records.len(), records.len()
            );
        }
        // Skip: never an error, never an invented record.
        let out = skip(&bytes);
        prop_assert!(out.error.is_none());
        prop_assert!(is_subsequence(&out.payloads(), &records));
    }

    #[test]
    fn garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..3 * BLOCK_SIZE)) {
        let out = strict(&bytes);
        prop_assert!(out.error.is_none_or(|e| e.is_corruption()));
        let out = skip(&bytes);
        prop_assert!(out.error.is_none());
    }

    #[test]
    fn spliced_garbage_never_panics(
        records in records_strategy(),
        garbage in proptest::collection::vec(any::<u8>(), 0..200),
        at in any::<prop::sample::Index>(),
    ) {
        let (mut bytes, _) = encode(&records);
        let at = at.index(bytes.len() + 1);
        bytes.splice(at..at, garbage);
        let out = skip(&bytes);
        prop_assert!(out.error.is_none());
        prop_assert!(is_subsequence(&out.payloads(), &records));
    }
}
