//! The asynchronous mode's small files of a chunked store: the recovery
//! table (`RECOVERY`, `Incarnations::decode`) when the first byte's bit 1
//! is clear, else the checkpoint mark (`CHECKPOINT`,
//! `CheckpointMark::decode`); bit 0 has the checksum fixed up, to reach
//! the body's decoder. Whatever decodes must encode to bytes that decode
//! the same.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use thicketdb::{CheckpointMark, Incarnations};

fuzz_target!(|data: &[u8]| {
    let Some((&which, _)) = data.split_first() else {
        return;
    };
    let Some(bytes) = thicketdb_fuzz::framed_input(data) else {
        return;
    };
    if which & 2 == 0 {
        if let Ok(table) = Incarnations::decode(Path::new("RECOVERY"), &bytes) {
            let again =
                Incarnations::decode(Path::new("RECOVERY"), &table.encode()).expect("re-decode");
            assert_eq!(again, table);
        }
    } else if let Ok(mark) = CheckpointMark::decode(Path::new("CHECKPOINT"), &bytes) {
        let again =
            CheckpointMark::decode(Path::new("CHECKPOINT"), &mark.encode()).expect("re-decode");
        assert_eq!(again, mark);
    }
});
