//! Helpers the examples share.
#![allow(dead_code)]

/// splitmix64: reproducible keys, the same every run.
pub fn next(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A 16-byte key: a fixed prefix and `id` big-endian, so ids order keys.
pub fn key(id: u64) -> Vec<u8> {
    let mut key = b"k0000000".to_vec();
    key.extend_from_slice(&id.to_be_bytes());
    key
}

/// The command line `DIR [N...]`: the store's directory (emptied first),
/// then numbers, each with its default when left out.
pub struct Args(std::iter::Skip<std::env::Args>);

impl Args {
    pub fn parse() -> (std::path::PathBuf, Args) {
        let mut args = std::env::args().skip(1);
        let dir = std::path::PathBuf::from(args.next().expect("DIR"));
        let _ = std::fs::remove_dir_all(&dir);
        (dir, Args(args))
    }

    pub fn number(&mut self, default: u64) -> u64 {
        self.0
            .next()
            .map_or(default, |a| a.parse().expect("a number"))
    }
}
