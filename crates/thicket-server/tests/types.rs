//! Hashes, sets, sorted sets and lists: semantics and error texts as
//! Redis's, WRONGTYPE, whole-key commands across types, one-write DEL of a
//! big collection, per-key atomicity from many connections, WATCH.

mod common;

use std::thread;

use common::{cmd, TestServer};
use redis::{RedisResult, Value};

fn err_text<T: std::fmt::Debug>(r: RedisResult<T>) -> String {
    let e = r.expect_err("expected an error reply");
    format!("{} {}", e.code().unwrap_or(""), e.detail().unwrap_or(""))
        .trim()
        .to_string()
}

fn int(c: &mut redis::Connection, words: &[&str]) -> i64 {
    cmd(words).query(c).unwrap()
}

fn strings(c: &mut redis::Connection, words: &[&str]) -> Vec<String> {
    cmd(words).query(c).unwrap()
}

const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";

#[test]
fn hashes() {
    let server = TestServer::start();
    let mut c = server.client();
    assert_eq!(int(&mut c, &["HSET", "h", "a", "1", "b", "2"]), 2);
    assert_eq!(int(&mut c, &["HSET", "h", "a", "3", "c", "4"]), 1);
    assert_eq!(int(&mut c, &["HLEN", "h"]), 3);
    assert_eq!(
        strings(&mut c, &["HGETALL", "h"]),
        ["a", "3", "b", "2", "c", "4"]
    );
    assert_eq!(strings(&mut c, &["HKEYS", "h"]), ["a", "b", "c"]);
    assert_eq!(strings(&mut c, &["HVALS", "h"]), ["3", "2", "4"]);
    let got: Vec<Option<String>> = cmd(&["HMGET", "h", "a", "zz"]).query(&mut c).unwrap();
    assert_eq!(got, [Some("3".to_string()), None]);
    assert_eq!(int(&mut c, &["HSETNX", "h", "a", "9"]), 0);
    assert_eq!(int(&mut c, &["HINCRBY", "h", "a", "10"]), 13);
    assert_eq!(
        cmd(&["HINCRBYFLOAT", "h", "f", "1.5"])
            .query::<String>(&mut c)
            .unwrap(),
        "1.5"
    );
    assert_eq!(
        err_text(cmd(&["HINCRBY", "h", "f", "1"]).query::<Value>(&mut c)),
        "ERR hash value is not an integer"
    );
    assert_eq!(int(&mut c, &["HSTRLEN", "h", "a"]), 2);
    assert_eq!(int(&mut c, &["HEXISTS", "h", "b"]), 1);
    assert_eq!(int(&mut c, &["HDEL", "h", "a", "b", "c", "f", "nope"]), 4);
    assert_eq!(
        int(&mut c, &["EXISTS", "h"]),
        0,
        "an emptied hash is deleted"
    );
    assert_eq!(
        err_text(cmd(&["HSET", "h", "a"]).query::<Value>(&mut c)),
        "ERR wrong number of arguments for 'hset' command"
    );
    assert_eq!(int(&mut c, &["HSET", "h", "x", "1", "y", "2"]), 2);
    let (cursor, items): (String, Vec<String>) = cmd(&["HSCAN", "h", "0", "MATCH", "x"])
        .query(&mut c)
        .unwrap();
    assert_eq!(
        (cursor.as_str(), items),
        ("0", vec!["x".to_string(), "1".to_string()])
    );
    let fields = strings(&mut c, &["HRANDFIELD", "h", "-5"]);
    assert_eq!(fields.len(), 5);
    assert!(fields.iter().all(|f| f == "x" || f == "y"));
    assert_eq!(strings(&mut c, &["HRANDFIELD", "h", "5"]).len(), 2);
}

