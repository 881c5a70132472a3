//! Databases and keyspaces over the wire: SELECT onto keyspaces, per-database
//! DBSIZE, SCAN, FLUSHDB and INFO, FLUSHALL, MULTI across SELECT,
//! THICKET.DELRANGE, THICKET.KEYSPACE and THICKET.SELECT.

mod common;

use common::{cmd, TestServer};
use redis::{RedisResult, Value};
use thicket_server::ServerConfig;
use thicketdb::{Db, Options};

fn err_text<T: std::fmt::Debug>(r: RedisResult<T>) -> String {
    let e = r.expect_err("expected an error reply");
    format!("{} {}", e.code().unwrap_or(""), e.detail().unwrap_or(""))
        .trim()
        .to_string()
}

fn get(c: &mut redis::Connection, key: &str) -> Option<String> {
    cmd(&["GET", key]).query(c).unwrap()
}

fn ok(c: &mut redis::Connection, args: &[&str]) {
    assert_eq!(cmd(args).query::<String>(c).unwrap(), "OK", "{args:?}");
}

fn int(c: &mut redis::Connection, args: &[&str]) -> i64 {
    cmd(args).query(c).unwrap()
}

#[test]
fn select_switches_between_keyspaces_that_persist() {
    let server = TestServer::start();
    let mut c = server.client();
    ok(&mut c, &["SET", "k", "zero"]);
    ok(&mut c, &["SELECT", "3"]);
    assert_eq!(get(&mut c, "k"), None, "database 3 starts empty");
    assert_eq!(int(&mut c, &["DBSIZE"]), 0);
    ok(&mut c, &["SET", "k", "three"]);
    ok(&mut c, &["SET", "k2", "three"]);
    assert_eq!(get(&mut c, "k").as_deref(), Some("three"));
    assert_eq!(int(&mut c, &["DBSIZE"]), 2);
    let scan: (String, Vec<String>) = cmd(&["SCAN", "0"]).query(&mut c).unwrap();
    assert_eq!(scan, ("0".to_string(), vec!["k".into(), "k2".into()]));
    let keys: Vec<String> = cmd(&["KEYS", "*"]).query(&mut c).unwrap();
    assert_eq!(keys, ["k", "k2"]);
    let range: Vec<String> = cmd(&["THICKET.RANGE", "", ""]).query(&mut c).unwrap();
    assert_eq!(range, ["k", "three", "k2", "three"]);

    // `redis://addr/3` (redis-cli -n 3) lands in the same database.
    let mut other = server.client_in(3);
    assert_eq!(get(&mut other, "k").as_deref(), Some("three"));
    let mut zero = server.client();
    assert_eq!(get(&mut zero, "k").as_deref(), Some("zero"));
    assert_eq!(int(&mut zero, &["DBSIZE"]), 1);
    let info: String = cmd(&["INFO", "keyspace"]).query(&mut zero).unwrap();
    assert!(
        info.contains("db0:keys=1,expires=0,avg_ttl=0\r\n"),
        "{info}"
    );
    assert!(
        info.contains("db3:keys=2,expires=0,avg_ttl=0\r\n"),
        "{info}"
    );

    assert_eq!(
        err_text(cmd(&["SELECT", "16"]).query::<Value>(&mut c)),
        "ERR DB index is out of range"
    );
    assert_eq!(
        err_text(cmd(&["SELECT", "-1"]).query::<Value>(&mut c)),
        "ERR DB index is out of range"
    );
    assert_eq!(get(&mut c, "k").as_deref(), Some("three"), "still in 3");

    // The databases are the store's keyspaces `db<i>`, after a restart too.
    drop((c, other, zero));
    let dir = server.stop();
    {
        let db = Db::open(dir.path(), Options::default()).unwrap();
        assert_eq!(db.list_keyspaces(), ["default", "db3"]);
        let db3 = db.keyspace("db3").unwrap();
        assert_eq!(db3.get("k").unwrap().as_deref(), Some(&b"three"[..]));
        db.close().unwrap();
    }
    let server = TestServer::in_dir(dir, ServerConfig::new("127.0.0.1:0".parse().unwrap()));
    let mut c = server.client_in(3);
    assert_eq!(get(&mut c, "k2").as_deref(), Some("three"));
}

