//! Command semantics and reply types through a Rust Redis client (the
//! `redis` crate) against an in-process server.

mod common;

use common::{cmd, exchange, TestServer};
use redis::{Commands, RedisResult, Value};

fn err_text<T: std::fmt::Debug>(r: RedisResult<T>) -> String {
    let e = r.expect_err("expected an error reply");
    format!("{} {}", e.code().unwrap_or(""), e.detail().unwrap_or(""))
        .trim()
        .to_string()
}

#[test]
fn string_commands_follow_redis() {
    let server = TestServer::start();
    let mut c = server.client();
    let () = c.set("k", "v").unwrap();
    assert_eq!(
        c.get::<_, Option<String>>("k").unwrap().as_deref(),
        Some("v")
    );
    assert_eq!(
        cmd(&["SET", "k", "w", "NX"])
            .query::<Option<String>>(&mut c)
            .unwrap(),
        None
    );
    assert_eq!(
        cmd(&["SET", "k", "w", "XX", "GET"])
            .query::<Option<String>>(&mut c)
            .unwrap()
            .as_deref(),
        Some("v")
    );
    assert_eq!(
        cmd(&["SET", "absent", "w", "XX"])
            .query::<Option<String>>(&mut c)
            .unwrap(),
        None
    );
    assert_eq!(
        err_text(cmd(&["SET", "k", "w", "NX", "XX"]).query::<Value>(&mut c)),
        "ERR syntax error"
    );
    assert_eq!(
        err_text(cmd(&["SET", "k", "w", "EX", "0"]).query::<Value>(&mut c)),
        "ERR invalid expire time in 'set' command"
    );
    assert_eq!(
        err_text(cmd(&["SET", "k", "w", "EX", "10", "KEEPTTL"]).query::<Value>(&mut c)),
        "ERR syntax error"
    );
    assert_eq!(cmd(&["TTL", "k"]).query::<i64>(&mut c).unwrap(), -1);
    assert_eq!(cmd(&["TTL", "nope"]).query::<i64>(&mut c).unwrap(), -2);
    assert_eq!(cmd(&["SETNX", "k", "x"]).query::<i64>(&mut c).unwrap(), 0);
    assert_eq!(
        cmd(&["GETSET", "k", "y"]).query::<String>(&mut c).unwrap(),
        "w"
    );
    assert_eq!(cmd(&["GETDEL", "k"]).query::<String>(&mut c).unwrap(), "y");
    assert_eq!(
        cmd(&["GETDEL", "k"])
            .query::<Option<String>>(&mut c)
            .unwrap(),
        None
    );

    assert_eq!(cmd(&["INCR", "n"]).query::<i64>(&mut c).unwrap(), 1);
    assert_eq!(
        cmd(&["INCRBY", "n", "10"]).query::<i64>(&mut c).unwrap(),
        11
    );
    assert_eq!(
        cmd(&["DECRBY", "n", "20"]).query::<i64>(&mut c).unwrap(),
        -9
    );
    assert_eq!(cmd(&["DECR", "n"]).query::<i64>(&mut c).unwrap(), -10);
    assert_eq!(
        cmd(&["INCRBYFLOAT", "f", "10.5"])
            .query::<String>(&mut c)
            .unwrap(),
        "10.5"
    );
    assert_eq!(
        cmd(&["INCRBYFLOAT", "f", "-0.5"])
            .query::<String>(&mut c)
            .unwrap(),
        "10"
    );
    let () = c.set("s", "abc").unwrap();
    assert_eq!(
        err_text(cmd(&["INCR", "s"]).query::<Value>(&mut c)),
        "ERR value is not an integer or out of range"
    );
    assert_eq!(
        err_text(cmd(&["INCRBYFLOAT", "s", "1"]).query::<Value>(&mut c)),
        "ERR value is not a valid float"
    );
    let () = c.set("max", i64::MAX).unwrap();
    assert_eq!(
        err_text(cmd(&["INCR", "max"]).query::<Value>(&mut c)),
        "ERR increment or decrement would overflow"
    );

    assert_eq!(
        cmd(&["APPEND", "s", "def"]).query::<i64>(&mut c).unwrap(),
        6
    );
    assert_eq!(
        cmd(&["SETRANGE", "s", "8", "xy"])
            .query::<i64>(&mut c)
            .unwrap(),
        10
    );
    assert_eq!(c.get::<_, Vec<u8>>("s").unwrap(), b"abcdef\0\0xy");
    assert_eq!(
        err_text(cmd(&["SETRANGE", "s", "-1", "x"]).query::<Value>(&mut c)),
        "ERR offset is out of range"
    );
    assert_eq!(cmd(&["STRLEN", "s"]).query::<i64>(&mut c).unwrap(), 10);
    assert_eq!(
        cmd(&["GETRANGE", "s", "1", "-8"])
            .query::<String>(&mut c)
            .unwrap(),
        "bc"
    );

    assert_eq!(
        cmd(&["MSET", "a", "1", "b", "2"])
            .query::<String>(&mut c)
            .unwrap(),
        "OK"
    );
    assert_eq!(
        err_text(cmd(&["MSET", "a", "1", "b"]).query::<Value>(&mut c)),
        "ERR wrong number of arguments for 'mset' command"
    );
    assert_eq!(
        cmd(&["MSETNX", "a", "9", "z", "9"])
            .query::<i64>(&mut c)
            .unwrap(),
        0
    );
    assert_eq!(
        cmd(&["MSETNX", "y", "9", "z", "9"])
            .query::<i64>(&mut c)
            .unwrap(),
        1
    );
    assert_eq!(
        cmd(&["MGET", "a", "nope", "z"])
            .query::<Vec<Option<String>>>(&mut c)
            .unwrap(),
        [Some("1".to_string()), None, Some("9".to_string())]
    );
    assert_eq!(
        cmd(&["EXISTS", "a", "a", "nope"])
            .query::<i64>(&mut c)
            .unwrap(),
        2
    );
    assert_eq!(
        cmd(&["DEL", "a", "a", "nope", "b"])
            .query::<i64>(&mut c)
            .unwrap(),
        2
    );
    assert_eq!(cmd(&["UNLINK", "y"]).query::<i64>(&mut c).unwrap(), 1);
    assert_eq!(
        cmd(&["TYPE", "z"]).query::<String>(&mut c).unwrap(),
        "string"
    );
    assert_eq!(cmd(&["TYPE", "a"]).query::<String>(&mut c).unwrap(), "none");

    assert_eq!(
        err_text(cmd(&["GET"]).query::<Value>(&mut c)),
        "ERR wrong number of arguments for 'get' command"
    );
    assert_eq!(
        err_text(cmd(&["NOSUCH", "x"]).query::<Value>(&mut c)),
        "ERR unknown command 'NOSUCH', with args beginning with: 'x'"
    );
}

