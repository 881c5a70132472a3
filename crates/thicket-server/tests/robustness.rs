//! Hostile and broken clients: a malformed or oversized request closes
//! that connection only; a client that does not read its replies stalls
//! only itself. Also metrics and graceful shutdown.

mod common;

use std::io::{Read, Write};

use common::{closed, cmd, exchange, scrape, TestServer};
use redis::Commands;
use thicket_server::{FsyncPolicy, Limits};
use thicketdb::{Db, Options};

fn small_limits() -> Limits {
    Limits {
        max_bulk_len: 1 << 20,
        max_multibulk_len: 1000,
        max_inline_len: 4096,
        max_request_bytes: 4 << 20,
        max_multi_queue: 10,
        max_reply_keys: 100,
        ..Limits::default()
    }
}

#[test]
fn malformed_requests_close_only_their_connection() {
    let server = TestServer::with(FsyncPolicy::No, small_limits(), true);
    let mut bystander = server.client();
    let () = bystander.set("k", "v").unwrap();
    let cases: &[(&[u8], &str)] = &[
        (
            b"*1\r\n$99999999999\r\n",
            "-ERR Protocol error: invalid bulk length\r\n",
        ),
        (
            b"*1001\r\n",
            "-ERR Protocol error: invalid multibulk length\r\n",
        ),
        (
            b"*2\r\n$3\r\nGET\r\n:1\r\n",
            "-ERR Protocol error: expected '$', got ':'\r\n",
        ),
        (
            b"*1\r\n$3\r\nGETxx",
            "-ERR Protocol error: bulk argument not followed by CRLF\r\n",
        ),
        (
            b"SET \"a b\r\n",
            "-ERR Protocol error: unbalanced quotes in request\r\n",
        ),
        (
            &[b'x'; 5000],
            "-ERR Protocol error: too big inline request\r\n",
        ),
    ];
    for (request, expected) in cases {
        let mut s = server.raw();
        let reply = exchange(&mut s, request, expected.len());
        assert_eq!(String::from_utf8_lossy(&reply), *expected);
        assert!(closed(&mut s));
    }
    // Four 1 MiB arguments exceed the 4 MiB request limit together.
    let mut s = server.raw();
    let mut request = b"*5\r\n$4\r\nMSET".to_vec();
    request.extend_from_slice(b"\r\n");
    for _ in 0..4 {
        request.extend_from_slice(format!("${}\r\n", 1 << 20).as_bytes());
        request.extend(std::iter::repeat_n(b'x', 1 << 20));
        request.extend_from_slice(b"\r\n");
    }
    let reply = exchange(&mut s, &request, 1);
    assert!(String::from_utf8_lossy(&reply)
        .starts_with("-ERR Protocol error: request exceeds the size limit"));
    assert_eq!(bystander.get::<_, String>("k").unwrap(), "v");
    assert!(scrape(&server).contains("thicket_protocol_errors_total 7"));
}

#[test]
fn random_garbage_never_takes_the_server_down() {
    let server = TestServer::with(FsyncPolicy::No, small_limits(), false);
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..200 {
        let mut s = server.raw();
        let len = (state % 300) as usize;
        let garbage: Vec<u8> = (0..len)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                b"*$\r\n0123456789-:+ abcGETSET\"'"[(state % 29) as usize]
            })
            .collect();
        let _ = s.write_all(&garbage);
        let _ = s.write_all(b"\r\nPING\r\n");
    }
    let mut c = server.client();
    assert_eq!(cmd(&["PING"]).query::<String>(&mut c).unwrap(), "PONG");
}

#[test]
fn a_client_that_does_not_read_stalls_only_itself() {
    let server = TestServer::start();
    let mut hog = server.raw();
    hog.set_write_timeout(Some(std::time::Duration::from_millis(200)))
        .unwrap();
    // Write GETs of a 100 KiB value until the socket buffers are full: the
    // server stops reading from this client once its replies back up.
    let mut c = server.client();
    let () = c.set("big", vec![b'v'; 100 << 10]).unwrap();
    let request = b"GET big\r\n".repeat(1000);
    let mut sent = 0;
    while hog.write_all(&request).is_ok() {
        sent += 1;
        assert!(
            sent < 100_000,
            "the server kept reading without the client reading replies"
        );
    }
    assert_eq!(cmd(&["PING"]).query::<String>(&mut c).unwrap(), "PONG");
    drop(hog);
    assert_eq!(cmd(&["PING"]).query::<String>(&mut c).unwrap(), "PONG");
}