#[test]
fn sets() {
    let server = TestServer::start();
    let mut c = server.client();
    assert_eq!(int(&mut c, &["SADD", "s", "a", "b", "c", "a"]), 3);
    assert_eq!(int(&mut c, &["SADD", "t", "b", "c", "d"]), 3);
    assert_eq!(int(&mut c, &["SCARD", "s"]), 3);
    assert_eq!(strings(&mut c, &["SMEMBERS", "s"]), ["a", "b", "c"]);
    assert_eq!(int(&mut c, &["SISMEMBER", "s", "b"]), 1);
    let got: Vec<i64> = cmd(&["SMISMEMBER", "s", "a", "z"]).query(&mut c).unwrap();
    assert_eq!(got, [1, 0]);
    assert_eq!(strings(&mut c, &["SINTER", "s", "t"]), ["b", "c"]);
    assert_eq!(strings(&mut c, &["SUNION", "s", "t"]), ["a", "b", "c", "d"]);
    assert_eq!(strings(&mut c, &["SDIFF", "s", "t"]), ["a"]);
    assert_eq!(int(&mut c, &["SINTERSTORE", "u", "s", "t"]), 2);
    assert_eq!(strings(&mut c, &["SMEMBERS", "u"]), ["b", "c"]);
    assert_eq!(int(&mut c, &["SINTERCARD", "2", "s", "t", "LIMIT", "1"]), 1);
    assert_eq!(
        err_text(cmd(&["SINTERCARD", "0", "s"]).query::<Value>(&mut c)),
        "ERR numkeys should be greater than 0"
    );
    assert_eq!(int(&mut c, &["SMOVE", "s", "t", "a"]), 1);
    assert_eq!(int(&mut c, &["SMOVE", "s", "t", "a"]), 0);
    assert_eq!(int(&mut c, &["SREM", "s", "b", "c"]), 2);
    assert_eq!(int(&mut c, &["EXISTS", "s"]), 0);
    let popped = strings(&mut c, &["SPOP", "t", "10"]);
    assert_eq!(popped.len(), 4);
    assert_eq!(int(&mut c, &["EXISTS", "t"]), 0);
    assert_eq!(int(&mut c, &["SDIFFSTORE", "u", "nothing", "u"]), 0);
    assert_eq!(
        int(&mut c, &["EXISTS", "u"]),
        0,
        "an empty result deletes the destination"
    );
}