#[test]
fn flushdb_clears_one_database_and_flushall_every_keyspace() {
    let server = TestServer::start();
    let mut c = server.client();
    ok(&mut c, &["THICKET.KEYSPACE", "CREATE", "named"]);
    for db in ["0", "2", "5"] {
        ok(&mut c, &["SELECT", db]);
        ok(&mut c, &["MSET", "a", db, "b", db]);
    }
    ok(&mut c, &["THICKET.SELECT", "named"]);
    ok(&mut c, &["SET", "n", "x"]);
    ok(&mut c, &["SELECT", "2"]);
    ok(&mut c, &["FLUSHDB"]);
    assert_eq!(int(&mut c, &["DBSIZE"]), 0);
    ok(&mut c, &["SELECT", "5"]);
    assert_eq!(int(&mut c, &["DBSIZE"]), 2);
    ok(&mut c, &["SELECT", "0"]);
    assert_eq!(get(&mut c, "a").as_deref(), Some("0"));
    // Many keys: still one tombstone per keyspace.
    let many: Vec<String> = (0..3000).map(|i| format!("k{i:05}")).collect();
    let mut mset = vec!["MSET"];
    for key in &many {
        mset.extend([key.as_str(), "v"]);
    }
    ok(&mut c, &mset);
    let groups = write_groups(&mut c);
    ok(&mut c, &["FLUSHALL"]);
    assert_eq!(
        write_groups(&mut c),
        groups + 1,
        "one atomic write for every database"
    );
    for db in ["0", "5"] {
        ok(&mut c, &["SELECT", db]);
        assert_eq!(int(&mut c, &["DBSIZE"]), 0, "database {db}");
    }
    ok(&mut c, &["THICKET.SELECT", "named"]);
    assert_eq!(get(&mut c, "n"), None);
    ok(&mut c, &["SET", "n", "again"]);
    assert_eq!(get(&mut c, "n").as_deref(), Some("again"));
}

#[test]
fn flushdb_and_delrange_in_a_chunked_store() {
    let dir = tempfile::tempdir().unwrap();
    let options = thicketdb::Profile::YoDb.options();
    let config = ServerConfig::new("127.0.0.1:0".parse().unwrap());
    let server = TestServer::with_options(dir, options, config);
    let mut c = server.client();
    for i in 0..2500 {
        ok(&mut c, &["SET", &format!("k{i}"), "v"]);
    }
    assert_eq!(int(&mut c, &["THICKET.DELRANGE", "k1", "k2"]), 1);
    assert_eq!(get(&mut c, "k1999"), None);
    assert_eq!(get(&mut c, "k2000"), Some("v".into()));
    ok(&mut c, &["FLUSHDB"]);
    assert_eq!(int(&mut c, &["DBSIZE"]), 0);
    ok(&mut c, &["SET", "k", "v"]);
    ok(&mut c, &["FLUSHALL"]);
    assert_eq!(int(&mut c, &["DBSIZE"]), 0);
}

/// The engine's `write_groups` counter (THICKET.STATS): nothing else writes
/// in these tests, so each write command adds one.
fn write_groups(c: &mut redis::Connection) -> u64 {
    let stats: Vec<String> = cmd(&["THICKET.STATS"]).query(c).unwrap();
    let i = stats.iter().position(|s| s == "write_groups").unwrap();
    stats[i + 1].parse().unwrap()
}