#[test]
fn oversized_replies_and_transactions_are_refused() {
    let server = TestServer::with(FsyncPolicy::No, small_limits(), false);
    let mut c = server.client();
    for i in 0..150 {
        let () = c.set(format!("k{i:03}"), i).unwrap();
    }
    assert!(cmd(&["KEYS", "*"]).query::<redis::Value>(&mut c).is_err());
    let limited: Vec<String> = cmd(&["THICKET.RANGE", "k", "", "LIMIT", "100"])
        .query(&mut c)
        .unwrap();
    assert_eq!(limited.len(), 200);
    let mut pipe = redis::pipe();
    pipe.atomic();
    for _ in 0..11 {
        pipe.cmd("INCR").arg("q");
    }
    assert!(pipe.query::<redis::Value>(&mut c).is_err());
    assert_eq!(c.get::<_, Option<i64>>("q").unwrap(), None);
}

#[test]
fn metrics_endpoint_reports_commands_and_engine() {
    let server = TestServer::with(FsyncPolicy::No, Limits::default(), true);
    let mut c = server.client();
    for i in 0..10 {
        let () = c.set(format!("m{i}"), i).unwrap();
    }
    let _: Option<String> = c.get("m1").unwrap();
    let _ = cmd(&["NOSUCH"]).query::<redis::Value>(&mut c);
    let page = scrape(&server);
    for expected in [
        "thicket_commands_total{command=\"set\"} 10",
        "thicket_commands_total{command=\"get\"} 1",
        "thicket_commands_total{command=\"unknown\"} 1",
        "thicket_command_errors_total{command=\"unknown\"} 1",
        "thicket_command_duration_seconds_count{command=\"set\"} 10",
        "thicket_command_duration_seconds_bucket{command=\"set\",le=\"+Inf\"} 10",
        "thicket_connected_clients 1",
        "# TYPE thicket_engine_write_amplification gauge",
        "thicket_engine_user_writes_total 10",
        "# TYPE thicket_engine_stall_microseconds_total counter",
        "# TYPE thicket_engine_compactions_merge_total counter",
        "# TYPE thicket_engine_block_cache_hit_ratio gauge",
    ] {
        assert!(page.contains(expected), "missing {expected:?} in\n{page}");
    }
    let mut s = std::net::TcpStream::connect(server.server.metrics_addr.unwrap()).unwrap();
    s.write_all(b"GET /nope HTTP/1.1\r\n\r\n").unwrap();
    let mut reply = String::new();
    s.read_to_string(&mut reply).unwrap();
    assert!(reply.starts_with("HTTP/1.1 404"));
}

#[test]
fn shutdown_command_closes_the_store_cleanly() {
    let server = TestServer::start();
    let mut c = server.client();
    let () = c.set("kept", "yes").unwrap();
    let mut raw = server.raw();
    let reply = exchange(&mut raw, b"SHUTDOWN\r\n", 1);
    assert!(reply.is_empty(), "SHUTDOWN closes without a reply");
    let dir = {
        let TestServer { server, dir } = server;
        server.wait().unwrap();
        dir
    };
    let db = Db::open(dir.path(), Options::default()).unwrap();
    assert_eq!(db.get(b"kept").unwrap(), Some(b"yes".to_vec()));
}

#[test]
fn quit_replies_then_closes() {
    let server = TestServer::start();
    let mut s = server.raw();
    assert_eq!(exchange(&mut s, b"QUIT\r\n", 5), b"+OK\r\n");
    assert!(closed(&mut s));
    let dir = server.stop();
    assert!(dir.path().join("CURRENT").exists());
}