#[test]
fn sorted_sets() {
    let server = TestServer::start();
    let mut c = server.client();
    assert_eq!(
        int(
            &mut c,
            &["ZADD", "z", "1", "a", "2", "b", "3", "c", "-1.5", "m"]
        ),
        4
    );
    assert_eq!(
        strings(&mut c, &["ZRANGE", "z", "0", "-1"]),
        ["m", "a", "b", "c"]
    );
    assert_eq!(
        strings(&mut c, &["ZRANGE", "z", "0", "1", "WITHSCORES"]),
        ["m", "-1.5", "a", "1"]
    );
    assert_eq!(strings(&mut c, &["ZREVRANGE", "z", "0", "0"]), ["c"]);
    assert_eq!(
        strings(&mut c, &["ZRANGEBYSCORE", "z", "(1", "+inf"]),
        ["b", "c"]
    );
    assert_eq!(
        strings(
            &mut c,
            &["ZRANGE", "z", "+inf", "-inf", "BYSCORE", "REV", "LIMIT", "1", "2"]
        ),
        ["b", "a"]
    );
    assert_eq!(int(&mut c, &["ZCOUNT", "z", "-inf", "2"]), 3);
    assert_eq!(int(&mut c, &["ZRANK", "z", "b"]), 2);
    assert_eq!(int(&mut c, &["ZREVRANK", "z", "b"]), 1);
    assert_eq!(
        cmd(&["ZSCORE", "z", "m"]).query::<String>(&mut c).unwrap(),
        "-1.5"
    );
    assert_eq!(
        cmd(&["ZINCRBY", "z", "10", "a"])
            .query::<String>(&mut c)
            .unwrap(),
        "11"
    );
    assert_eq!(strings(&mut c, &["ZRANGE", "z", "-1", "-1"]), ["a"]);
    assert_eq!(
        int(&mut c, &["ZADD", "z", "NX", "CH", "100", "a", "5", "n"]),
        1
    );
    assert_eq!(
        int(&mut c, &["ZADD", "z", "GT", "CH", "1", "a", "50", "n"]),
        1
    );
    assert_eq!(
        err_text(cmd(&["ZADD", "z", "NX", "XX", "1", "a"]).query::<Value>(&mut c)),
        "ERR XX and NX options at the same time are not compatible"
    );
    assert_eq!(
        err_text(cmd(&["ZADD", "z", "x", "a"]).query::<Value>(&mut c)),
        "ERR value is not a valid float"
    );
    assert_eq!(strings(&mut c, &["ZPOPMIN", "z"]), ["m", "-1.5"]);
    assert_eq!(
        strings(&mut c, &["ZPOPMAX", "z", "2"]),
        ["n", "50", "a", "11"]
    );
    assert_eq!(int(&mut c, &["ZREMRANGEBYRANK", "z", "0", "0"]), 1);
    assert_eq!(strings(&mut c, &["ZRANGE", "z", "0", "-1"]), ["c"]);
    assert_eq!(
        int(
            &mut c,
            &["ZADD", "lex", "0", "a", "0", "b", "0", "c", "0", "d"]
        ),
        4
    );
    assert_eq!(
        strings(&mut c, &["ZRANGEBYLEX", "lex", "(a", "[c"]),
        ["b", "c"]
    );
    assert_eq!(
        strings(&mut c, &["ZREVRANGEBYLEX", "lex", "+", "(b"]),
        ["d", "c"]
    );
    assert_eq!(int(&mut c, &["ZLEXCOUNT", "lex", "-", "+"]), 4);
    assert_eq!(int(&mut c, &["ZREMRANGEBYLEX", "lex", "[a", "[b"]), 2);
    assert_eq!(int(&mut c, &["ZRANGESTORE", "dst", "lex", "0", "-1"]), 2);
    assert_eq!(strings(&mut c, &["ZRANGE", "dst", "0", "-1"]), ["c", "d"]);
    let scores: Vec<Option<String>> = cmd(&["ZMSCORE", "dst", "c", "zz"]).query(&mut c).unwrap();
    assert_eq!(scores, [Some("0".to_string()), None]);
    assert_eq!(int(&mut c, &["ZREMRANGEBYSCORE", "dst", "-inf", "+inf"]), 2);
    assert_eq!(int(&mut c, &["EXISTS", "dst"]), 0);
}

