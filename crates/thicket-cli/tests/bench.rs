//! `thicket bench`: every workload on every engine this build has, briefly,
//! checking the JSON contract and that the counts add up. No timing is
//! asserted.

use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

const WORKLOADS: &[&str] = &[
    "fillseq",
    "fillrandom",
    "overwrite",
    "readrandom",
    "readseq",
    "seekrandom",
    "readwhilewriting",
    "load",
    "a",
    "b",
    "c",
    "d",
    "e",
    "f",
    "p",
    "sifrdb",
    "ws1",
    "ws2",
    "ws3",
    "zipf-simple",
    "zipf-composite",
    "rangehot",
];

fn engines() -> Vec<&'static str> {
    if cfg!(feature = "peers") {
        vec!["thicket", "rocksdb", "fjall"]
    } else {
        vec!["thicket"]
    }
}

fn thicket(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_thicket"))
        .args(args)
        .output()
        .expect("run thicket")
}

fn num(v: &Value, key: &str) -> f64 {
    v[key]
        .as_f64()
        .unwrap_or_else(|| panic!("{key} is not a number in {v}"))
}

/// The SVG a successful plot command wrote to `svg`.
fn drawn_svg(out: &std::process::Output, svg: &Path) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(svg).unwrap();
    assert!(text.starts_with("<svg"), "not an SVG");
    text
}

/// The stores were removed after their runs: `dir` holds the result only.
fn assert_stores_removed(dir: &Path) {
    let left: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n != "result.json")
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

fn bench(dir: &Path, workloads: &str, extra: &[&str]) -> Value {
    bench_engines(dir, &engines().join(","), workloads, extra)
}

