//! TRIAD-MEM's re-logged record: `decode_relogged` of fuzzed bytes (an odd
//! first byte gets the record marker and version put in front, to reach the
//! entry decoder); whatever decodes must survive an encode/decode round
//! trip (varints need not be canonical, so the bytes may differ).
#![no_main]

use libfuzzer_sys::fuzz_target;
use thicketdb::log::{decode_relogged, encode_relogged};

fuzz_target!(|data: &[u8]| {
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    let mut record = Vec::new();
    if flags & 1 == 1 {
        record.extend_from_slice(&u64::MAX.to_le_bytes());
        record.push(1);
    }
    record.extend_from_slice(rest);
    if let Ok((source, entries)) = decode_relogged(&record) {
        let again = decode_relogged(&encode_relogged(source, &entries)).expect("re-encoded");
        assert_eq!(again, (source, entries));
    }
});