#[test]
fn lists() {
    let server = TestServer::start();
    let mut c = server.client();
    assert_eq!(int(&mut c, &["RPUSH", "l", "a", "b", "c"]), 3);
    assert_eq!(int(&mut c, &["LPUSH", "l", "z", "y"]), 5);
    assert_eq!(
        strings(&mut c, &["LRANGE", "l", "0", "-1"]),
        ["y", "z", "a", "b", "c"]
    );
    assert_eq!(strings(&mut c, &["LRANGE", "l", "-2", "100"]), ["b", "c"]);
    assert_eq!(
        cmd(&["LINDEX", "l", "-1"]).query::<String>(&mut c).unwrap(),
        "c"
    );
    let () = cmd(&["LSET", "l", "1", "Z"]).query(&mut c).unwrap();
    assert_eq!(
        err_text(cmd(&["LSET", "l", "10", "x"]).query::<Value>(&mut c)),
        "ERR index out of range"
    );
    assert_eq!(int(&mut c, &["LINSERT", "l", "BEFORE", "a", "q"]), 6);
    assert_eq!(int(&mut c, &["LINSERT", "l", "AFTER", "nope", "q"]), -1);
    assert_eq!(
        strings(&mut c, &["LRANGE", "l", "0", "-1"]),
        ["y", "Z", "q", "a", "b", "c"]
    );
    assert_eq!(int(&mut c, &["RPUSH", "l", "q"]), 7);
    assert_eq!(int(&mut c, &["LREM", "l", "-1", "q"]), 1);
    assert_eq!(int(&mut c, &["LPOS", "l", "q"]), 2);
    let () = cmd(&["LTRIM", "l", "1", "-2"]).query(&mut c).unwrap();
    assert_eq!(
        strings(&mut c, &["LRANGE", "l", "0", "-1"]),
        ["Z", "q", "a", "b"]
    );
    assert_eq!(cmd(&["LPOP", "l"]).query::<String>(&mut c).unwrap(), "Z");
    assert_eq!(strings(&mut c, &["RPOP", "l", "2"]), ["b", "a"]);
    assert_eq!(
        cmd(&["LMOVE", "l", "m", "LEFT", "RIGHT"])
            .query::<String>(&mut c)
            .unwrap(),
        "q"
    );
    assert_eq!(int(&mut c, &["EXISTS", "l"]), 0);
    assert_eq!(int(&mut c, &["LPUSHX", "l", "x"]), 0);
    assert_eq!(
        cmd(&["RPOPLPUSH", "m", "m"])
            .query::<String>(&mut c)
            .unwrap(),
        "q"
    );
    assert_eq!(int(&mut c, &["LLEN", "m"]), 1);
    let nil: Value = cmd(&["LPOP", "nothing", "2"]).query(&mut c).unwrap();
    assert_eq!(nil, Value::Nil);
    assert!(err_text(cmd(&["BLPOP", "m", "0"]).query::<Value>(&mut c)).contains("blocking"));
}

#[test]
fn types_renames_copies_and_wrongtype() {
    let server = TestServer::start();
    let mut c = server.client();
    let () = cmd(&["SET", "str", "v"]).query(&mut c).unwrap();
    let _: i64 = cmd(&["HSET", "hash", "f", "v"]).query(&mut c).unwrap();
    let _: i64 = cmd(&["SADD", "set", "m"]).query(&mut c).unwrap();
    let _: i64 = cmd(&["ZADD", "zset", "1", "m"]).query(&mut c).unwrap();
    let _: i64 = cmd(&["RPUSH", "list", "x"]).query(&mut c).unwrap();
    for (key, kind) in [
        ("str", "string"),
        ("hash", "hash"),
        ("set", "set"),
        ("zset", "zset"),
        ("list", "list"),
    ] {
        assert_eq!(cmd(&["TYPE", key]).query::<String>(&mut c).unwrap(), kind);
        let (_, keys): (String, Vec<String>) = cmd(&["SCAN", "0", "COUNT", "100", "TYPE", kind])
            .query(&mut c)
            .unwrap();
        assert_eq!(keys, [key]);
    }
    assert_eq!(int(&mut c, &["DBSIZE"]), 5);
    assert_eq!(
        err_text(cmd(&["GET", "hash"]).query::<Value>(&mut c)),
        WRONGTYPE
    );
    assert_eq!(
        err_text(cmd(&["INCR", "list"]).query::<Value>(&mut c)),
        WRONGTYPE
    );
    assert_eq!(
        err_text(cmd(&["LPUSH", "str", "x"]).query::<Value>(&mut c)),
        WRONGTYPE
    );
    assert_eq!(
        err_text(cmd(&["SADD", "zset", "x"]).query::<Value>(&mut c)),
        WRONGTYPE
    );
    assert_eq!(
        err_text(cmd(&["SINTER", "set", "hash"]).query::<Value>(&mut c)),
        WRONGTYPE
    );
    let got: Vec<Option<String>> = cmd(&["MGET", "str", "hash"]).query(&mut c).unwrap();
    assert_eq!(got, [Some("v".to_string()), None]);
    // The encoding Redis would pick: by size under the tunable limits.
    let encoding = |c: &mut redis::Connection, key: &str| -> String {
        cmd(&["OBJECT", "ENCODING", key]).query(c).unwrap()
    };
    assert_eq!(encoding(&mut c, "zset"), "listpack");
    let () = cmd(&["CONFIG", "SET", "zset-max-listpack-entries", "0"])
        .query(&mut c)
        .unwrap();
    assert_eq!(encoding(&mut c, "zset"), "skiplist");
    assert_eq!(encoding(&mut c, "set"), "hashtable");
    assert_eq!(encoding(&mut c, "str"), "embstr");
    // SET replaces a collection, members and all.
    let () = cmd(&["SET", "hash", "now a string"]).query(&mut c).unwrap();
    assert_eq!(
        cmd(&["TYPE", "hash"]).query::<String>(&mut c).unwrap(),
        "string"
    );
    assert_eq!(int(&mut c, &["HSET", "hash2", "g", "w"]), 1);
    let () = cmd(&["RENAME", "hash2", "renamed"]).query(&mut c).unwrap();
    assert_eq!(strings(&mut c, &["HGETALL", "renamed"]), ["g", "w"]);
    assert_eq!(int(&mut c, &["EXISTS", "hash2"]), 0);
    assert_eq!(int(&mut c, &["RENAMENX", "renamed", "str"]), 0);
    assert_eq!(
        err_text(cmd(&["RENAME", "nope", "x"]).query::<Value>(&mut c)),
        "ERR no such key"
    );
    assert_eq!(int(&mut c, &["COPY", "list", "list2"]), 1);
    assert_eq!(int(&mut c, &["COPY", "list", "list2"]), 0);
    assert_eq!(int(&mut c, &["COPY", "zset", "list2", "REPLACE"]), 1);
    assert_eq!(
        strings(&mut c, &["ZRANGE", "list2", "0", "-1", "WITHSCORES"]),
        ["m", "1"]
    );
    assert_eq!(int(&mut c, &["COPY", "set", "set", "DB", "2"]), 1);
    let mut c2 = server.client_in(2);
    assert_eq!(strings(&mut c2, &["SMEMBERS", "set"]), ["m"]);
    // A new list at a deleted list's key does not see the old members.
    assert_eq!(int(&mut c, &["DEL", "list"]), 1);
    assert_eq!(int(&mut c, &["RPUSH", "list", "fresh"]), 1);
    assert_eq!(strings(&mut c, &["LRANGE", "list", "0", "-1"]), ["fresh"]);
}

