//! The OPTIONS file: `Options::decode` of fuzzed bytes; whatever decodes
//! must survive an encode/decode round trip.
#![no_main]

use libfuzzer_sys::fuzz_target;
use thicketdb::Options;

fuzz_target!(|data: &[u8]| {
    if let Ok(options) = Options::decode("OPTIONS", data) {
        let _ = options.validate();
        let again = Options::decode("OPTIONS", options.encode().as_bytes())
            .expect("re-decode encoded options");
        assert_eq!(again, options);
    }
});
