//! Tests against real Redis tools, run by `.ci/server.sh` after it installs
//! them: replies compared with `redis-server` through `redis-cli` and the
//! `redis` crate, `redis-benchmark` runs and an RSS soak, the SIGKILL crash
//! loop and scale-out behind twemproxy (`nutcracker`). They fail when a
//! tool is missing. The `thicket` binary comes from `THICKET_BIN` or
//! `target/release/thicket`.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use common::cmd;
use redis::{Commands, Value};

const IGNORE_REASON: &str = "needs redis-server, redis-tools and nutcracker; run by .ci/server.sh";

fn tool(name: &str) -> PathBuf {
    let found = std::env::var_os("PATH")
        .and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|p| p.join(name))
                .find(|p| p.is_file())
        })
        .or_else(|| {
            ["/usr/sbin", "/sbin"]
                .iter()
                .map(|d| Path::new(d).join(name))
                .find(|p| p.is_file())
        });
    found.unwrap_or_else(|| panic!("{name} not found: {IGNORE_REASON}"))
}

fn thicket_bin() -> PathBuf {
    let path = std::env::var_os("THICKET_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/release/thicket")
        });
    assert!(path.is_file(), "thicket binary missing at {}: build it (cargo build --release -p thicket-cli) or set THICKET_BIN", path.display());
    path
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn connect(addr: SocketAddr) -> redis::Connection {
    let client = redis::Client::open(format!("redis://{addr}/")).unwrap();
    for _ in 0..200 {
        if let Ok(c) = client.get_connection() {
            return c;
        }
        thread::sleep(Duration::from_millis(25));
    }
    panic!("cannot connect to {addr}");
}

/// A `thicket serve` child process, SIGKILLed on drop.
struct Thicket {
    child: Child,
    addr: SocketAddr,
}

