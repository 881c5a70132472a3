//! The request parser on arbitrary bytes, fed in chunks as a connection
//! would: it must never panic, hang or accept a request beyond its limits.
//! The first input byte picks the chunk size.

#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../src/limits.rs"]
mod limits;
#[path = "../../src/resp/parse.rs"]
mod parse;

use limits::Limits;
use parse::RequestParser;

fuzz_target!(|data: &[u8]| {
    let Some((&chunk, input)) = data.split_first() else {
        return;
    };
    let chunk = usize::from(chunk).max(1);
    let limits = Limits {
        max_bulk_len: 4096,
        max_multibulk_len: 64,
        max_inline_len: 1024,
        max_request_bytes: 16 << 10,
        ..Limits::default()
    };
    let mut parser = RequestParser::new(limits.clone());
    let mut buffer = Vec::new();
    for piece in input.chunks(chunk) {
        buffer.extend_from_slice(piece);
        loop {
            match parser.parse(&buffer) {
                Ok((consumed, request)) => {
                    assert!(consumed <= buffer.len());
                    buffer.drain(..consumed);
                    let Some(args) = request else { break };
                    assert!(!args.is_empty() && args.len() <= limits.max_multibulk_len);
                    let bytes: usize = args.iter().map(Vec::len).sum();
                    assert!(bytes <= limits.max_request_bytes);
                }
                Err(_) => return,
            }
        }
        // What the connection reserves must stay within the limits too.
        if let Some(wanted) = parser.wanted(&buffer) {
            assert!(wanted <= limits.max_bulk_len + 64);
        }
    }
});
