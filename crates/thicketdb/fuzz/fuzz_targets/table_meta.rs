//! The table's small decoders: footer, block handle, properties, bloom
//! filter and HyperLogLog sketch.
#![no_main]

use libfuzzer_sys::fuzz_target;
use thicketdb::table::{BlockHandle, BloomFilter, Footer, HyperLogLog, TableProperties};

fuzz_target!(|data: &[u8]| {
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    match which % 5 {
        0 => {
            if let Ok(footer) = Footer::decode(rest) {
                assert_eq!(Footer::decode(&footer.encode()), Ok(footer));
            }
        }
        1 => {
            let _ = BlockHandle::decode(rest);
        }
        2 => {
            if let Ok(props) = TableProperties::decode(rest) {
                assert_eq!(TableProperties::decode(&props.encode()), Ok(props));
            }
        }
        3 => {
            let probe = &rest[..rest.len().min(8)];
            if let Ok(filter) = BloomFilter::decode(rest.to_vec()) {
                let _ = filter.may_contain(probe);
                let _ = filter.may_contain(b"");
            }
        }
        _ => {
            if let Ok(hll) = HyperLogLog::decode(rest) {
                let estimate = hll.estimate();
                assert!(estimate.is_finite() && estimate >= 0.0, "{estimate}");
                let mut merged = HyperLogLog::new();
                merged.merge(&hll);
                let mut out = Vec::new();
                merged.encode_to(&mut out);
            }
        }
    }
});