/// Runs `bench` on the engines of `engine_list` (`thicket:PROFILE`
/// entries allowed); the table names every engine, and the ratios
/// against RocksDB when it ran.
fn bench_engines(dir: &Path, engine_list: &str, workloads: &str, extra: &[&str]) -> Value {
    let json = dir.join("result.json");
    let mut args = vec![
        "bench",
        "--db",
        dir.to_str().unwrap(),
        "--engine",
        &engine_list,
        "--workload",
        workloads,
        "--json",
        json.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let out = thicket(&args);
    assert!(
        out.status.success(),
        "bench failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let table = String::from_utf8_lossy(&out.stdout);
    for e in engine_list.split(',') {
        assert!(table.contains(e), "table lacks {e}:\n{table}");
    }
    if engine_list == engines().join(",") && engines().len() > 1 && workloads != "recovery" {
        assert!(table.contains("thicket/rocksdb"), "no ratios:\n{table}");
    }
    serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap()
}

#[test]
fn every_workload_runs_on_every_engine_and_counts_add_up() {
    let dir = tempfile::tempdir().unwrap();
    let (n, ops) = (3000u64, 1200u64);
    let report = bench(
        dir.path(),
        &WORKLOADS.join(","),
        &[
            "--num",
            "3000",
            "--ops",
            "1200",
            "--threads",
            "2",
            "--cache-mb",
            "8",
            "--write-buffer-mb",
            "1",
        ],
    );
    let runs = report["runs"].as_array().expect("runs array");
    assert_eq!(runs.len(), WORKLOADS.len() * engines().len());
    let mut first_settings: Option<Value> = None;
    for r in runs {
        let w = r["workload"].as_str().unwrap();
        let e = r["engine"].as_str().unwrap();
        let ctx = format!("{e} {w}");
        for key in [
            "engine",
            "profile",
            "workload",
            "ops",
            "seconds",
            "ops_per_sec",
            "latency_us",
            "device_write_amplification",
            "engine_write_amplification",
            "space_amplification",
            "peak_rss_bytes",
            "settings",
            "timeline",
            "mb_per_sec",
            "fsyncs",
            "block_cache_hit_ratio",
            "device_read_bytes",
            "read_syscalls",
            "read_syscall_bytes",
            "device_read_bytes_per_get",
            "read_syscalls_per_get",
            "read_syscall_bytes_per_get",
            "chunk_get_shares",
        ] {
            assert!(r.get(key).is_some(), "{ctx}: missing {key}");
        }
        assert_eq!(r["profile"].is_null(), e != "thicket", "{ctx}");
        // The LSM layout and the peers have no chunk get sources.
        assert!(r["chunk_get_shares"].is_null(), "{ctx}");
        let point_reads = r["found"].as_u64().unwrap() + r["not_found"].as_u64().unwrap();
        assert_eq!(
            r["read_syscalls_per_get"].is_null(),
            point_reads == 0,
            "{ctx}: per get only with gets"
        );
        let total = r["ops"].as_u64().unwrap();
        let counts: u64 = r["op_counts"]
            .as_object()
            .unwrap()
            .values()
            .map(|c| c.as_u64().unwrap())
            .sum();
        assert_eq!(counts, total, "{ctx}: op counts add up");
        let expect = match w {
            "fillseq" | "fillrandom" | "load" | "sifrdb" => n,
            "readwhilewriting" => ops + r["op_counts"]["put"].as_u64().unwrap_or(0),
            _ => ops,
        };
        assert_eq!(total, expect, "{ctx}: ops");
        assert!(
            num(r, "seconds") > 0.0 && num(r, "ops_per_sec") > 0.0,
            "{ctx}"
        );
        let lat = &r["latency_us"];
        let qs: Vec<f64> = ["p50", "p95", "p99", "p999", "max"]
            .iter()
            .map(|q| num(lat, q))
            .collect();
        assert!(
            qs.windows(2).all(|p| p[0] <= p[1]) && qs[0] > 0.0,
            "{ctx}: {lat}"
        );
        let timeline = r["timeline"].as_array().unwrap();
        assert!(!timeline.is_empty(), "{ctx}: timeline");
        assert!(num(r, "peak_rss_bytes") > 1e6, "{ctx}");
        let space = num(r, "space_amplification");
        assert!(
            space > 0.1 && space < 50.0,
            "{ctx}: space amplification {space}"
        );
        // The peak includes the final size, which the store reached.
        assert!(
            num(r, "peak_space_bytes") >= num(r, "space_bytes")
                && num(r, "peak_space_amplification") >= space,
            "{ctx}: peak space {} against {}",
            r["peak_space_bytes"],
            r["space_bytes"]
        );
        // Writes were measured (bytes into the store), reads have none.
        let user = num(r, "user_bytes_written");
        let writes = ["put", "insert", "rmw"]
            .iter()
            .any(|k| r["op_counts"].get(k).is_some());
        if writes {
            assert!(user > 0.0, "{ctx}");
            assert!(num(r, "device_write_amplification") > 0.0, "{ctx}");
        } else {
            assert_eq!(user, 0.0, "{ctx}");
            assert!(r["device_write_amplification"].is_null(), "{ctx}");
        }
        if e == "fjall" {
            assert!(r["engine_write_amplification"].is_null(), "{ctx}");
        } else if user > 0.0 {
            assert!(num(r, "engine_write_amplification") > 0.0, "{ctx}");
        }
        // Fill then read finds every key: the read workloads run on a
        // prefilled store and find all their keys.
        if matches!(
            w,
            "readrandom" | "c" | "b" | "a" | "zipf-simple" | "zipf-composite"
        ) {
            assert_eq!(r["not_found"].as_u64(), Some(0), "{ctx}: keys missing");
            assert_eq!(r["found"], r["op_counts"]["get"], "{ctx}");
        }
        // TRIAD's workloads pre-populate half the key space: the updates
        // insert some of the other half, and uniform reads miss some.
        if w.starts_with("ws") {
            let live = r["live_keys"].as_u64().unwrap();
            let puts = r["op_counts"]["put"].as_u64().unwrap_or(0);
            assert!(
                live > n / 2 && live <= (n / 2 + puts).min(n),
                "{ctx}: {live} live"
            );
        }
        if w == "ws3" {
            assert!(num(r, "not_found") > 0.0, "{ctx}: no read missed");
            assert!(num(r, "found") > 0.0, "{ctx}");
        }
        if w == "readseq" {
            assert_eq!(r["entries_read"].as_u64(), Some(ops), "{ctx}");
        }
        if w == "fillseq" {
            assert_eq!(user as u64, n * (16 + 100), "{ctx}");
            assert_eq!(r["live_keys"].as_u64(), Some(n), "{ctx}");
        }
        if matches!(w, "e" | "seekrandom") {
            assert!(
                num(r, "entries_read") >= r["op_counts"]["scan"].as_f64().unwrap(),
                "{ctx}"
            );
        }
        // Same settings for every engine.
        let mut s = r["settings"].clone();
        for k in ["engine", "profile", "workload", "db", "ops"] {
            s.as_object_mut().unwrap().remove(k);
        }
        match &first_settings {
            None => first_settings = Some(s),
            Some(f) => assert_eq!(f, &s, "{ctx}: settings differ"),
        }
    }
    let s = first_settings.unwrap();
    assert_eq!(s["write_buffer_bytes"].as_u64(), Some(1 << 20));
    assert_eq!(s["cache_bytes"].as_u64(), Some(8 << 20));
    assert_eq!(s["compression"], "none");
    assert_eq!(s["bloom_bits"].as_u64(), Some(10));

    assert_stores_removed(dir.path());

    // The plot has one line per engine.
    let svg = dir.path().join("plot.svg");
    let json = dir.path().join("result.json");
    let out = thicket(&[
        "bench",
        "plot",
        json.to_str().unwrap(),
        "-o",
        svg.to_str().unwrap(),
        "--workload",
        "a",
    ]);
    let text = drawn_svg(&out, &svg);
    for e in engines() {
        assert!(text.contains(e), "plot lacks {e}");
    }
}

#[test]
fn sync_and_sifrdb_sizes_are_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let report = bench(dir.path(), "sifrdb", &["--num", "500", "--sync"]);
    for r in report["runs"].as_array().unwrap() {
        assert_eq!(r["settings"]["sync"], true);
        let user = num(r, "user_bytes_written");
        // 23-byte keys, values uniform in 1..=200.
        assert!(user > 500.0 * 60.0 && user < 500.0 * 190.0, "{user}");
        assert_eq!(num(r, "logical_bytes"), user);
        if r["engine"] == "thicket" {
            assert!(num(r, "fsyncs") >= 500.0, "{r}");
        }
    }
}

#[test]
fn bad_arguments_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let out = thicket(&[
        "bench",
        "--db",
        d,
        "--engine",
        "thicket",
        "--workload",
        "nope",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown workload"));
    let out = thicket(&["bench", "--db", d, "--engine", "leveldb", "--workload", "a"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not available"));
    let out = thicket(&["bench", "--engine", "thicket", "--workload", "a"]);
    assert_eq!(out.status.code(), Some(2), "--db is required");
    let out = thicket(&["bench", "--db", d, "--workload", "a"]);
    assert_eq!(out.status.code(), Some(2), "--engine is required");
    // The direct loop and the cross-check fix the store's options
    // themselves: a profile or option they would ignore is refused.
    for (sub, global) in [
        ("direct", ["--profile", "sifr"]),
        ("crosscheck", ["--option", "search_threads=2"]),
    ] {
        let out = thicket(&[
            "bench",
            sub,
            "--db",
            d,
            global[0],
            global[1],
            "--engine",
            "thicket",
            "--workload",
            "fillrandom",
        ]);
        assert_eq!(out.status.code(), Some(2), "bench {sub} {global:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("are not applied"),
            "bench {sub}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn latency_off_sampling_and_settle_are_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let common = [
        "--num",
        "4000",
        "--ops",
        "1000",
        "--cache-mb",
        "8",
        "--write-buffer-mb",
        "1",
    ];
    let mut off = common.to_vec();
    off.extend(["--latency", "off", "--settle"]);
    let report = bench(dir.path(), "fillrandom,readrandom", &off);
    for r in report["runs"].as_array().unwrap() {
        let ctx = format!("{} {}", r["engine"], r["workload"]);
        assert!(r["latency_us"].is_null(), "{ctx}: nothing was timed");
        assert!(r["latency_by_op"].as_object().unwrap().is_empty(), "{ctx}");
        assert!(r["latency_cdf"].as_array().unwrap().is_empty(), "{ctx}");
        assert_eq!(r["settings"]["latency"], "off", "{ctx}");
        assert_eq!(r["settings"]["settle"], true, "{ctx}");
        let ops = r["ops"].as_u64().unwrap();
        let counted: u64 = r["op_counts"]
            .as_object()
            .unwrap()
            .values()
            .map(|c| c.as_u64().unwrap())
            .sum();
        assert_eq!(counted, ops, "{ctx}: operations are counted untimed");
        if r["workload"] == "readrandom" {
            assert_eq!(ops, 1000, "{ctx}");
            assert_eq!(r["found"].as_u64(), Some(1000), "{ctx}");
            assert!(
                r["settle_seconds"].is_f64(),
                "{ctx}: reads on a settled store record the settle"
            );
        } else {
            assert_eq!(ops, 4000, "{ctx}");
            assert!(r["settle_seconds"].is_null(), "{ctx}: fills do not settle");
        }
    }

    let mut sampled = common.to_vec();
    sampled.extend(["--latency", "1/10"]);
    let report = bench(dir.path(), "readrandom", &sampled);
    for r in report["runs"].as_array().unwrap() {
        assert_eq!(r["settings"]["latency"]["one_in"], 10);
        assert_eq!(r["latency_us"]["count"].as_u64(), Some(100), "one in ten");
        assert_eq!(r["ops"].as_u64(), Some(1000));
        assert!(r["settle_seconds"].is_null());
    }

    let out = thicket(&[
        "bench",
        "--db",
        dir.path().to_str().unwrap(),
        "--engine",
        "thicket",
        "--workload",
        "readrandom",
        "--latency",
        "sometimes",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("on, off or 1/N"));
}

#[test]
fn the_direct_loop_runs_every_engine() {
    let dir = tempfile::tempdir().unwrap();
    for e in engines() {
        for w in ["fillrandom", "readrandom"] {
            let store = dir.path().join(format!("{w}-{e}"));
            let out = thicket(&[
                "bench",
                "direct",
                "--db",
                store.to_str().unwrap(),
                "--engine",
                e,
                "--workload",
                w,
                "--num",
                "3000",
                "--ops",
                "500",
                "--write-buffer-mb",
                "1",
                "--settle",
            ]);
            assert!(
                out.status.success(),
                "{e} {w}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let stdout = String::from_utf8_lossy(&out.stdout);
            let line = stdout
                .lines()
                .find_map(|l| l.strip_prefix("thicket-bench-direct "))
                .unwrap_or_else(|| panic!("{e} {w}: no result line in {stdout}"));
            let r: Value = serde_json::from_str(line).unwrap();
            let want = if w == "fillrandom" { 3000 } else { 500 };
            assert_eq!(r["ops"].as_u64(), Some(want), "{e} {w}");
            assert!(num(&r, "ops_per_sec") > 0.0);
            assert!(!store.exists(), "{e} {w}: store removed");
        }
    }
}

#[test]
fn the_crosscheck_reports_every_pair_and_variant() {
    let dir = tempfile::tempdir().unwrap();
    let engine_list = engines().join(",");
    let out = thicket(&[
        "bench",
        "crosscheck",
        "--db",
        dir.path().to_str().unwrap(),
        "--engine",
        &engine_list,
        "--num",
        "3000",
        "--ops",
        "500",
        "--rounds",
        "1",
        "--write-buffer-mb",
        "1",
        // A structural check: timing never fails this test.
        "--tolerance",
        "1000",
    ]);
    if engines().len() < 2 {
        assert_eq!(out.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&out.stderr).contains("at least one peer"));
        return;
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for w in ["fillrandom", "readrandom"] {
        for peer in ["rocksdb", "fjall"] {
            for v in ["driver latency on", "driver latency off"] {
                let row = format!("thicket/{peer}");
                assert!(
                    stdout
                        .lines()
                        .any(|l| l.starts_with(w) && l.contains(&row) && l.contains(v)),
                    "no {w} {row} {v} row:\n{stdout}"
                );
            }
        }
    }
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert!(left.is_empty(), "stores left behind: {left:?}");
}

/// A small RangeHot run (5,000 keys, 1 MiB cache and memtables, run by
/// `--duration`) with `extra` arguments.
fn rangehot(dir: &Path, extra: &[&str]) -> Value {
    let mut args = vec![
        "--num",
        "5000",
        "--ops",
        "1000000000",
        "--cache-mb",
        "1",
        "--write-buffer-mb",
        "1",
    ];
    args.extend_from_slice(extra);
    bench(dir, "rangehot", &args)
}

/// LSbM's setup: `--threads` readers and one writer paced at
/// `--write-rate`; the per-second reader and hit-ratio series are recorded.
#[test]
fn rangehot_with_a_paced_writer_records_reader_and_hit_ratio_series() {
    let dir = tempfile::tempdir().unwrap();
    let rate = 400.0;
    let report = rangehot(
        dir.path(),
        &["--duration", "2.5", "--threads", "1", "--write-rate", "400"],
    );
    for r in report["runs"].as_array().unwrap() {
        let ctx = format!("{}", r["engine"]);
        let puts = r["op_counts"]["put"].as_u64().unwrap_or(0);
        let gets = r["op_counts"]["get"].as_u64().unwrap();
        // The writer never runs ahead of its pace; the reader only reads.
        assert!(
            (puts as f64) <= rate * num(r, "seconds") + 1.0,
            "{ctx}: {puts} puts"
        );
        assert!(puts > 0 && gets > puts, "{ctx}: {puts} puts, {gets} gets");
        assert_eq!(r["settings"]["write_rate"], rate, "{ctx}");
        let timeline = r["timeline"].as_array().unwrap();
        let readers = r["reader_timeline"].as_array().unwrap();
        assert_eq!(readers.len(), timeline.len(), "{ctx}");
        let reads: u64 = readers.iter().map(|v| v.as_u64().unwrap()).sum();
        let all: u64 = timeline.iter().map(|v| v.as_u64().unwrap()).sum();
        assert!(
            reads < all,
            "{ctx}: the writer's operations are not the readers'"
        );
        if r["engine"] == "thicket" {
            let ratios = r["hit_ratio_timeline"].as_array().unwrap();
            assert!(ratios.len() >= 2, "{ctx}: one ratio per full second");
            for v in ratios.iter().filter_map(Value::as_f64) {
                assert!((0.0..=1.0).contains(&v), "{ctx}: ratio {v}");
            }
        }
    }
}

/// `--read-rate` paces the readers together (LSbM's Figure 8): they never
/// run ahead of it, and the run records it.
#[test]
fn rangehot_readers_paced_by_read_rate_stay_within_it() {
    let dir = tempfile::tempdir().unwrap();
    let rate = 300.0;
    let report = rangehot(
        dir.path(),
        &[
            "--duration",
            "2",
            "--threads",
            "2",
            "--write-rate",
            "100",
            "--read-rate",
            "300",
        ],
    );
    for r in report["runs"].as_array().unwrap() {
        let ctx = format!("{}", r["engine"]);
        let gets = r["op_counts"]["get"].as_u64().unwrap();
        // Each of the 2 readers issues its operation i at i / 150 s.
        assert!(
            (gets as f64) <= rate * num(r, "seconds") + 2.0,
            "{ctx}: {gets} gets"
        );
        assert!(gets > 0, "{ctx}");
        assert_eq!(r["settings"]["read_rate"], rate, "{ctx}");
    }
}

/// A child given no keys (`scripts/yodb-bench` passes its sizes straight
/// to `--internal-child`) refuses them, as the command line does, instead
/// of hanging: a stream's arithmetic panicked on an empty key space and
/// the watcher waited for it forever.
#[test]
fn a_child_given_no_keys_fails_instead_of_hanging() {
    let dir = tempfile::tempdir().unwrap();
    let settings = serde_json::json!({
        "engine": "thicket", "profile": "yodb", "workload": "p",
        "db": dir.path(), "num": 0, "ops": 1000, "key_size": 14,
        "value_size": 800, "threads": 2, "duration_secs": null,
        "cache_bytes": 8 << 20, "write_buffer_bytes": 16 << 20,
        "compression": "none", "sync": false, "bloom_bits": 10,
        "background_threads": 2, "read_ratio": 0.0, "scan_length": null,
        "hot_fraction": 0.15, "seed": 42, "latency": "all", "settle": false,
        "thicket_options": [],
    });
    let mut child = Command::new(env!("CARGO_BIN_EXE_thicket"))
        .args(["bench", "--internal-child", &settings.to_string()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run thicket");
    // A liveness guard, not a timing assertion.
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > std::time::Duration::from_secs(120) {
            let _ = child.kill();
            panic!("bench --internal-child with num 0 hangs");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert!(!status.success());
    assert!(stderr.contains("--num must be at least 1"), "{stderr}");
}

/// Read amplification per get from `/proc/self/io` of the engine's child:
/// gets answered by the memtable read nothing; gets through a 1 MiB block
/// cache with direct reads (settled store) read from the device, with
/// read system calls.
#[test]
fn read_amplification_per_get_counts_the_engines_own_reads() {
    let dir = tempfile::tempdir().unwrap();
    let report = bench(
        dir.path(),
        "readrandom",
        &["--num", "2000", "--ops", "4000", "--write-buffer-mb", "64"],
    );
    for r in report["runs"].as_array().unwrap() {
        let ctx = format!("{} in memory", r["engine"]);
        assert_eq!(r["found"].as_u64(), Some(4000), "{ctx}");
        assert!(num(r, "read_syscalls_per_get") < 0.05, "{ctx}: {r}");
        assert!(num(r, "read_syscall_bytes_per_get") < 50.0, "{ctx}: {r}");
        assert_eq!(r["device_read_bytes"].as_u64(), Some(0), "{ctx}");
    }
    let direct: Vec<&str> = engines().into_iter().filter(|e| *e != "fjall").collect();
    let report = bench_engines(
        dir.path(),
        &direct.join(","),
        "readrandom",
        &[
            "--num",
            "20000",
            "--ops",
            "2000",
            "--write-buffer-mb",
            "1",
            "--cache-mb",
            "1",
            "--direct-reads",
            "--settle",
        ],
    );
    for r in report["runs"].as_array().unwrap() {
        let ctx = format!("{} direct", r["engine"]);
        assert_eq!(r["found"].as_u64(), Some(2000), "{ctx}");
        let calls = r["read_syscalls"].as_u64().unwrap();
        let bytes = r["device_read_bytes"].as_u64().unwrap();
        assert!(num(r, "read_syscalls_per_get") > 0.05, "{ctx}: {r}");
        assert!(num(r, "device_read_bytes_per_get") > 100.0, "{ctx}: {r}");
        assert_eq!(
            num(r, "read_syscalls_per_get"),
            calls as f64 / 2000.0,
            "{ctx}"
        );
        assert_eq!(
            num(r, "device_read_bytes_per_get"),
            bytes as f64 / 2000.0,
            "{ctx}"
        );
    }
}

/// `thicket:PROFILE` engines in one invocation, a YCSB mix under
/// `--distribution`, and the chunked layout's get sources: `yodb` reports
/// where every get was served (shares adding up to 1, munks serving a
/// small hot store), `default` (LSM) reports none; a profile-scoped
/// `--thicket-option` reaches its profile's runs only.
#[test]
fn chunked_get_sources_and_profiles_side_by_side() {
    let dir = tempfile::tempdir().unwrap();
    let common = [
        "--num",
        "5000",
        "--ops",
        "5000",
        "--key-size",
        "14",
        "--value-size",
        "800",
        "--threads",
        "2",
        "--distribution",
        "zipf-composite",
    ];
    let report = bench_engines(dir.path(), "thicket:yodb,thicket:default", "c,a", &common);
    let runs = report["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 4);
    for r in runs {
        let ctx = format!("{} {}", r["profile"], r["workload"]);
        assert_eq!(r["settings"]["distribution"], "zipf-composite", "{ctx}");
        assert_eq!(r["not_found"].as_u64(), Some(0), "{ctx}: keys loaded");
        let shares = &r["chunk_get_shares"];
        if r["profile"] == "default" {
            assert!(shares.is_null(), "{ctx}");
            continue;
        }
        let gets = r["found"].as_u64().unwrap();
        assert_eq!(
            shares["gets"].as_u64(),
            Some(gets),
            "{ctx}: every get placed"
        );
        let sum: f64 = ["munk", "row_cache", "log", "table"]
            .iter()
            .map(|k| num(shares, k))
            .sum();
        assert!((sum - 1.0).abs() < 1e-9, "{ctx}: {shares}");
        assert!(
            num(shares, "munk") > 0.5,
            "{ctx}: a hot small store is in munks: {shares}"
        );
    }
    // No munks for yodb (scoped), so its gets come from the rest; the
    // option is not applied to default (whose runs would refuse nothing,
    // but whose recorded options list it unchanged).
    let mut scoped = common.to_vec();
    scoped.extend(["--thicket-option", "yodb:munk_cache_bytes=0"]);
    let report = bench_engines(dir.path(), "thicket:yodb,thicket:default", "c", &scoped);
    for r in report["runs"].as_array().unwrap() {
        assert_eq!(
            r["settings"]["thicket_options"][0],
            "yodb:munk_cache_bytes=0"
        );
        if r["profile"] == "yodb" {
            let shares = &r["chunk_get_shares"];
            assert_eq!(num(shares, "munk"), 0.0, "{shares}");
            assert!(
                num(shares, "row_cache") + num(shares, "table") > 0.5,
                "{shares}"
            );
        }
    }
}

/// YoDB's E with several scan lengths: one run per length and engine,
/// scans no longer than their length, labelled by length in the table.
#[test]
fn scan_length_lists_run_e_once_per_length() {
    let dir = tempfile::tempdir().unwrap();
    let report = bench(
        dir.path(),
        "e,c",
        &[
            "--num",
            "3000",
            "--ops",
            "600",
            "--distribution",
            "zipf-simple",
            "--scan-length",
            "10,100",
        ],
    );
    let runs = report["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 3 * engines().len(), "e twice, c once");
    for r in runs {
        let ctx = format!(
            "{} {} {}",
            r["engine"], r["workload"], r["settings"]["scan_length"]
        );
        if r["workload"] == "c" {
            assert_eq!(r["settings"]["scan_length"], 10, "{ctx}: the first length");
            continue;
        }
        let len = r["settings"]["scan_length"].as_f64().unwrap();
        let scans = r["op_counts"]["scan"].as_f64().unwrap();
        assert!(
            r["op_counts"].get("insert").is_none(),
            "{ctx}: puts, not inserts"
        );
        assert!(num(r, "entries_read") <= scans * len, "{ctx}");
        assert!(
            num(r, "entries_read") > scans,
            "{ctx}: scans read past their first entry"
        );
    }
    let lens: Vec<u64> = runs
        .iter()
        .filter(|r| r["workload"] == "e")
        .map(|r| r["settings"]["scan_length"].as_u64().unwrap())
        .collect();
    assert!(lens.contains(&10) && lens.contains(&100), "{lens:?}");
}

/// The recovery workload: a child loads without syncing and is killed
/// with SIGKILL; a fresh child opens the store and reads the first key.
/// The LSMs (`default`, RocksDB) replay their log at the open, reading at
/// least the bytes loaded: the store was left as a crash leaves it.
#[test]
fn recovery_opens_a_store_killed_after_its_load() {
    let dir = tempfile::tempdir().unwrap();
    let mut list = vec!["thicket:yodb", "thicket:default"];
    if engines().contains(&"rocksdb") {
        list.push("rocksdb");
    }
    let report = bench_engines(
        dir.path(),
        &list.join(","),
        "recovery",
        &["--num", "3000", "--threads", "2"],
    );
    let runs = report["runs"].as_array().unwrap();
    assert_eq!(runs.len(), list.len());
    for r in runs {
        let ctx = format!("{} {}", r["engine"], r["profile"]);
        let rec = &r["recovery"];
        assert_eq!(rec["loaded_keys"].as_u64(), Some(3000), "{ctx}");
        let loaded = 3000 * (16 + 100);
        assert_eq!(rec["loaded_bytes"].as_u64(), Some(loaded), "{ctx}");
        assert!(
            rec["store_bytes_at_kill"].as_u64().unwrap() >= loaded * 9 / 10,
            "{ctx}"
        );
        assert_eq!(rec["first_get_found"], true, "{ctx}: {rec}");
        assert!(num(rec, "open_seconds") > 0.0, "{ctx}");
        assert_eq!(r["found"].as_u64(), Some(1), "{ctx}");
        // The LSMs replay their whole log: no flush came after the load.
        if r["profile"] == "default" || r["engine"] == "rocksdb" {
            assert!(
                rec["open_read_syscall_bytes"].as_u64().unwrap() >= loaded,
                "{ctx}: the log was replayed: {rec}"
            );
        }
        assert_eq!(
            rec["open_vs_rocksdb"].is_null(),
            !list.contains(&"rocksdb"),
            "{ctx}"
        );
        assert!(r["settings"].get("recovery_phase").is_none(), "{ctx}");
    }
    assert_stores_removed(dir.path());
}

#[test]
fn yodb_evaluation_arguments_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    for (args, message) in [
        (
            vec![
                "--engine",
                "thicket",
                "--workload",
                "d",
                "--distribution",
                "zipf-simple",
            ],
            "YCSB mixes",
        ),
        (
            vec!["--engine", "thicket:nope", "--workload", "c"],
            "thicket:nope",
        ),
        (
            vec!["--engine", "rocksdb:yodb", "--workload", "c"],
            "only thicket",
        ),
        (
            vec![
                "--engine",
                "thicket",
                "--workload",
                "c",
                "--thicket-option",
                "nope:a=1",
            ],
            "nope:a=1",
        ),
        (
            vec![
                "--engine",
                "thicket",
                "--workload",
                "c",
                "--distribution",
                "uniform",
            ],
            "uniform",
        ),
    ] {
        let mut all = vec!["bench", "--db", d];
        all.extend(args.iter().copied());
        let out = thicket(&all);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(message), "{args:?}: {stderr}");
    }
    // A loading child that fails (here: an unknown option at the open)
    // fails the run instead of being taken for a killed one.
    let out = thicket(&[
        "bench",
        "--db",
        d,
        "--engine",
        "thicket",
        "--workload",
        "recovery",
        "--num",
        "100",
        "--thicket-option",
        "no_such_option=1",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("ended before its report"), "{stderr}");
}

/// `--keep-going`: a run that fails (here: an option only one profile's
/// runs get, unknown at the open) is recorded in `failed_runs` with its
/// error, the other engines still run and are reported, and the command
/// fails at the end naming the failure.
#[test]
fn keep_going_records_a_failed_run_and_runs_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("result.json");
    let out = thicket(&[
        "bench",
        "--db",
        dir.path().to_str().unwrap(),
        "--engine",
        "thicket:leveldb,thicket:default",
        "--workload",
        "fillrandom,readrandom",
        "--num",
        "300",
        "--json",
        json.to_str().unwrap(),
        "--thicket-option",
        "leveldb:no_such_option=1",
        "--keep-going",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("2 run(s) failed"), "{stderr}");
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let runs = report["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2, "{report}");
    assert!(runs.iter().all(|r| r["profile"] == "default"), "{report}");
    let failed = report["failed_runs"].as_array().unwrap();
    let workloads: Vec<&str> = failed
        .iter()
        .map(|f| f["workload"].as_str().unwrap())
        .collect();
    assert_eq!(workloads, ["fillrandom", "readrandom"], "{report}");
    for f in failed {
        assert_eq!(f["engine"], "thicket");
        assert_eq!(f["profile"], "leveldb");
        assert!(f["error"].as_str().unwrap().contains("failed"), "{f}");
    }
    assert_stores_removed(dir.path());
}

/// The data lines of a `bench plot-sweep` SVG (2-pixel polylines of more
/// than two points; the legend's are two-point), in drawing order: stroke
/// colour and pixel points.
fn svg_data_lines(svg: &str) -> Vec<(String, Vec<(f64, f64)>)> {
    let attr = |element: &str, name: &str| -> String {
        let start = element.find(&format!("{name}=\"")).unwrap() + name.len() + 2;
        element[start..].split('"').next().unwrap().to_string()
    };
    svg.split("<polyline")
        .skip(1)
        .map(|rest| rest.split("/>").next().unwrap())
        .filter(|element| attr(element, "stroke-width") == "2")
        .map(|element| {
            let points = attr(element, "points")
                .split_whitespace()
                .map(|p| {
                    let (x, y) = p.split_once(',').unwrap();
                    (x.parse().unwrap(), y.parse().unwrap())
                })
                .collect::<Vec<(f64, f64)>>();
            (attr(element, "stroke"), points)
        })
        .filter(|(_, points)| points.len() > 2)
        .collect()
}

/// `bench plot-sweep` over three result files of different sizes, given
/// out of order: one line per engine/profile with a point per file,
/// sorted by keys on a log scale, at heights proportional to the runs'
/// figures; E's scan lengths are told apart; the errors are clear.
#[test]
fn plot_sweep_draws_a_line_per_engine_across_result_files() {
    let dir = tempfile::tempdir().unwrap();
    let profiles = ["yodb", "default"];
    let mut files = Vec::new();
    let mut reports = Vec::new();
    for n in ["1600", "400", "800"] {
        let run_dir = dir.path().join(format!("run-{n}"));
        std::fs::create_dir(&run_dir).unwrap();
        let args = ["--num", n, "--ops", "400", "--scan-length", "5,10"];
        reports.push(bench_engines(
            &run_dir,
            "thicket:yodb,thicket:default",
            "p,e",
            &args,
        ));
        let file = dir.path().join(format!("sweep-{n}.json"));
        std::fs::copy(run_dir.join("result.json"), &file).unwrap();
        files.push(file.to_str().unwrap().to_string());
    }
    let svg = dir.path().join("sweep.svg");
    let plot = |extra: &[&str]| {
        let mut args = vec!["bench", "plot-sweep"];
        args.extend(files.iter().map(String::as_str));
        args.extend(["-o", svg.to_str().unwrap()]);
        args.extend_from_slice(extra);
        thicket(&args)
    };
    // The figure of `profile`'s run of p at each size, smallest first.
    let figures = |profile: &str, metric: &dyn Fn(&Value) -> f64| -> Vec<f64> {
        let mut points: Vec<(u64, f64)> = reports
            .iter()
            .flat_map(|report| report["runs"].as_array().unwrap())
            .filter(|r| r["workload"] == "p" && r["profile"] == profile)
            .map(|r| (r["settings"]["num"].as_u64().unwrap(), metric(r)))
            .collect();
        points.sort_by_key(|p| p.0);
        points.into_iter().map(|p| p.1).collect()
    };
    for (flags, metric) in [
        (
            vec!["--workload", "p"],
            &(|r: &Value| num(r, "ops_per_sec")) as &dyn Fn(&Value) -> f64,
        ),
        (
            vec!["--workload", "p", "--metric", "device_write_amplification"],
            &|r: &Value| num(r, "device_write_amplification"),
        ),
    ] {
        let text = drawn_svg(&plot(&flags), &svg);
        for p in profiles {
            assert!(
                text.contains(&format!("thicket/{p}")),
                "{flags:?}: legend lacks {p}"
            );
        }
        let lines = svg_data_lines(&text);
        assert_eq!(
            lines.len(),
            profiles.len(),
            "{flags:?}: one line per profile"
        );
        assert_ne!(
            lines[0].0, lines[1].0,
            "{flags:?}: lines told apart by colour"
        );
        assert_eq!(
            text.matches("<circle").count(),
            profiles.len() * 3,
            "{flags:?}: a marker per point"
        );
        // Sorted by keys, the same x per size, and 400, 800, 1600 equally
        // spaced: a log scale.
        let xs: Vec<f64> = lines[0].1.iter().map(|p| p.0).collect();
        assert!(xs.windows(2).all(|w| w[0] < w[1]), "{flags:?}: {xs:?}");
        assert!(((xs[1] - xs[0]) - (xs[2] - xs[1])).abs() <= 1.0, "{xs:?}");
        // Heights: one linear map from figure to pixel fits every point.
        let mut points: Vec<(f64, f64)> = Vec::new();
        for (p, (_, line)) in profiles.iter().zip(&lines) {
            assert_eq!(line.iter().map(|q| q.0).collect::<Vec<_>>(), xs);
            let values = figures(p, metric);
            points.extend(values.into_iter().zip(line.iter().map(|q| q.1)));
        }
        let by_value = |a: &&(f64, f64), b: &&(f64, f64)| a.0.total_cmp(&b.0);
        let low = *points.iter().min_by(by_value).unwrap();
        let high = *points.iter().max_by(by_value).unwrap();
        assert!(
            high.0 > low.0 && high.1 < low.1,
            "{flags:?}: higher is up: {points:?}"
        );
        let slope = (high.1 - low.1) / (high.0 - low.0);
        for (v, y) in &points {
            let expect = low.1 + slope * (v - low.0);
            assert!(
                (y - expect).abs() <= 1.5,
                "{flags:?}: {v} at {y}, not {expect}"
            );
        }
    }
    // E ran twice per file: one length at a time.
    let text = drawn_svg(&plot(&["--workload", "e", "--scan-length", "5"]), &svg);
    assert_eq!(svg_data_lines(&text).len(), 2);
    assert!(text.contains("e/L5"), "the caption names the length");
    for (flags, message) in [
        (vec!["--workload", "e"], "--scan-length"),
        (vec!["--workload", "c"], "no runs of workload \"c\""),
        (
            vec!["--workload", "e", "--scan-length", "7"],
            "scan length 7",
        ),
        (
            vec!["--workload", "p", "--metric", "get_p95_us"],
            "get_p95_us is null in every run",
        ),
        (vec!["--workload", "p", "--metric", "nope"], "nope"),
    ] {
        let out = plot(&flags);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flags:?}: {stderr}");
        assert!(stderr.contains(message), "{flags:?}: {stderr}");
    }
    // Unreadable files are named.
    let garbage = dir.path().join("garbage.json");
    std::fs::write(&garbage, "not json").unwrap();
    let missing = dir.path().join("missing.json");
    for file in [&garbage, &missing] {
        let out = thicket(&[
            "bench",
            "plot-sweep",
            &files[0],
            file.to_str().unwrap(),
            "-o",
            svg.to_str().unwrap(),
            "--workload",
            "p",
        ]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(file.to_str().unwrap()), "{stderr}");
    }
}

/// The filled rectangles of a `bench plot-bars` SVG other than the white
/// background: fill colour and height in pixels, in drawing order.
fn svg_filled_rects(svg: &str) -> Vec<(String, f64)> {
    let attr = |element: &str, name: &str| -> String {
        let start = element.find(&format!(" {name}=\"")).unwrap() + name.len() + 3;
        element[start..].split('"').next().unwrap().to_string()
    };
    svg.split("<rect")
        .skip(1)
        .map(|rest| rest.split("/>").next().unwrap())
        .filter(|element| element.contains(" fill=\"#") && !element.contains("#FFFFFF"))
        .map(|element| {
            (
                attr(element, "fill"),
                attr(element, "height").parse().unwrap(),
            )
        })
        .collect()
}

/// `bench plot-bars` over two result files, one of them renamed: a bar
/// per run in its series' colour, heights proportional to the runs'
/// figures, legend entries for every series, and clear errors.
#[test]
fn plot_bars_draws_a_bar_per_run_grouped_by_workload() {
    let dir = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    // (series, ops/s) of every run, in file and run order.
    let mut runs: Vec<(String, f64)> = Vec::new();
    for (name, engines, workloads) in [
        ("a", "thicket:default,thicket:leveldb", "fillrandom,fillseq"),
        ("b", "thicket:default", "fillrandom"),
    ] {
        let run_dir = dir.path().join(name);
        std::fs::create_dir(&run_dir).unwrap();
        let json = run_dir.join("result.json");
        let out = thicket(&[
            "bench",
            "--db",
            run_dir.to_str().unwrap(),
            "--engine",
            engines,
            "--workload",
            workloads,
            "--num",
            "400",
            "--json",
            json.to_str().unwrap(),
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        for r in report["runs"].as_array().unwrap() {
            let series = match name {
                "b" => "default again".to_string(),
                _ => format!("thicket/{}", r["profile"].as_str().unwrap()),
            };
            runs.push((series, num(r, "ops_per_sec")));
        }
        files.push(run_dir.join("result.json").to_str().unwrap().to_string());
    }
    // Bars are drawn a series at a time, series in order of appearance.
    let mut figures = Vec::new();
    for series in ["thicket/default", "thicket/leveldb", "default again"] {
        figures.extend(runs.iter().filter(|r| r.0 == series).map(|r| r.1));
    }
    let svg = dir.path().join("bars.svg");
    let renamed = format!("{},series=default again", files[1]);
    let plot = |inputs: &[&str]| {
        let mut args = vec!["bench", "plot-bars", "-o", svg.to_str().unwrap()];
        args.extend_from_slice(inputs);
        thicket(&args)
    };
    let text = drawn_svg(&plot(&[&files[0], &renamed]), &svg);
    for series in ["thicket/default", "thicket/leveldb", "default again"] {
        assert!(text.contains(series), "legend lacks {series}");
    }
    // Legend boxes are 10 pixels high; the bars are the other rectangles,
    // in series order: default's two, leveldb's two, then the renamed run.
    let rects = svg_filled_rects(&text);
    let bars: Vec<&(String, f64)> = rects.iter().filter(|r| r.1 != 10.0).collect();
    assert_eq!(bars.len(), 5, "{rects:?}");
    let colours: Vec<&str> = bars.iter().map(|b| b.0.as_str()).collect();
    assert_eq!(colours[0], colours[1]);
    assert_eq!(colours[2], colours[3]);
    assert!(colours[0] != colours[2] && colours[2] != colours[4] && colours[0] != colours[4]);
    // Both ends of a bar snap to whole pixels (±1 px on a height), so the
    // scale comes from the tallest bar, where that error weighs least.
    let (tallest, tallest_figure) = bars
        .iter()
        .zip(&figures)
        .max_by(|a, b| a.0 .1.total_cmp(&b.0 .1))
        .unwrap();
    let scale = tallest.1 / tallest_figure;
    for (bar, figure) in bars.iter().zip(&figures) {
        assert!(
            (bar.1 - figure * scale).abs() <= 2.0,
            "bar {} px for {figure} ops/s (scale {scale})",
            bar.1
        );
    }
    for (inputs, message) in [
        (
            vec![files[0].as_str(), files[1].as_str()],
            "two runs for the bar",
        ),
        (vec![files[0].as_str(), "x.json,colour=red"], "colour=red"),
        (vec!["--workload", "c", files[0].as_str()], "no runs"),
    ] {
        let out = plot(&inputs);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{inputs:?}: {stderr}");
        assert!(stderr.contains(message), "{inputs:?}: {stderr}");
    }
}

/// The store and reads of the capped-read tests: ~320 MB of 4 KB values.
const CAPPED_READ_SHAPE: &[&str] = &[
    "--num",
    "80000",
    "--value-size",
    "4000",
    "--ops",
    "4000",
    "--cache-mb",
    "8",
    "--write-buffer-mb",
    "4",
    "--latency",
    "off",
];

/// The capped run of `memory_capped_reads_come_from_the_device`: readrandom
/// over ~320 MB of values.
fn capped_readrandom(dir: &Path, engine: &str, extra: &[&str]) -> Value {
    let mut args = CAPPED_READ_SHAPE.to_vec();
    args.extend_from_slice(extra);
    let report = bench_engines(dir, engine, "readrandom", &args);
    report["runs"][0].clone()
}

/// A store over three times larger than the cap: the capped child's gets read
/// from the device (its page cache cannot hold the store), the uncapped
/// one's from the page cache the prefill left; the cap and what its
/// cgroup saw are in the JSON.
#[test]
fn memory_capped_reads_come_from_the_device() {
    for engine in engines() {
        let mib: u64 = 96;
        if engine == "fjall" {
            assert_fjall_is_held_to_the_cap();
            continue;
        }
        let dir = tempfile::tempdir().unwrap();
        let limit = format!("{mib}M");
        let capped = capped_readrandom(dir.path(), engine, &["--memory-limit", &limit]);
        let cap = &capped["memory_cap"];
        assert_eq!(
            num(cap, "limit_bytes"),
            (mib << 20) as f64,
            "{engine}: {cap}"
        );
        assert!(
            num(cap, "peak_bytes") <= (mib << 20) as f64,
            "{engine}: {cap}"
        );
        assert!(
            num(cap, "limit_hits") > 0.0,
            "{engine}: the cap never bit: {cap}"
        );
        assert_eq!(num(cap, "oom_kills"), 0.0, "{engine}: {cap}");
        assert_eq!(
            num(&capped["settings"], "memory_limit_bytes"),
            (mib << 20) as f64
        );
        assert!(capped["major_faults"].is_u64(), "{engine}: {capped}");
        let capped_reads = num(&capped, "device_read_bytes");
        // Most of 4,000 gets of 4 KB values miss an 8 MiB cache and a
        // page cache of at most 96 MiB over 320 MB.
        assert!(
            capped_reads > (2000u64 * 4096) as f64,
            "{engine}: capped gets read {capped_reads} device bytes"
        );
        if !capped["device_read_ops"].is_null() {
            assert!(num(&capped, "device_read_ops") > 0.0, "{engine}");
        }

        let free = capped_readrandom(dir.path(), engine, &[]);
        assert!(free.get("memory_cap").is_none(), "{engine}: {free}");
        let free_reads = num(&free, "device_read_bytes");
        assert!(
            free_reads < capped_reads / 2.0,
            "{engine}: uncapped {free_reads} vs capped {capped_reads} device bytes"
        );
    }
}

/// fjall never syncs its tables, so under cgroup v1 (no per-group dirty
/// throttling) its dirty pages fill the group and the kernel kills it
/// while it loads 320 MB into 96 MiB: the cap holds it, and the driver
/// says so. Where it completes, its reads came from the device.
fn assert_fjall_is_held_to_the_cap() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("result.json");
    let mut args = vec![
        "bench",
        "--db",
        dir.path().to_str().unwrap(),
        "--engine",
        "fjall",
        "--workload",
        "readrandom",
        "--json",
        json.to_str().unwrap(),
        "--memory-limit",
        "96M",
    ];
    args.extend_from_slice(CAPPED_READ_SHAPE);
    let out = thicket(&args);
    if out.status.success() {
        let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        let run = &report["runs"][0];
        assert_eq!(num(&run["memory_cap"], "limit_bytes"), (96u64 << 20) as f64);
        assert!(
            num(run, "device_read_bytes") > (2000u64 * 4096) as f64,
            "{run}"
        );
    } else {
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("killed by the memory cap"), "{err}");
    }
}

/// `--direct-io`: ThicketDB and RocksDB read with O_DIRECT (reads miss the
/// page cache even with no cap) and write flushes and compactions with it,
/// fjall runs buffered; each run says which.
#[test]
fn direct_io_reads_bypass_the_page_cache_and_is_recorded() {
    // Under the target directory: the system's temporary directory may be
    // a tmpfs, which refuses O_DIRECT.
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    // A file, not the directory: ext4 refuses O_DIRECT on a directory
    // (which made this test skip everywhere until 2026-11-28).
    let probe = dir.path().join("o_direct_probe");
    let refused = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags(rustix::fs::OFlags::DIRECT.bits() as i32)
        .open(&probe)
        .is_err();
    let _ = std::fs::remove_file(&probe);
    if refused {
        eprintln!("skipped: {} refuses O_DIRECT", dir.path().display());
        return;
    }
    for engine in engines() {
        // 48 MB of values over an 8 MiB block cache: direct reads miss the
        // page cache whatever its size, no larger store is needed.
        let mut args = CAPPED_READ_SHAPE.to_vec();
        args[1] = "12000";
        args.push("--direct-io");
        let run = bench_engines(dir.path(), engine, "readrandom", &args)["runs"][0].clone();
        let applied = &run["direct_io_applied"];
        let expect_reads = engine != "fjall";
        assert_eq!(applied["reads"], expect_reads, "{engine}: {applied}");
        assert_eq!(
            applied["flush_and_compaction_writes"],
            engine != "fjall",
            "{engine}: {applied}"
        );
        assert_eq!(run["settings"]["direct_io"], true);
        if expect_reads {
            assert!(
                num(&run, "device_read_bytes") > (2000u64 * 4096) as f64,
                "{engine}: direct gets read {} device bytes",
                run["device_read_bytes"]
            );
        }
    }
}

/// Every ThicketDB run carries its engine's statistics and, picked from
/// them, the counters of every technique; a cap below the cache and
/// memtables is refused before anything runs.
#[test]
fn mechanism_counters_are_in_every_thicket_run_and_small_caps_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let report = bench_engines(
        dir.path(),
        "thicket:triad,thicket:default",
        "ws1",
        &["--num", "3000", "--ops", "3000", "--write-buffer-mb", "1"],
    );
    let run = &report["runs"][0];
    let counters = &run["mechanism_counters"];
    for technique in ["triad", "lsbm", "sifrdb", "bolt", "yodb"] {
        assert!(counters[technique].is_object(), "{technique}: {counters}");
    }
    assert_eq!(
        counters["triad"]["log_rewrites"], run["engine_stats"]["log_rewrites"],
        "picked from the statistics"
    );
    assert!(num(&run["engine_stats"], "user_writes") >= 3000.0);

    let out = thicket(&[
        "bench",
        "--db",
        dir.path().to_str().unwrap(),
        "--engine",
        "thicket",
        "--workload",
        "fillrandom",
        "--memory-limit",
        "16M",
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--memory-limit") && err.contains("block cache"),
        "{err}"
    );
}