fn user_writes(c: &mut redis::Connection) -> u64 {
    let stats: std::collections::HashMap<String, String> =
        cmd(&["THICKET.STATS"]).query(c).unwrap();
    stats["user_writes"].parse().unwrap()
}

#[test]
fn deleting_a_big_collection_is_one_write() {
    let server = TestServer::start();
    let mut c = server.client();
    for chunk in 0..20 {
        let mut words = vec!["SADD".to_string(), "big".to_string()];
        words.extend((0..1000).map(|i| format!("m{}", chunk * 1000 + i)));
        let words: Vec<&str> = words.iter().map(String::as_str).collect();
        let _: i64 = cmd(&words).query(&mut c).unwrap();
    }
    assert_eq!(int(&mut c, &["SCARD", "big"]), 20_000);
    let before = user_writes(&mut c);
    assert_eq!(int(&mut c, &["DEL", "big"]), 1);
    // One batch of two operations (the metadata's delete and one range
    // tombstone over the members), not 20,000 deletes.
    assert_eq!(user_writes(&mut c) - before, 2);
    assert_eq!(int(&mut c, &["SADD", "big", "x"]), 1);
    assert_eq!(strings(&mut c, &["SMEMBERS", "big"]), ["x"]);
}

const CLIENTS: usize = 8;
const PER_CLIENT: usize = 200;

