//! The closed-logs file of a chunked store (`LOGS_CLOSED`):
//! `ClosedLogs::decode` of fuzzed bytes (an odd first byte has the
//! checksum fixed up, to reach the body's decoder); whatever decodes must
//! encode to bytes that decode the same.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use thicketdb::ClosedLogs;

fuzz_target!(|data: &[u8]| {
    let Some(bytes) = thicketdb_fuzz::framed_input(data) else {
        return;
    };
    if let Ok(closed) = ClosedLogs::decode(Path::new("LOGS_CLOSED"), &bytes) {
        let encoded = closed.encode();
        let again = ClosedLogs::decode(Path::new("LOGS_CLOSED"), &encoded).expect("re-decode");
        assert_eq!(again, closed);
    }
});
