//! The chunk list of a chunked store (`CHUNKS`): `ChunkList::decode` of
//! fuzzed bytes (an odd first byte has the checksum fixed up, to reach the
//! body's decoder); whatever decodes must encode to the same bytes.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use thicketdb::ChunkList;

fuzz_target!(|data: &[u8]| {
    let Some(bytes) = thicketdb_fuzz::framed_input(data) else {
        return;
    };
    if let Ok(list) = ChunkList::decode(Path::new("CHUNKS"), &bytes) {
        let encoded = list.encode();
        let again = ChunkList::decode(Path::new("CHUNKS"), &encoded).expect("re-decode");
        assert_eq!(again, list);
    }
});
