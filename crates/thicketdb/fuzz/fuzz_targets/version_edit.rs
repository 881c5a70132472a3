//! MANIFEST records: `VersionEdit::decode` of fuzzed bytes; whatever
//! decodes must survive an encode/decode round trip.
#![no_main]

use libfuzzer_sys::fuzz_target;
use thicketdb::version::VersionEdit;

fuzz_target!(|data: &[u8]| {
    if let Ok(edit) = VersionEdit::decode(data) {
        let again = VersionEdit::decode(&edit.encode()).expect("re-decode an encoded edit");
        assert_eq!(again, edit);
    }
});