#[test]
fn key_space_walks_are_ordered_and_complete() {
    let server = TestServer::start();
    let mut c = server.client();
    let mut expected = Vec::new();
    for i in 0..500 {
        let key = format!("user:{i:04}");
        let () = c.set(&key, i).unwrap();
        expected.push(key);
    }
    let () = c.set("other", 1).unwrap();
    assert_eq!(cmd(&["DBSIZE"]).query::<i64>(&mut c).unwrap(), 501);

    let mut cursor = "0".to_string();
    let mut seen = Vec::new();
    loop {
        let (next, keys): (String, Vec<String>) =
            cmd(&["SCAN", &cursor, "MATCH", "user:*", "COUNT", "7"])
                .query(&mut c)
                .unwrap();
        seen.extend(keys);
        if next == "0" {
            break;
        }
        cursor = next;
    }
    assert_eq!(
        seen, expected,
        "SCAN visits every matching key once, in order"
    );
    assert_eq!(
        err_text(cmd(&["SCAN", "12345"]).query::<Value>(&mut c)),
        "ERR invalid cursor"
    );

    let keys: Vec<String> = cmd(&["KEYS", "user:000?"]).query(&mut c).unwrap();
    assert_eq!(keys, expected[..10]);

    let range: Vec<String> = cmd(&["THICKET.RANGE", "user:0010", "user:0013"])
        .query(&mut c)
        .unwrap();
    assert_eq!(
        range,
        ["user:0010", "10", "user:0011", "11", "user:0012", "12"]
    );
    let range: Vec<String> = cmd(&["THICKET.RANGE", "user:", "", "LIMIT", "2", "REV"])
        .query(&mut c)
        .unwrap();
    assert_eq!(range, ["user:0499", "499", "user:0498", "498"]);

    assert_eq!(cmd(&["FLUSHDB"]).query::<String>(&mut c).unwrap(), "OK");
    assert_eq!(cmd(&["DBSIZE"]).query::<i64>(&mut c).unwrap(), 0);
}