#[test]
fn multi_across_select_is_one_batch() {
    let server = TestServer::start();
    let mut c = server.client();
    ok(&mut c, &["SET", "x", "old"]);
    let replies: Vec<Value> = redis::pipe()
        .cmd("MULTI")
        .cmd("SET")
        .arg("x")
        .arg("0")
        .cmd("SELECT")
        .arg("7")
        .cmd("SET")
        .arg("x")
        .arg("7")
        .cmd("GET")
        .arg("x")
        .cmd("EXEC")
        .query(&mut c)
        .unwrap();
    let Value::Array(exec) = replies.last().unwrap() else {
        panic!("{replies:?}");
    };
    assert_eq!(exec[3], Value::BulkString(b"7".to_vec()), "{exec:?}");
    assert_eq!(get(&mut c, "x").as_deref(), Some("7"), "EXEC left it in 7");
    let mut zero = server.client();
    assert_eq!(get(&mut zero, "x").as_deref(), Some("0"));
    // One engine write (one write group) for both databases.
    let groups = write_groups(&mut zero);
    let _: Value = redis::pipe()
        .cmd("MULTI")
        .cmd("SET")
        .arg("y")
        .arg("0")
        .cmd("SELECT")
        .arg("7")
        .cmd("SET")
        .arg("y")
        .arg("7")
        .cmd("EXEC")
        .query(&mut zero)
        .unwrap();
    assert_eq!(write_groups(&mut c), groups + 1);
}

#[test]
fn delrange_deletes_a_range_of_the_selected_database() {
    let server = TestServer::start();
    let mut c = server.client();
    for db in ["0", "4"] {
        ok(&mut c, &["SELECT", db]);
        ok(&mut c, &["MSET", "a", "1", "b", "2", "c", "3", "d", "4"]);
    }
    assert_eq!(int(&mut c, &["THICKET.DELRANGE", "b", "d"]), 1);
    let keys: Vec<String> = cmd(&["KEYS", "*"]).query(&mut c).unwrap();
    assert_eq!(keys, ["a", "d"]);
    assert_eq!(int(&mut c, &["THICKET.DELRANGE", "z", "a"]), 0);
    assert_eq!(int(&mut c, &["DBSIZE"]), 2);
    assert_eq!(
        err_text(cmd(&["THICKET.DELRANGE", "a", ""]).query::<Value>(&mut c)),
        "ERR thicket: THICKET.DELRANGE needs a non-empty end key"
    );
    assert!(cmd(&["THICKET.DELRANGE", "a"])
        .query::<Value>(&mut c)
        .is_err());
    ok(&mut c, &["SELECT", "0"]);
    assert_eq!(int(&mut c, &["DBSIZE"]), 4, "database 0 untouched");

    // Inside MULTI: later reads see the range gone, with the transaction's
    // own earlier writes in it; later writes win.
    let replies: Vec<Value> = redis::pipe()
        .cmd("MULTI")
        .cmd("SET")
        .arg("a")
        .arg("earlier")
        .cmd("THICKET.DELRANGE")
        .arg("a")
        .arg("c")
        .cmd("GET")
        .arg("a")
        .cmd("SET")
        .arg("b")
        .arg("new")
        .cmd("GET")
        .arg("b")
        .cmd("GET")
        .arg("c")
        .cmd("EXEC")
        .query(&mut c)
        .unwrap();
    let Value::Array(exec) = replies.last().unwrap() else {
        panic!("{replies:?}");
    };
    assert_eq!(exec[1], Value::Int(1));
    assert_eq!(exec[2], Value::Nil, "the range covers the earlier SET too");
    assert_eq!(exec[4], Value::BulkString(b"new".to_vec()));
    assert_eq!(exec[5], Value::BulkString(b"3".to_vec()));
    let keys: Vec<String> = cmd(&["KEYS", "*"]).query(&mut c).unwrap();
    assert_eq!(keys, ["b", "c", "d"]);
}