#[test]
fn collection_updates_from_many_connections_lose_nothing() {
    let server = TestServer::start();
    thread::scope(|s| {
        for client in 0..CLIENTS {
            let server = &server;
            s.spawn(move || {
                let mut c = server.client();
                for i in 0..PER_CLIENT {
                    let member = format!("{client}:{i}");
                    let _: i64 = cmd(&["HINCRBY", "h", "n", "1"]).query(&mut c).unwrap();
                    let _: i64 = cmd(&["SADD", "s", &member]).query(&mut c).unwrap();
                    let _: i64 = cmd(&["RPUSH", "l", &member]).query(&mut c).unwrap();
                    let _: String = cmd(&["ZINCRBY", "z", "1", "m"]).query(&mut c).unwrap();
                    let _: i64 = cmd(&["ZADD", "z2", "1", &member]).query(&mut c).unwrap();
                }
            });
        }
    });
    let mut c = server.client();
    let total = (CLIENTS * PER_CLIENT) as i64;
    assert_eq!(
        cmd(&["HGET", "h", "n"]).query::<i64>(&mut c).unwrap(),
        total
    );
    assert_eq!(int(&mut c, &["SCARD", "s"]), total);
    assert_eq!(strings(&mut c, &["SMEMBERS", "s"]).len() as i64, total);
    assert_eq!(int(&mut c, &["LLEN", "l"]), total);
    assert_eq!(
        strings(&mut c, &["LRANGE", "l", "0", "-1"]).len() as i64,
        total
    );
    assert_eq!(
        cmd(&["ZSCORE", "z", "m"]).query::<i64>(&mut c).unwrap(),
        total
    );
    assert_eq!(int(&mut c, &["ZCARD", "z2"]), total);
    assert_eq!(
        strings(&mut c, &["ZRANGE", "z2", "0", "-1"]).len() as i64,
        total
    );
}

#[test]
fn watch_aborts_exec_after_a_write_to_a_watched_key() {
    let server = TestServer::start();
    let mut c = server.client();
    let mut other = server.client();
    let () = cmd(&["SET", "k", "1"]).query(&mut c).unwrap();
    let () = cmd(&["WATCH", "k"]).query(&mut c).unwrap();
    let () = cmd(&["SET", "k", "2"]).query(&mut other).unwrap();
    let () = cmd(&["MULTI"]).query(&mut c).unwrap();
    let _: String = cmd(&["SET", "k", "3"]).query(&mut c).unwrap();
    let aborted: Value = cmd(&["EXEC"]).query(&mut c).unwrap();
    assert_eq!(aborted, Value::Nil);
    assert_eq!(cmd(&["GET", "k"]).query::<String>(&mut c).unwrap(), "2");
    // Unmodified: EXEC runs; after EXEC nothing is watched.
    let () = cmd(&["WATCH", "k"]).query(&mut c).unwrap();
    let () = cmd(&["MULTI"]).query(&mut c).unwrap();
    let _: String = cmd(&["SET", "k", "3"]).query(&mut c).unwrap();
    let done: Vec<String> = cmd(&["EXEC"]).query(&mut c).unwrap();
    assert_eq!(done, ["OK"]);
    let () = cmd(&["SET", "k", "4"]).query(&mut other).unwrap();
    let () = cmd(&["MULTI"]).query(&mut c).unwrap();
    let _: String = cmd(&["GET", "k"]).query(&mut c).unwrap();
    let done: Vec<String> = cmd(&["EXEC"]).query(&mut c).unwrap();
    assert_eq!(done, ["4"]);
    // UNWATCH forgets; WATCH inside MULTI is refused.
    let () = cmd(&["WATCH", "k"]).query(&mut c).unwrap();
    let () = cmd(&["UNWATCH"]).query(&mut c).unwrap();
    let () = cmd(&["SET", "k", "5"]).query(&mut other).unwrap();
    let () = cmd(&["MULTI"]).query(&mut c).unwrap();
    assert_eq!(
        err_text(cmd(&["WATCH", "k"]).query::<Value>(&mut c)),
        "ERR WATCH inside MULTI is not allowed"
    );
    let done: Vec<Value> = cmd(&["EXEC"]).query(&mut c).unwrap();
    assert!(done.is_empty());
}