#[test]
fn randomkey_draws_every_key_of_a_small_database() {
    let server = TestServer::start();
    let mut c = server.client();
    assert_eq!(
        cmd(&["RANDOMKEY"]).query::<Option<String>>(&mut c).unwrap(),
        None
    );
    // Keys with a wide gap before one of them: a pick of "the next key after
    // a random point" would give `foo` only 4 draws in 256.
    let () = c.set("foo", "x").unwrap();
    let () = c.set("bar", "y").unwrap();
    let mut foo = 0;
    for _ in 0..200 {
        match cmd(&["RANDOMKEY"])
            .query::<String>(&mut c)
            .unwrap()
            .as_str()
        {
            "foo" => foo += 1,
            "bar" => {}
            other => panic!("RANDOMKEY returned {other:?}"),
        }
    }
    // Uniform: 100 expected; 40..160 misses with probability below 1e-17.
    assert!((40..160).contains(&foo), "foo drawn {foo} times of 200");
}

/// `field` of INFO's output, as a number.
fn info_field(c: &mut redis::Connection, field: &str) -> u64 {
    let info: String = cmd(&["INFO", "stats"]).query(c).unwrap();
    info.lines()
        .find_map(|line| line.strip_prefix(&format!("{field}:")))
        .unwrap_or_else(|| panic!("INFO has no {field}"))
        .trim()
        .parse()
        .unwrap()
}

#[test]
fn pipelined_commands_commit_as_one_batch_and_a_failed_one_writes_nothing() {
    let server = TestServer::start();
    let mut c = server.client();
    let () = c.set("text", "abc").unwrap();
    // One write: the server reads the run together and batches it; each
    // command sees the writes of those before it.
    let mut s = server.raw();
    let request = b"SET n 1\r\nINCR n\r\nGET n\r\nAPPEND text d\r\n";
    let expected = b"+OK\r\n:2\r\n$1\r\n2\r\n:4\r\n";
    assert_eq!(exchange(&mut s, request, expected.len()), expected);
    assert_eq!(info_field(&mut c, "pipeline_batches"), 1);
    assert_eq!(info_field(&mut c, "pipeline_batched_commands"), 4);

    // A failing command in the run: the replies are those of running the
    // commands one by one, and only the failed command wrote nothing.
    let request = b"INCR n\r\nINCR text\r\nSET after x\r\nGET n\r\n";
    let expected: &[u8] =
        b":3\r\n-ERR value is not an integer or out of range\r\n+OK\r\n$1\r\n3\r\n";
    assert_eq!(exchange(&mut s, request, expected.len()), expected);
    assert_eq!(info_field(&mut c, "pipeline_batch_retries"), 1);
    assert_eq!(
        c.get::<_, Option<String>>("text").unwrap().as_deref(),
        Some("abcd")
    );
    assert_eq!(
        c.get::<_, Option<String>>("after").unwrap().as_deref(),
        Some("x")
    );
    assert_eq!(c.get::<_, i64>("n").unwrap(), 3);
}

#[test]
fn transactions_commit_as_one_batch() {
    let server = TestServer::start();
    let mut c = server.client();
    let (a, b, n): (i64, String, Vec<Option<String>>) = redis::pipe()
        .atomic()
        .cmd("INCR")
        .arg("t")
        .cmd("SET")
        .arg("u")
        .arg("x")
        .ignore()
        .cmd("APPEND")
        .arg("u")
        .arg("y")
        .ignore()
        .cmd("GET")
        .arg("u")
        .cmd("MGET")
        .arg("t")
        .arg("u")
        .query(&mut c)
        .unwrap();
    assert_eq!((a, b.as_str()), (1, "xy"));
    assert_eq!(n, [Some("1".into()), Some("xy".into())]);

    assert_eq!(cmd(&["MULTI"]).query::<String>(&mut c).unwrap(), "OK");
    assert_eq!(
        cmd(&["SET", "v", "1"]).query::<String>(&mut c).unwrap(),
        "QUEUED"
    );
    assert!(cmd(&["NOSUCH"]).query::<Value>(&mut c).is_err());
    assert_eq!(
        err_text(cmd(&["EXEC"]).query::<Value>(&mut c)),
        "EXECABORT Transaction discarded because of previous errors."
    );
    assert_eq!(c.get::<_, Option<String>>("v").unwrap(), None);
    assert_eq!(cmd(&["MULTI"]).query::<String>(&mut c).unwrap(), "OK");
    assert_eq!(
        cmd(&["SET", "v", "1"]).query::<String>(&mut c).unwrap(),
        "QUEUED"
    );
    assert_eq!(cmd(&["DISCARD"]).query::<String>(&mut c).unwrap(), "OK");
    assert_eq!(c.get::<_, Option<String>>("v").unwrap(), None);
    assert_eq!(
        err_text(cmd(&["EXEC"]).query::<Value>(&mut c)),
        "ERR EXEC without MULTI"
    );
}

