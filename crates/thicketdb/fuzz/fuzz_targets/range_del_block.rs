//! A range-deletion block from fuzzed bytes: decoding reports corruption,
//! never panics; what decodes re-encodes to the same fragments, and
//! lookups, clipping and re-fragmenting keep the fragments' invariants.
#![no_main]

use libfuzzer_sys::fuzz_target;
use thicketdb::format::range_tombstone::Fragments;

fuzz_target!(|data: &[u8]| {
    let Ok(fragments) = Fragments::decode(data) else {
        return;
    };
    assert_eq!(Fragments::decode(&fragments.encode()), Ok(fragments.clone()));
    let probes: Vec<&[u8]> = fragments
        .iter()
        .flat_map(|f| [f.start.as_slice(), f.end.as_slice()])
        .chain([&b""[..], &data[..data.len().min(4)]])
        .collect();
    for probe in &probes {
        let newest = fragments.covering_seq(probe, u64::MAX);
        assert_eq!(newest > 0, fragments.find(probe).is_some());
        let clipped = fragments.clip(Some(probe), None);
        assert_eq!(Fragments::decode(&clipped.encode()), Ok(clipped.clone()));
    }
    // Fragmenting a list's own tombstones again gives an equivalent list.
    let again = Fragments::fragment(&fragments.tombstones().collect::<Vec<_>>());
    for probe in &probes {
        assert_eq!(
            again.covering_seq(probe, u64::MAX),
            fragments.covering_seq(probe, u64::MAX)
        );
    }
});
