//! The OPTIONS file: `Options::decode` of fuzzed bytes (an odd first byte
//! has the checksum line fixed up, to reach the parser); whatever decodes
//! must encode to the same persisted form after a round trip.
#![no_main]

use libfuzzer_sys::fuzz_target;
use thicketdb::Options;

fuzz_target!(|data: &[u8]| {
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    let text = if flags & 1 == 1 {
        thicketdb_fuzz::fix_options_checksum(rest)
    } else {
        rest.to_vec()
    };
    if let Ok(options) = Options::decode("OPTIONS", &text) {
        let _ = options.validate();
        let encoded = options.encode();
        let again =
            Options::decode("OPTIONS", encoded.as_bytes()).expect("re-decode encoded options");
        assert_eq!(again.encode(), encoded);
    }
});
