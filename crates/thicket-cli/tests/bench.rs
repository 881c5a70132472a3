//! `thicket bench`: every workload on every engine this build has, briefly,
//! checking the JSON contract and that the counts add up. No timing is
//! asserted.

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

fn bench(dir: &Path, workloads: &str, extra: &[&str]) -> Value {
    let json = dir.join("result.json");
    let engine_list = engines().join(",");
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
    for e in engines() {
        assert!(table.contains(e), "table lacks {e}:\n{table}");
    }
    if engines().len() > 1 {
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
        ] {
            assert!(r.get(key).is_some(), "{ctx}: missing {key}");
        }
        assert_eq!(r["profile"].is_null(), e != "thicket", "{ctx}");
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
            "readrandom" | "c" | "b" | "a" | "ws3" | "zipf-simple" | "zipf-composite"
        ) {
            assert_eq!(r["not_found"].as_u64(), Some(0), "{ctx}: keys missing");
            assert_eq!(r["found"], r["op_counts"]["get"], "{ctx}");
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

    // The stores were removed after their runs.
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n != "result.json")
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");

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
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.starts_with("<svg"), "not an SVG");
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
}