#[test]
fn named_keyspaces_are_created_selected_and_dropped() {
    let server = TestServer::start();
    let mut c = server.client();
    ok(
        &mut c,
        &["THICKET.KEYSPACE", "CREATE", "users", "PROFILE", "sifr"],
    );
    ok(
        &mut c,
        &[
            "THICKET.KEYSPACE",
            "CREATE",
            "logs",
            "OPTION",
            "compression",
            "none",
        ],
    );
    let list: Vec<String> = cmd(&["THICKET.KEYSPACE", "LIST"]).query(&mut c).unwrap();
    assert_eq!(list, ["default", "users", "logs"]);
    assert!(
        err_text(cmd(&["THICKET.KEYSPACE", "CREATE", "users"]).query::<Value>(&mut c))
            .contains("already exists")
    );
    assert!(err_text(
        cmd(&["THICKET.KEYSPACE", "CREATE", "x", "OPTION", "nonsense", "1"]).query::<Value>(&mut c)
    )
    .starts_with("ERR thicket:"));
    assert_eq!(
        err_text(cmd(&["THICKET.KEYSPACE", "CREATE", "x", "PROFILE"]).query::<Value>(&mut c)),
        "ERR syntax error"
    );
    for bad in [
        &["THICKET.KEYSPACE", "CREATE"][..],
        &["THICKET.KEYSPACE", "DROP"],
        &["THICKET.KEYSPACE", "LIST", "x"],
        &["THICKET.KEYSPACE", "RENAME", "a"],
    ] {
        assert_eq!(
            err_text(cmd(bad).query::<Value>(&mut c)),
            "ERR syntax error",
            "{bad:?}"
        );
    }
    ok(&mut c, &["THICKET.SELECT", "users"]);
    ok(&mut c, &["SET", "alice", "admin"]);
    let mut zero = server.client();
    assert_eq!(get(&mut zero, "alice"), None);
    assert!(
        err_text(cmd(&["THICKET.SELECT", "nope"]).query::<Value>(&mut zero))
            .contains("no such keyspace")
    );
    assert_eq!(
        get(&mut zero, "alice"),
        None,
        "a failed select keeps the database"
    );
    ok(&mut zero, &["THICKET.KEYSPACE", "DROP", "users"]);
    assert!(err_text(cmd(&["GET", "alice"]).query::<Value>(&mut c)).contains("no such keyspace"));
    assert!(err_text(cmd(&["SET", "a", "b"]).query::<Value>(&mut c)).contains("no such keyspace"));
    assert!(
        err_text(cmd(&["THICKET.KEYSPACE", "DROP", "default"]).query::<Value>(&mut c))
            .contains("cannot be dropped")
    );
    ok(&mut c, &["SELECT", "0"]);
    ok(&mut c, &["SET", "after", "drop"]);
    let list: Vec<String> = cmd(&["THICKET.KEYSPACE", "LIST"]).query(&mut c).unwrap();
    assert_eq!(list, ["default", "logs"]);
    // A dropped numbered database comes back, empty, with its next write.
    ok(&mut c, &["SELECT", "2"]);
    ok(&mut c, &["SET", "old", "x"]);
    ok(&mut zero, &["THICKET.KEYSPACE", "DROP", "db2"]);
    assert_eq!(get(&mut c, "old"), None);
    ok(&mut c, &["SET", "new", "y"]);
    assert_eq!(int(&mut c, &["DBSIZE"]), 1);
}

#[test]
fn databases_flag_bounds_select() {
    let config = ServerConfig {
        databases: 2,
        ..ServerConfig::new("127.0.0.1:0".parse().unwrap())
    };
    let server = TestServer::in_dir(tempfile::tempdir().unwrap(), config);
    let mut c = server.client();
    let databases: Vec<String> = cmd(&["CONFIG", "GET", "databases"]).query(&mut c).unwrap();
    assert_eq!(databases, ["databases", "2"]);
    ok(&mut c, &["SELECT", "1"]);
    assert_eq!(
        err_text(cmd(&["SELECT", "2"]).query::<Value>(&mut c)),
        "ERR DB index is out of range"
    );
}