#[test]
fn connection_and_server_commands() {
    let server = TestServer::start();
    let mut c = server.client();
    assert_eq!(cmd(&["PING"]).query::<String>(&mut c).unwrap(), "PONG");
    assert_eq!(cmd(&["ECHO", "hi"]).query::<String>(&mut c).unwrap(), "hi");
    assert_eq!(cmd(&["SELECT", "0"]).query::<String>(&mut c).unwrap(), "OK");
    assert_eq!(
        err_text(cmd(&["SELECT", "16"]).query::<Value>(&mut c)),
        "ERR DB index is out of range"
    );
    assert_eq!(
        cmd(&["CLIENT", "SETNAME", "tester"])
            .query::<String>(&mut c)
            .unwrap(),
        "OK"
    );
    assert_eq!(
        cmd(&["CLIENT", "GETNAME"]).query::<String>(&mut c).unwrap(),
        "tester"
    );
    assert!(cmd(&["CLIENT", "ID"]).query::<i64>(&mut c).unwrap() > 0);
    let config: Vec<String> = cmd(&["CONFIG", "GET", "append*"]).query(&mut c).unwrap();
    assert_eq!(config, ["appendonly", "yes", "appendfsync", "no"]);
    assert_eq!(
        cmd(&["CONFIG", "SET", "appendfsync", "always"])
            .query::<String>(&mut c)
            .unwrap(),
        "OK"
    );
    let config: Vec<String> = cmd(&["CONFIG", "GET", "appendfsync"])
        .query(&mut c)
        .unwrap();
    assert_eq!(config, ["appendfsync", "always"]);
    assert!(cmd(&["CONFIG", "SET", "appendfsync", "sometimes"])
        .query::<Value>(&mut c)
        .is_err());
    let count: i64 = cmd(&["COMMAND", "COUNT"]).query(&mut c).unwrap();
    let all: Vec<Value> = cmd(&["COMMAND"]).query(&mut c).unwrap();
    assert_eq!(all.len() as i64, count);
    let info: Vec<Value> = cmd(&["COMMAND", "INFO", "get", "nosuch"])
        .query(&mut c)
        .unwrap();
    assert_eq!(info.len(), 2);
    assert_eq!(info[1], Value::Nil);
    let info: String = cmd(&["INFO"]).query(&mut c).unwrap();
    assert!(info.contains("# Thicket\r\nwrite_amplification:"), "{info}");
    assert!(info.contains("redis_version:"));
    let stats: Vec<String> = cmd(&["THICKET.STATS"]).query(&mut c).unwrap();
    assert_eq!(stats[0], "write_amplification");
}

#[test]
fn resp3_after_hello_3() {
    let server = TestServer::start();
    let mut s = server.raw();
    let reply = exchange(&mut s, b"GET missing\r\n", 5);
    assert_eq!(reply, b"$-1\r\n");
    let hello = exchange(&mut s, b"HELLO 3\r\n", 1);
    assert!(
        hello.starts_with(b"%7\r\n"),
        "{}",
        String::from_utf8_lossy(&hello)
    );
    // HELLO's reply may still be arriving; PING marks the end.
    let mut rest = hello;
    while !rest.ends_with(b"+PONG\r\n") {
        rest = exchange(&mut s, b"PING\r\n", 1);
    }
    assert_eq!(exchange(&mut s, b"GET missing\r\n", 3), b"_\r\n");
    let expected: &[u8] = b"%1\r\n$9\r\ndatabases\r\n$2\r\n16\r\n";
    assert_eq!(
        exchange(&mut s, b"CONFIG GET databases\r\n", expected.len()),
        expected
    );
    let expected: &[u8] = b"-NOPROTO unsupported protocol version\r\n";
    assert_eq!(exchange(&mut s, b"HELLO 4\r\n", expected.len()), expected);
}
