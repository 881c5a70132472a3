//! Atomicity across connections: read-modify-write commands never lose an
//! update, MSET is seen whole by MGET, transactions are all-or-nothing.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;

use common::{cmd, TestServer};
use redis::Commands;

const CLIENTS: usize = 8;
const PER_CLIENT: usize = 300;

#[test]
fn concurrent_read_modify_writes_lose_no_update() {
    let server = TestServer::start();
    thread::scope(|s| {
        for _ in 0..CLIENTS {
            s.spawn(|| {
                let mut c = server.client();
                for _ in 0..PER_CLIENT {
                    let _: i64 = c.incr("counter", 1).unwrap();
                    let _: i64 = cmd(&["APPEND", "log", "x"]).query(&mut c).unwrap();
                    let _: String = cmd(&["INCRBYFLOAT", "float", "0.5"]).query(&mut c).unwrap();
                    let _: i64 = cmd(&["MSETNX", "once", "1"]).query(&mut c).unwrap();
                    // A transaction of two increments: both or neither.
                    let _: (i64, i64) = redis::pipe()
                        .atomic()
                        .cmd("INCR")
                        .arg("pair:a")
                        .cmd("INCR")
                        .arg("pair:b")
                        .query(&mut c)
                        .unwrap();
                }
            });
        }
    });
    let mut c = server.client();
    let total = (CLIENTS * PER_CLIENT) as i64;
    assert_eq!(c.get::<_, i64>("counter").unwrap(), total);
    assert_eq!(cmd(&["STRLEN", "log"]).query::<i64>(&mut c).unwrap(), total);
    assert_eq!(c.get::<_, f64>("float").unwrap(), total as f64 / 2.0);
    assert_eq!(
        c.get::<_, (i64, i64)>(&["pair:a", "pair:b"]).unwrap(),
        (total, total)
    );
}

#[test]
fn mset_is_atomic_to_concurrent_mget() {
    let server = TestServer::start();
    let done = Arc::new(AtomicBool::new(false));
    thread::scope(|s| {
        let writer_done = done.clone();
        let server = &server;
        s.spawn(move || {
            let mut c = server.client();
            for i in 0..2000 {
                let () = c.mset(&[("m:a", i), ("m:b", i), ("m:c", i)]).unwrap();
            }
            writer_done.store(true, Ordering::Release);
        });
        for _ in 0..3 {
            let done = done.clone();
            s.spawn(move || {
                let mut c = server.client();
                while !done.load(Ordering::Acquire) {
                    let values: Vec<Option<i64>> = c.mget(&["m:a", "m:b", "m:c"]).unwrap();
                    assert!(
                        values.windows(2).all(|w| w[0] == w[1]),
                        "torn MSET: {values:?}"
                    );
                }
            });
        }
    });
}

#[test]
fn synced_writes_share_log_syncs() {
    let server = TestServer::with(
        thicket_server::FsyncPolicy::Always,
        Default::default(),
        true,
    );
    thread::scope(|s| {
        for t in 0..CLIENTS {
            let server = &server;
            s.spawn(move || {
                let mut c = server.client();
                for i in 0..50 {
                    let () = c.set(format!("sync:{t}:{i}"), i).unwrap();
                }
            });
        }
    });
    let metrics = common::scrape(&server);
    let value = |name: &str| -> u64 {
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
            .unwrap_or_else(|| panic!("{name} missing"))
    };
    let waiters = value("thicket_sync_waiters_total");
    let rounds = value("thicket_sync_rounds_total");
    assert_eq!(
        waiters,
        (CLIENTS * 50) as u64,
        "every acknowledged SET waited for a sync"
    );
    assert!(rounds >= 1 && rounds <= waiters);
    let mut c = server.client();
    let info: String = cmd(&["INFO", "persistence"]).query(&mut c).unwrap();
    for (field, n) in [("sync_waiters", waiters), ("sync_rounds", rounds)] {
        assert!(
            info.contains(&format!("{field}:{n}\r\n")),
            "INFO gives the metrics' {field} ({n}): {info}"
        );
    }
    assert_eq!(
        cmd(&["DBSIZE"]).query::<i64>(&mut c).unwrap(),
        (CLIENTS * 50) as i64
    );
}
