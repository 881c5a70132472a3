//! Helpers shared by the integration tests: an in-process server on a free
//! port over a temporary store, and raw-socket clients.

#![allow(dead_code)] // Each test file uses a different subset.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use tempfile::TempDir;
use thicket_server::{start, FsyncPolicy, Limits, RunningServer, ServerConfig};
use thicketdb::{Db, Options};

pub struct TestServer {
    pub server: RunningServer,
    pub dir: TempDir,
}

impl TestServer {
    pub fn start() -> TestServer {
        TestServer::with(FsyncPolicy::No, Limits::default(), false)
    }

    pub fn with(fsync: FsyncPolicy, limits: Limits, metrics: bool) -> TestServer {
        let config = ServerConfig {
            fsync,
            limits,
            metrics: metrics.then(|| "127.0.0.1:0".parse().unwrap()),
            ..ServerConfig::new("127.0.0.1:0".parse().unwrap())
        };
        TestServer::in_dir(tempfile::tempdir().unwrap(), config)
    }

    /// A server over the store in `dir` (new or stopped before).
    pub fn in_dir(dir: TempDir, config: ServerConfig) -> TestServer {
        TestServer::with_options(dir, Options::default(), config)
    }

    /// A server over the store in `dir` opened with `options`.
    pub fn with_options(dir: TempDir, options: Options, config: ServerConfig) -> TestServer {
        let db = Db::open(dir.path(), options).unwrap();
        TestServer {
            server: start(db, config).unwrap(),
            dir,
        }
    }

    pub fn addr(&self) -> SocketAddr {
        self.server.addr
    }

    pub fn client(&self) -> redis::Connection {
        self.client_in(0)
    }

    /// A client connected to database `index` (`redis://addr/index`).
    pub fn client_in(&self, index: u32) -> redis::Connection {
        redis::Client::open(format!("redis://{}/{index}", self.addr()))
            .unwrap()
            .get_connection()
            .unwrap()
    }

    pub fn raw(&self) -> TcpStream {
        let stream = TcpStream::connect(self.addr()).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        stream
    }

    /// Shuts down and returns the store directory (still alive).
    pub fn stop(self) -> TempDir {
        self.server.shutdown();
        self.server.wait().unwrap();
        self.dir
    }
}

/// Sends `request` and reads until the peer closes or `expected` bytes
/// arrived.
pub fn exchange(stream: &mut TcpStream, request: &[u8], expected: usize) -> Vec<u8> {
    stream.write_all(request).unwrap();
    let mut reply = Vec::new();
    let mut chunk = [0u8; 4096];
    while reply.len() < expected {
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => reply.extend_from_slice(&chunk[..n]),
        }
    }
    reply
}

/// Whether the peer has closed the connection (reads end).
pub fn closed(stream: &mut TcpStream) -> bool {
    let mut rest = Vec::new();
    stream.read_to_end(&mut rest).is_ok()
}

pub fn cmd(args: &[&str]) -> redis::Cmd {
    let mut c = redis::cmd(args[0]);
    for a in &args[1..] {
        c.arg(*a);
    }
    c
}

/// The metrics page, fetched over HTTP.
pub fn scrape(server: &TestServer) -> String {
    let addr = server.server.metrics_addr.expect("metrics enabled");
    let mut stream = TcpStream::connect(addr).unwrap();
    let reply = exchange(
        &mut stream,
        b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n",
        usize::MAX,
    );
    let text = String::from_utf8(reply).unwrap();
    assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");
    text.split_once("\r\n\r\n").unwrap().1.to_string()
}
