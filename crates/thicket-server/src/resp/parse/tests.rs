use proptest::prelude::*;

use super::*;

fn small_limits() -> Limits {
    Limits {
        max_bulk_len: 1000,
        max_multibulk_len: 50,
        max_inline_len: 200,
        max_request_bytes: 4000,
        ..Limits::default()
    }
}

fn multibulk(args: &[Vec<u8>]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for arg in args {
        out.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
        out.extend_from_slice(arg);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// Feeds `input` in chunks of the given sizes (cycled), as a connection
/// would: unconsumed bytes stay at the front of the buffer.
fn feed(input: &[u8], chunks: &[usize], limits: Limits) -> Result<Vec<Args>, ProtocolError> {
    let mut parser = RequestParser::new(limits);
    let mut buffer = Vec::new();
    let mut requests = Vec::new();
    let mut offset = 0;
    let mut chunk = chunks.iter().cycle();
    while offset < input.len() {
        let take = (*chunk.next().unwrap()).max(1).min(input.len() - offset);
        buffer.extend_from_slice(&input[offset..offset + take]);
        offset += take;
        loop {
            let (consumed, request) = parser.parse(&buffer)?;
            assert!(consumed <= buffer.len());
            buffer.drain(..consumed);
            match request {
                Some(args) => requests.push(args),
                None => break,
            }
        }
    }
    Ok(requests)
}

#[test]
fn multibulk_and_inline_requests() {
    let mut input = multibulk(&[b"SET".to_vec(), b"k".to_vec(), b"a\r\nb".to_vec()]);
    input.extend_from_slice(b"PING\r\n\r\nECHO \"a b\\x41\" 'c\\'d'\n*0\r\n*1\r\n$0\r\n\r\n");
    let requests = feed(&input, &[1000], small_limits()).unwrap();
    assert_eq!(
        requests,
        vec![
            vec![b"SET".to_vec(), b"k".to_vec(), b"a\r\nb".to_vec()],
            vec![b"PING".to_vec()],
            vec![b"ECHO".to_vec(), b"a bA".to_vec(), b"c'd".to_vec()],
            vec![Vec::new()],
        ]
    );
}

#[test]
fn oversized_lengths_are_refused_before_allocation() {
    let limits = small_limits();
    let err = |input: &[u8]| feed(input, &[4096], limits.clone()).unwrap_err().0;
    assert_eq!(err(b"*51\r\n"), "invalid multibulk length");
    assert_eq!(err(b"*1\r\n$1001\r\n"), "invalid bulk length");
    assert_eq!(err(b"*1\r\n$-5\r\n"), "invalid bulk length");
    assert_eq!(err(b"*x\r\n"), "invalid multibulk length");
    assert_eq!(err(b"*1\r\n+5\r\n"), "expected '$', got '+'");
    assert_eq!(err(&[b'*'; 100]), "too big mbulk count string");
    assert_eq!(err(&[b'a'; 300]), "too big inline request");
    assert_eq!(err(b"ECHO \"abc\n"), "unbalanced quotes in request");
    assert_eq!(
        err(b"*1\r\n$2\r\nabcd"),
        "bulk argument not followed by CRLF"
    );
    // Five arguments of 900 bytes: each is allowed, the request is not.
    let big = vec![vec![b'x'; 900]; 5];
    assert_eq!(err(&multibulk(&big)), "request exceeds the size limit");
}

proptest! {
    #[test]
    fn chunked_requests_parse_like_whole_ones(
        requests in prop::collection::vec(prop::collection::vec(prop::collection::vec(any::<u8>(), 0..40), 1..6), 1..8),
        chunks in prop::collection::vec(1usize..30, 1..5),
    ) {
        let input: Vec<u8> = requests.iter().flat_map(|r| multibulk(r)).collect();
        prop_assert_eq!(feed(&input, &chunks, small_limits()).unwrap(), requests);
    }

    /// Random bytes (the fuzz target covers this more deeply): never a panic,
    /// and every accepted request respects the limits.
    #[test]
    fn random_bytes_never_break_the_limits(
        input in prop::collection::vec(prop_oneof![Just(b'*'), Just(b'$'), Just(b'\r'), Just(b'\n'), Just(b'1'), Just(b'9'), Just(b'-'), Just(b'"'), any::<u8>()], 0..300),
        chunks in prop::collection::vec(1usize..50, 1..4),
    ) {
        let limits = small_limits();
        if let Ok(requests) = feed(&input, &chunks, limits.clone()) {
            for request in requests {
                prop_assert!(request.len() <= limits.max_multibulk_len);
                prop_assert!(request.iter().all(|a| a.len() <= limits.max_bulk_len.max(limits.max_inline_len)));
            }
        }
    }
}

#[test]
fn wanted_names_the_awaited_argument() {
    let mut parser = RequestParser::new(small_limits());
    let (consumed, request) = parser.parse(b"*2\r\n$3\r\nGET\r\n$10\r\nab").unwrap();
    assert_eq!((consumed, request), (13, None));
    assert_eq!(parser.wanted(b""), None);
    assert_eq!(parser.wanted(b"$10\r\nab"), Some(17));
}
