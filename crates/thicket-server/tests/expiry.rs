//! Key expiry: the options of SET and GETEX, EXPIRE and its variants, TTL
//! and friends, expired keys invisible to every command, the active pass,
//! and expiries that survive a restart.

mod common;

use std::thread::sleep;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::{cmd, TestServer};
use redis::{RedisResult, Value};
use thicket_server::ServerConfig;

fn err_text<T: std::fmt::Debug>(r: RedisResult<T>) -> String {
    let e = r.expect_err("expected an error reply");
    format!("{} {}", e.code().unwrap_or(""), e.detail().unwrap_or(""))
        .trim()
        .to_string()
}

fn int(c: &mut redis::Connection, words: &[&str]) -> i64 {
    cmd(words).query(c).unwrap()
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

#[test]
fn set_options_and_ttl_commands() {
    let server = TestServer::start();
    let mut c = server.client();
    let () = cmd(&["SET", "k", "v", "EX", "100"]).query(&mut c).unwrap();
    assert!((99..=100).contains(&int(&mut c, &["TTL", "k"])));
    assert!((99_000..=100_000).contains(&int(&mut c, &["PTTL", "k"])));
    let at = int(&mut c, &["PEXPIRETIME", "k"]);
    assert!((at - now_ms() - 100_000).abs() < 2_000);
    assert_eq!(int(&mut c, &["EXPIRETIME", "k"]), at / 1000);
    // KEEPTTL keeps it, a plain SET clears it.
    let () = cmd(&["SET", "k", "w", "KEEPTTL"]).query(&mut c).unwrap();
    assert!(int(&mut c, &["TTL", "k"]) > 0);
    let () = cmd(&["SET", "k", "x"]).query(&mut c).unwrap();
    assert_eq!(int(&mut c, &["TTL", "k"]), -1);
    // INCR and APPEND keep a TTL.
    let () = cmd(&["SET", "n", "1", "PX", "100000"])
        .query(&mut c)
        .unwrap();
    assert_eq!(int(&mut c, &["INCR", "n"]), 2);
    assert_eq!(int(&mut c, &["APPEND", "n", "0"]), 2);
    assert!(int(&mut c, &["PTTL", "n"]) > 90_000);
    assert_eq!(cmd(&["GET", "n"]).query::<String>(&mut c).unwrap(), "20");
    // SETEX, PSETEX, GETEX.
    let () = cmd(&["SETEX", "s", "50", "v"]).query(&mut c).unwrap();
    assert!(int(&mut c, &["TTL", "s"]) > 40);
    let () = cmd(&["PSETEX", "p", "50000", "v"]).query(&mut c).unwrap();
    assert!(int(&mut c, &["PTTL", "p"]) > 40_000);
    assert_eq!(
        err_text(cmd(&["SETEX", "s", "-1", "v"]).query::<Value>(&mut c)),
        "ERR invalid expire time in 'setex' command"
    );
    let got: String = cmd(&["GETEX", "s", "PERSIST"]).query(&mut c).unwrap();
    assert_eq!(got, "v");
    assert_eq!(int(&mut c, &["TTL", "s"]), -1);
    let _: String = cmd(&["GETEX", "s", "EX", "30"]).query(&mut c).unwrap();
    assert!(int(&mut c, &["TTL", "s"]) > 20);
    // An absolute time in the past deletes.
    let _: String = cmd(&["GETEX", "s", "PXAT", "1"]).query(&mut c).unwrap();
    assert_eq!(int(&mut c, &["EXISTS", "s"]), 0);
    // PERSIST.
    assert_eq!(int(&mut c, &["PERSIST", "p"]), 1);
    assert_eq!(int(&mut c, &["PERSIST", "p"]), 0);
    assert_eq!(int(&mut c, &["PTTL", "p"]), -1);
    assert_eq!(int(&mut c, &["TTL", "absent"]), -2);
}

#[test]
fn expire_flags_follow_redis() {
    let server = TestServer::start();
    let mut c = server.client();
    let () = cmd(&["SET", "k", "v"]).query(&mut c).unwrap();
    assert_eq!(int(&mut c, &["EXPIRE", "k", "100", "XX"]), 0);
    assert_eq!(int(&mut c, &["EXPIRE", "k", "100", "GT"]), 0);
    assert_eq!(int(&mut c, &["EXPIRE", "k", "100", "NX"]), 1);
    assert_eq!(int(&mut c, &["EXPIRE", "k", "200", "NX"]), 0);
    assert_eq!(int(&mut c, &["EXPIRE", "k", "50", "GT"]), 0);
    assert_eq!(int(&mut c, &["EXPIRE", "k", "200", "GT"]), 1);
    assert_eq!(int(&mut c, &["EXPIRE", "k", "300", "LT"]), 0);
    assert_eq!(int(&mut c, &["PEXPIRE", "k", "100000", "LT"]), 1);
    assert!(int(&mut c, &["TTL", "k"]) <= 100);
    assert_eq!(
        err_text(cmd(&["EXPIRE", "k", "1", "NX", "XX"]).query::<Value>(&mut c)),
        "ERR NX and XX, GT or LT options at the same time are not compatible"
    );
    assert_eq!(
        err_text(cmd(&["EXPIRE", "k", "1", "GT", "LT"]).query::<Value>(&mut c)),
        "ERR GT and LT options at the same time are not compatible"
    );
    assert_eq!(
        err_text(cmd(&["EXPIRE", "k", "1", "FOO"]).query::<Value>(&mut c)),
        "ERR Unsupported option FOO"
    );
    assert_eq!(int(&mut c, &["EXPIRE", "absent", "10"]), 0);
    let at = (now_ms() / 1000 + 1000).to_string();
    assert_eq!(int(&mut c, &["EXPIREAT", "k", &at]), 1);
    assert_eq!(int(&mut c, &["EXPIRETIME", "k"]).to_string(), at);
    // A time in the past deletes the key.
    assert_eq!(int(&mut c, &["EXPIRE", "k", "-1"]), 1);
    assert_eq!(int(&mut c, &["EXISTS", "k"]), 0);
    // Collections expire too.
    assert_eq!(int(&mut c, &["HSET", "h", "f", "v"]), 1);
    assert_eq!(
        int(
            &mut c,
            &["PEXPIREAT", "h", &(now_ms() + 100_000).to_string()]
        ),
        1
    );
    assert!(int(&mut c, &["TTL", "h"]) > 90);
    let () = cmd(&["SET", "plain", "v"]).query(&mut c).unwrap();
    let info: String = cmd(&["INFO", "keyspace"]).query(&mut c).unwrap();
    assert!(
        info.contains("db0:keys=2,expires=1,avg_ttl=0\r\n"),
        "{info}"
    );
}

#[test]
fn expired_keys_are_invisible_to_every_command() {
    let server = TestServer::start();
    let mut c = server.client();
    let () = cmd(&["SET", "gone", "v", "PX", "50"])
        .query(&mut c)
        .unwrap();
    let _: i64 = cmd(&["RPUSH", "gonelist", "a", "b"]).query(&mut c).unwrap();
    assert_eq!(int(&mut c, &["PEXPIRE", "gonelist", "50"]), 1);
    let () = cmd(&["SET", "stays", "v"]).query(&mut c).unwrap();
    sleep(Duration::from_millis(120));
    assert_eq!(
        cmd(&["GET", "gone"])
            .query::<Option<String>>(&mut c)
            .unwrap(),
        None
    );
    assert_eq!(int(&mut c, &["EXISTS", "gone", "gonelist", "stays"]), 1);
    assert_eq!(
        cmd(&["TYPE", "gone"]).query::<String>(&mut c).unwrap(),
        "none"
    );
    assert_eq!(int(&mut c, &["LLEN", "gonelist"]), 0);
    assert_eq!(int(&mut c, &["TTL", "gone"]), -2);
    assert_eq!(int(&mut c, &["DBSIZE"]), 1);
    let keys: Vec<String> = cmd(&["KEYS", "*"]).query(&mut c).unwrap();
    assert_eq!(keys, ["stays"]);
    let (cursor, keys): (String, Vec<String>) =
        cmd(&["SCAN", "0", "COUNT", "100"]).query(&mut c).unwrap();
    assert_eq!((cursor.as_str(), keys), ("0", vec!["stays".to_string()]));
    // A write sees no old value: SETNX succeeds, RPUSH starts a new list.
    assert_eq!(int(&mut c, &["SETNX", "gone", "new"]), 1);
    assert_eq!(int(&mut c, &["RPUSH", "gonelist", "c"]), 1);
    let items: Vec<String> = cmd(&["LRANGE", "gonelist", "0", "-1"])
        .query(&mut c)
        .unwrap();
    assert_eq!(items, ["c"]);
}

#[test]
fn the_active_pass_deletes_expired_keys() {
    let server = TestServer::with(thicket_server::FsyncPolicy::No, Default::default(), true);
    let mut c = server.client();
    for i in 0..50 {
        let () = cmd(&["SET", &format!("k{i}"), "v", "PX", "30"])
            .query(&mut c)
            .unwrap();
    }
    let _: i64 = cmd(&["SADD", "set", "a", "b"]).query(&mut c).unwrap();
    assert_eq!(int(&mut c, &["PEXPIRE", "set", "30"]), 1);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let expired = loop {
        let info: String = cmd(&["INFO", "stats"]).query(&mut c).unwrap();
        let expired: u64 = info
            .lines()
            .find_map(|l| l.strip_prefix("expired_keys:"))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        if expired == 51 || std::time::Instant::now() > deadline {
            break expired;
        }
        sleep(Duration::from_millis(50));
    };
    assert_eq!(expired, 51, "the active pass deleted every expired key");
    // Deleted from the companion keyspace itself, not only hidden.
    drop(c);
    let dir = server.stop();
    let store = thicketdb::Db::open(dir.path(), thicketdb::Options::default()).unwrap();
    let companion = store.keyspace("thicket-types:default").unwrap();
    let typed: Vec<_> = companion.prefix([1u8]).unwrap().collect();
    assert!(typed.is_empty(), "{} typed keys left", typed.len());
}

#[test]
fn expiries_survive_a_restart() {
    let server = TestServer::start();
    let mut c = server.client();
    let () = cmd(&["SET", "long", "v", "EX", "1000"])
        .query(&mut c)
        .unwrap();
    let () = cmd(&["SET", "short", "v", "PX", "200"])
        .query(&mut c)
        .unwrap();
    let () = cmd(&["SET", "plain", "v"]).query(&mut c).unwrap();
    drop(c);
    let dir = server.stop();
    sleep(Duration::from_millis(250));
    let server = TestServer::in_dir(dir, ServerConfig::new("127.0.0.1:0".parse().unwrap()));
    let mut c = server.client();
    assert!(int(&mut c, &["TTL", "long"]) > 990);
    assert_eq!(int(&mut c, &["EXISTS", "short"]), 0);
    assert_eq!(int(&mut c, &["TTL", "plain"]), -1);
}
