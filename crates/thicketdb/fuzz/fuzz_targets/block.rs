//! A data or index block from fuzzed bytes: decoding and iterating must
//! report corruption, never panic.
#![no_main]

use std::path::PathBuf;
use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use thicketdb::table::{Block, BlockIter};
use thicketdb::KeyOrder;

fuzz_target!(|data: &[u8]| {
    // The first byte picks the seek target's length, taken from the end.
    let Some((&n, rest)) = data.split_first() else {
        return;
    };
    let target = &rest[rest.len().saturating_sub(usize::from(n % 32))..];
    let Ok(block) = Block::new(rest.to_vec(), Arc::new(PathBuf::from("fuzz.seg")), 0) else {
        return;
    };
    let mut iter = BlockIter::new(block.clone(), KeyOrder::Bytewise);
    thicketdb_fuzz::exercise(&mut iter, target);
    let mut borrowed = BlockIter::new(&block, KeyOrder::Bytewise);
    thicketdb_fuzz::exercise(&mut borrowed, target);
});
