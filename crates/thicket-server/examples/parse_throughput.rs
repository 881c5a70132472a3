//! Measures the request parser alone: requests/s and MB/s over a buffer of
//! pipelined requests, fed in 16 KiB reads as a connection does.
//!
//! `cargo run --release -p thicket-server --example parse_throughput`

use std::time::Instant;

use thicket_server::resp::RequestParser;
use thicket_server::Limits;

const READ: usize = 16 << 10;

fn multibulk(args: &[&[u8]]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for arg in args {
        out.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
        out.extend_from_slice(arg);
        out.extend_from_slice(b"\r\n");
    }
    out
}

fn measure(name: &str, request: &[u8], count: usize) {
    let input = request.repeat(count);
    let started = Instant::now();
    let mut parser = RequestParser::new(Limits::default());
    let mut buffer = Vec::with_capacity(2 * READ);
    let mut parsed = 0;
    for read in input.chunks(READ) {
        buffer.extend_from_slice(read);
        let mut consumed = 0;
        loop {
            let (n, request) = parser.parse(&buffer[consumed..]).expect("valid input");
            consumed += n;
            match request {
                Some(args) => parsed += usize::from(!args.is_empty()),
                None => break,
            }
        }
        buffer.drain(..consumed);
    }
    let seconds = started.elapsed().as_secs_f64();
    assert_eq!(parsed, count);
    println!(
        "{name}: {count} requests in {seconds:.3} s: {:.2} M requests/s, {:.0} MB/s",
        count as f64 / seconds / 1e6,
        input.len() as f64 / seconds / 1e6
    );
}

fn main() {
    let value = vec![b'v'; 100];
    measure(
        "SET 100-byte value",
        &multibulk(&[b"SET", b"key:0000000001", &value]),
        2_000_000,
    );
    measure("GET", &multibulk(&[b"GET", b"key:0000000001"]), 2_000_000);
    let big = vec![b'v'; 1 << 20];
    measure("SET 1 MiB value", &multibulk(&[b"SET", b"k", &big]), 500);
    measure("inline PING", b"PING\r\n", 2_000_000);
}