impl Thicket {
    fn start(db: &Path, listen: SocketAddr, extra: &[&str]) -> Thicket {
        let mut child = Command::new(thicket_bin())
            .arg("serve")
            .arg("--db")
            .arg(db)
            .arg("--listen")
            .arg(listen.to_string())
            .args(extra)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let addr = line
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
            .parse()
            .unwrap();
        Thicket { child, addr }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    fn terminate(mut self) -> std::process::ExitStatus {
        let pid = rustix::process::Pid::from_raw(self.child.id() as i32).unwrap();
        rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
        self.child.wait().unwrap()
    }
}

impl Drop for Thicket {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A `redis-server` child without persistence, killed on drop.
struct RedisServer {
    child: Child,
    addr: SocketAddr,
}

impl RedisServer {
    fn start(extra: &[&str]) -> RedisServer {
        let port = free_port();
        let dir = tempfile::tempdir().unwrap();
        let child = Command::new(tool("redis-server"))
            .args([
                "--port",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .arg("--dir")
            .arg(dir.keep())
            .args(extra)
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let server = RedisServer {
            child,
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
        };
        connect(server.addr);
        server
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn script() -> Vec<&'static str> {
    include_str!("data/compat.redis")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .collect()
}

fn redis_cli(addr: SocketAddr, input: &str) -> String {
    let mut child = Command::new(tool("redis-cli"))
        .args(["-h", "127.0.0.1", "-p", &addr.port().to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Splits a script line as redis-cli does for the simple quoting used.
fn words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut rest = line.trim();
    while !rest.is_empty() {
        if let Some(quoted) = rest.strip_prefix('"') {
            let end = quoted.find('"').unwrap();
            words.push(quoted[..end].to_string());
            rest = quoted[end + 1..].trim_start();
        } else {
            let end = rest.find(' ').unwrap_or(rest.len());
            words.push(rest[..end].to_string());
            rest = rest[end..].trim_start();
        }
    }
    words
}

fn client_replies(addr: SocketAddr) -> Vec<String> {
    let mut c = connect(addr);
    let _: Value = cmd(&["FLUSHALL"]).query(&mut c).unwrap();
    script()
        .iter()
        .map(|line| {
            let words = words(line);
            let mut command = redis::cmd(&words[0]);
            for w in &words[1..] {
                command.arg(w);
            }
            match command.query::<Value>(&mut c) {
                Ok(v) => format!("{line} => {v:?}"),
                Err(e) => format!("{line} => error {:?} {:?}", e.code(), e.detail()),
            }
        })
        .collect()
}

#[test]
#[ignore = "needs redis-server, redis-tools and nutcracker; run by .ci/server.sh"]
fn replies_match_redis_server_through_redis_cli_and_the_redis_crate() {
    let redis = RedisServer::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let thicket = Thicket::start(dir.path(), "127.0.0.1:0".parse().unwrap(), &[]);
    let input = format!("FLUSHALL\n{}\n", script().join("\n"));
    let expected = redis_cli(redis.addr, &input);
    let actual = redis_cli(thicket.addr, &input);
    for (i, (e, a)) in expected.lines().zip(actual.lines()).enumerate() {
        assert_eq!(a, e, "redis-cli output line {} differs", i + 1);
    }
    assert_eq!(actual.lines().count(), expected.lines().count());
    assert_eq!(client_replies(thicket.addr), client_replies(redis.addr));
}

/// `redis-cli -n N CMD...` and its output.
fn redis_cli_in(addr: SocketAddr, database: &str, args: &[&str]) -> String {
    let out = Command::new(tool("redis-cli"))
        .args([
            "-h",
            "127.0.0.1",
            "-p",
            &addr.port().to_string(),
            "-n",
            database,
        ])
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
#[ignore = "needs redis-server, redis-tools and nutcracker; run by .ci/server.sh"]
fn redis_cli_dash_n_selects_a_database_as_on_redis_server() {
    let redis = RedisServer::start(&["--databases", "4"]);
    let dir = tempfile::tempdir().unwrap();
    let thicket = Thicket::start(
        dir.path(),
        "127.0.0.1:0".parse().unwrap(),
        &["--databases", "4"],
    );
    let steps: &[(&str, &[&str])] = &[
        ("0", &["FLUSHALL"]),
        ("3", &["SET", "k", "three"]),
        ("0", &["SET", "k", "zero"]),
        ("3", &["GET", "k"]),
        ("0", &["GET", "k"]),
        ("2", &["GET", "k"]),
        ("3", &["DBSIZE"]),
        ("3", &["FLUSHDB"]),
        ("3", &["DBSIZE"]),
        ("0", &["DBSIZE"]),
        ("0", &["CONFIG", "GET", "databases"]),
    ];
    for (database, args) in steps {
        let expected = redis_cli_in(redis.addr, database, args);
        let actual = redis_cli_in(thicket.addr, database, args);
        assert_eq!(actual, expected, "redis-cli -n {database} {args:?}");
    }
    // redis-cli refuses -n 4 when SELECT 4 fails, on both.
    let refused = |addr: SocketAddr| {
        Command::new(tool("redis-cli"))
            .args(["-p", &addr.port().to_string(), "-n", "4", "PING"])
            .output()
            .unwrap()
    };
    assert_eq!(refused(thicket.addr).stdout, refused(redis.addr).stdout);
}

fn benchmark(addr: SocketAddr, args: &[&str]) -> String {
    let out = Command::new(tool("redis-benchmark"))
        .args(["-h", "127.0.0.1", "-p", &addr.port().to_string(), "--csv"])
        .args(args)
        .stderr(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "redis-benchmark {args:?} failed");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

#[test]
#[ignore = "needs redis-server, redis-tools and nutcracker; run by .ci/server.sh"]
fn redis_benchmark_runs_and_memory_stays_flat() {
    let dir = tempfile::tempdir().unwrap();
    let server = Thicket::start(
        dir.path(),
        "127.0.0.1:0".parse().unwrap(),
        &[
            "--option",
            "write_buffer_size=4194304",
            "--option",
            "block_cache_size=8388608",
        ],
    );
    let n = 20_000;
    for pipeline in ["1", "16"] {
        let csv = benchmark(
            server.addr,
            &[
                "-t",
                "set,get,incr,mset",
                "-n",
                &n.to_string(),
                "-c",
                "50",
                "-P",
                pipeline,
            ],
        );
        for test in ["\"SET\"", "\"GET\"", "\"INCR\"", "\"MSET (10 keys)\""] {
            assert!(csv.contains(test), "{test} missing from {csv}");
        }
    }
    // Every INCR of both runs went to the one key and none was lost.
    let mut c = connect(server.addr);
    assert_eq!(c.get::<_, i64>("counter:__rand_int__").unwrap(), 2 * n);

    // Soak: bounded rounds over a bounded key space; after warming up
    // (memtable and block cache filled), RSS must stay flat.
    let round = |_| {
        benchmark(
            server.addr,
            &[
                "-t", "set,get", "-n", "100000", "-c", "20", "-P", "8", "-r", "20000", "-d", "100",
            ],
        )
    };
    (0..3).for_each(|i| drop(round(i)));
    let warm = rss_kib(server.pid());
    (0..6).for_each(|i| drop(round(i)));
    let end = rss_kib(server.pid());
    eprintln!("soak RSS: {warm} KiB after warm-up, {end} KiB after 6 more rounds");
    assert!(
        end <= warm + warm / 4 + 16 * 1024,
        "RSS grew from {warm} KiB to {end} KiB"
    );
    assert!(server.terminate().success());
}

/// One crash cycle's writer: `SET ack:i i`, `i` into a hash, a set, a
/// sorted set and a list, `SET exp:i i EX ...`, then `INCR counter`,
/// counting what was acknowledged, until the server dies.
fn write_until_killed(addr: SocketAddr, first: u64, acked: &AtomicU64, incrs: &AtomicU64) {
    let mut c = connect(addr);
    let mut i = first;
    loop {
        let n = i.to_string();
        let exp = format!("exp:{i}");
        let writes: [&[&str]; 5] = [
            &["HSET", "hash", &n, &n],
            &["SADD", "set", &n],
            &["ZADD", "zset", &n, &n],
            &["RPUSH", "list", &n],
            &["SET", &exp, &n, "EX", "100000"],
        ];
        if c.set::<_, _, ()>(format!("ack:{i}"), i).is_err()
            || writes.iter().any(|w| {
                redis::cmd(w[0])
                    .arg(&w[1..])
                    .query::<redis::Value>(&mut c)
                    .is_err()
            })
        {
            return;
        }
        acked.store(i + 1, Ordering::SeqCst);
        if c.incr::<_, _, i64>("counter", 1).is_err() {
            return;
        }
        incrs.fetch_add(1, Ordering::SeqCst);
        i += 1;
    }
}

/// Every acknowledged `i` is in the hash, set, sorted set and list, and
/// its expiring string is there with its TTL.
fn check_types(c: &mut redis::Connection, written: u64, cycle: usize) {
    let hash: std::collections::HashMap<u64, u64> =
        redis::cmd("HGETALL").arg("hash").query(c).unwrap();
    let set: std::collections::HashSet<u64> = redis::cmd("SMEMBERS").arg("set").query(c).unwrap();
    let zset: Vec<(u64, u64)> = redis::cmd("ZRANGE")
        .arg(&["zset", "0", "-1", "WITHSCORES"])
        .query(c)
        .unwrap();
    let zset: std::collections::HashMap<u64, u64> = zset.into_iter().collect();
    let list: std::collections::HashSet<u64> = redis::cmd("LRANGE")
        .arg(&["list", "0", "-1"])
        .query(c)
        .unwrap();
    for i in 0..written {
        assert_eq!(hash.get(&i), Some(&i), "cycle {cycle}: hash field {i} lost");
        assert!(set.contains(&i), "cycle {cycle}: set member {i} lost");
        assert_eq!(
            zset.get(&i),
            Some(&i),
            "cycle {cycle}: sorted-set member {i} lost"
        );
        assert!(list.contains(&i), "cycle {cycle}: list element {i} lost");
    }
    for i in (0..written).step_by(16) {
        let ttl: i64 = redis::cmd("TTL").arg(format!("exp:{i}")).query(c).unwrap();
        assert!(ttl > 0, "cycle {cycle}: exp:{i} has TTL {ttl}");
    }
}

fn crash_loop(extra: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let acked = Arc::new(AtomicU64::new(0));
    let incrs = Arc::new(AtomicU64::new(0));
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    for cycle in 0..5 {
        let mut server = Thicket::start(dir.path(), "127.0.0.1:0".parse().unwrap(), extra);
        let mut c = connect(server.addr);
        // Everything acknowledged before the last kill is there.
        let written = acked.load(Ordering::SeqCst);
        for i in 0..written {
            assert_eq!(
                c.get::<_, Option<u64>>(format!("ack:{i}")).unwrap(),
                Some(i),
                "cycle {cycle}: acknowledged ack:{i} lost"
            );
        }
        check_types(&mut c, written, cycle);
        let counter: u64 = c.get::<_, Option<u64>>("counter").unwrap().unwrap_or(0);
        let acked_incrs = incrs.load(Ordering::SeqCst);
        assert!(
            counter == acked_incrs || counter == acked_incrs + 1,
            "cycle {cycle}: counter {counter}, {acked_incrs} INCRs acknowledged"
        );
        incrs.store(counter, Ordering::SeqCst);
        let writer = {
            let (acked, incrs, addr) = (acked.clone(), incrs.clone(), server.addr);
            thread::spawn(move || write_until_killed(addr, written, &acked, &incrs))
        };
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        thread::sleep(Duration::from_millis(150 + seed % 400));
        server.kill();
        writer.join().unwrap();
    }
    assert!(
        acked.load(Ordering::SeqCst) > 0,
        "no write was acknowledged"
    );
}

#[test]
#[ignore = "needs redis-server, redis-tools and nutcracker; run by .ci/server.sh"]
fn sigkill_loses_no_acknowledged_write() {
    crash_loop(&[]);
}

#[test]
#[ignore = "needs redis-server, redis-tools and nutcracker; run by .ci/server.sh"]
fn sigkill_loses_no_acknowledged_synced_write() {
    crash_loop(&["--sync"]);
}

/// The twemproxy configuration `docs/server.md` shows: consistent hashing
/// (ketama) over the shards, Redis protocol, no ejection (a dead shard's
/// keys fail instead of moving to another shard).
fn twemproxy_config(listen: SocketAddr, shards: &[SocketAddr]) -> String {
    let mut config = format!(
        "thicket:\n  listen: {listen}\n  hash: fnv1a_64\n  distribution: ketama\n  redis: true\n  auto_eject_hosts: false\n  timeout: 2000\n  servers:\n"
    );
    for (i, shard) in shards.iter().enumerate() {
        config.push_str(&format!("    - {shard}:1 shard{i}\n"));
    }
    config
}

#[test]
#[ignore = "needs redis-server, redis-tools and nutcracker; run by .ci/server.sh"]
fn three_shards_behind_twemproxy() {
    let dirs: Vec<_> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let addrs: Vec<SocketAddr> = (0..3)
        .map(|_| SocketAddr::from(([127, 0, 0, 1], free_port())))
        .collect();
    let mut shards: Vec<Thicket> = dirs
        .iter()
        .zip(&addrs)
        .map(|(d, a)| Thicket::start(d.path(), *a, &[]))
        .collect();
    let proxy_addr = SocketAddr::from(([127, 0, 0, 1], free_port()));
    let conf_dir = tempfile::tempdir().unwrap();
    let conf = conf_dir.path().join("nutcracker.yml");
    std::fs::write(&conf, twemproxy_config(proxy_addr, &addrs)).unwrap();
    let mut proxy = Command::new(tool("nutcracker"))
        .arg("-c")
        .arg(&conf)
        .args(["-s", &free_port().to_string(), "-o"])
        .arg(conf_dir.path().join("nutcracker.log"))
        .spawn()
        .unwrap();
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut c = connect(proxy_addr);
        let keys: Vec<String> = (0..300).map(|i| format!("user:{i}")).collect();
        for (i, key) in keys.iter().enumerate() {
            let () = c.set(key, i).unwrap();
        }
        let owner = |key: &str| -> usize {
            let found: Vec<usize> = addrs
                .iter()
                .enumerate()
                .filter(|(_, a)| connect(**a).exists::<_, bool>(key).unwrap())
                .map(|(i, _)| i)
                .collect();
            assert_eq!(found.len(), 1, "{key} on shards {found:?}");
            found[0]
        };
        let owners: Vec<usize> = keys.iter().map(|k| owner(k)).collect();
        for shard in 0..3 {
            assert!(owners.contains(&shard), "no key on shard {shard}");
        }

        shards[1].kill();
        for (i, key) in keys.iter().enumerate() {
            let got = c.get::<_, Option<usize>>(key);
            if owners[i] == 1 {
                assert!(got.is_err(), "{key} served from a killed shard");
                c = connect(proxy_addr);
            } else {
                assert_eq!(got.unwrap(), Some(i), "{key} on a live shard");
            }
        }
        shards[1] = Thicket::start(dirs[1].path(), addrs[1], &[]);
        // The proxy reconnects to the restarted shard on demand.
        let mut c = connect(proxy_addr);
        for (i, key) in keys.iter().enumerate() {
            let mut value = None;
            for _ in 0..50 {
                match c.get::<_, Option<usize>>(key) {
                    Ok(v) => {
                        value = v;
                        break;
                    }
                    Err(_) => {
                        thread::sleep(Duration::from_millis(100));
                        c = connect(proxy_addr);
                    }
                }
            }
            assert_eq!(value, Some(i), "{key} after the restart");
        }
    }));
    let _ = proxy.kill();
    let _ = proxy.wait();
    if let Err(panic) = result {
        std::panic::resume_unwind(panic);
    }
}
