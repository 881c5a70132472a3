//! Errors say where they happened: damage found while iterating names the
//! segment and block it came from, and the engine's own invariant
//! violations are `Error::Invariant` with the source line that noticed.

use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use thicketdb::format::checksum;
use thicketdb::io::{Backings, FileSystem, PosixFs};
use thicketdb::version::{VersionEdit, VersionSet};
use thicketdb::Counters;
use thicketdb::{Db, Error, Options, ReadOptions};

/// The first table of a segment starts after the 16-byte segment header.
const FIRST_TABLE: usize = 16;

#[test]
fn a_malformed_key_in_a_table_names_its_segment_and_block() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    db.put(b"needle", b"v").unwrap();
    db.flush().unwrap();
    db.close().unwrap();

    let segment = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "seg"))
        .expect("the flush wrote a segment");
    let mut bytes = std::fs::read(&segment).unwrap();
    // The only data block: one entry (three one-byte lengths, the
    // internal key "needle" + 8-byte trailer, the value), one restart
    // offset and the restart count, then the block trailer.
    let key_at = FIRST_TABLE + 3;
    assert_eq!(&bytes[key_at..key_at + 6], b"needle");
    let block_len = 3 + (6 + 8) + 1 + 4 + 4;
    // The trailer's low byte is the value kind; 0x7f is none. The block
    // checksum is recomputed so that only the key is wrong.
    bytes[key_at + 6] = 0x7f;
    let stored = FIRST_TABLE..FIRST_TABLE + block_len + 1;
    let crc = checksum::mask(checksum::crc32c(&bytes[stored.clone()]));
    bytes[stored.end..stored.end + 4].copy_from_slice(&crc.to_le_bytes());
    std::fs::write(&segment, &bytes).unwrap();

    let db = Db::open(dir.path(), Options::default()).unwrap();
    let mut it = db.iter(ReadOptions::default()).unwrap();
    it.seek_to_first();
    assert!(!it.valid());
    match it.status() {
        Err(Error::Corruption {
            file,
            offset,
            reason,
        }) => {
            assert_eq!(file, segment.display().to_string());
            assert_eq!(offset, FIRST_TABLE as u64, "the data block's offset");
            assert!(reason.contains("malformed internal key"), "{reason}");
        }
        other => panic!("expected a corruption, got {other:?}"),
    }
}

#[test]
fn an_edit_that_does_not_apply_is_an_invariant_violation() {
    let dir = tempfile::tempdir().unwrap();
    let fs: Arc<dyn FileSystem> = Arc::new(PosixFs);
    let mut set = VersionSet::open(
        fs,
        dir.path(),
        Arc::new(Counters::default()),
        VersionSet::empty(thicketdb::KeyOrder::Bytewise),
        Arc::new(AtomicU64::new(1)),
        Arc::new(Backings::default()),
    )
    .unwrap();
    let mut edit = VersionEdit::default();
    edit.delete_table(1, 3, 42);
    match set.log_and_apply(edit) {
        Err(Error::Invariant { message, location }) => {
            assert!(message.contains("deleted table 42"), "{message}");
            assert!(location.contains("version/set.rs:"), "{location}");
        }
        other => panic!("expected an invariant violation, got {other:?}"),
    }
}
