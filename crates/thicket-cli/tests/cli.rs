//! The `thicket` command line, run as a separate process.

use std::path::Path;
use std::process::{Command, Output};

fn thicket(db: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_thicket"))
        .args(args)
        .arg("--db")
        .arg(db)
        .output()
        .expect("run thicket")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[track_caller]
fn ok(db: &Path, args: &[&str]) -> String {
    let o = thicket(db, args);
    assert!(
        o.status.success(),
        "thicket {args:?} failed: {}\n{}",
        o.status,
        stderr(&o)
    );
    stdout(&o)
}

#[track_caller]
fn fails(db: &Path, args: &[&str]) -> String {
    let o = thicket(db, args);
    assert_eq!(o.status.code(), Some(2), "thicket {args:?}: {}", stderr(&o));
    assert!(o.stdout.is_empty(), "unexpected output: {}", stdout(&o));
    let err = stderr(&o);
    assert!(err.starts_with("error: "), "{err}");
    err
}

fn stats_json(db: &Path) -> serde_json::Value {
    serde_json::from_str(&ok(db, &["stats", "--json"])).expect("stats --json is JSON")
}

#[test]
fn put_get_delete() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path();
    ok(db, &["put", "apple", "red"]);
    ok(db, &["put", "banana", "yellow"]);
    assert_eq!(ok(db, &["get", "apple"]), "red\n");
    ok(db, &["put", "apple", "green", "--sync"]);
    assert_eq!(ok(db, &["get", "apple"]), "green\n");

    let absent = thicket(db, &["get", "cherry"]);
    assert_eq!(absent.status.code(), Some(1));
    assert!(absent.stdout.is_empty());

    ok(db, &["delete", "apple"]);
    assert_eq!(thicket(db, &["get", "apple"]).status.code(), Some(1));
    assert_eq!(ok(db, &["get", "banana"]), "yellow\n");
}

/// `delete-range FROM TO` removes `[FROM, TO)` with one tombstone, which
/// the log, the flushed table (`dump`), `check` and reads all understand.
#[test]
fn delete_range_then_flush_and_dump() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path();
    for k in ["a", "b", "bb", "c", "d"] {
        ok(db, &["put", k, &k.to_uppercase()]);
    }
    ok(db, &["delete-range", "b", "c", "--sync"]);
    assert_eq!(ok(db, &["scan"]), "a\tA\nc\tC\nd\tD\n");
    assert_eq!(thicket(db, &["get", "bb"]).status.code(), Some(1));
    let manifest: serde_json::Value = serde_json::from_str(&ok(db, &["dump", "--json"])).unwrap();
    let records = manifest["records"].as_array().unwrap();
    let log_number = records.last().unwrap()["edit"]["log_number"]
        .as_u64()
        .unwrap();
    let log = ok(db, &["dump", "--log", &log_number.to_string()]);
    assert!(log.contains("range deletion [b, c) @6"), "{log}");

    ok(db, &["flush"]);
    assert_eq!(ok(db, &["scan", "--reverse"]), "d\tD\nc\tC\na\tA\n");
    ok(db, &["check"]);
    let manifest: serde_json::Value = serde_json::from_str(&ok(db, &["dump", "--json"])).unwrap();
    let table = manifest["records"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|r| r["edit"]["new_tables"].as_array().unwrap())
        .last()
        .cloned()
        .unwrap_or_else(|| panic!("a flushed table: {manifest}"));
    let spec = format!("{}:{}", table["segment"], table["offset"]);
    let dumped: serde_json::Value =
        serde_json::from_str(&ok(db, &["dump", "--table", &spec, "--json"])).unwrap();
    assert_eq!(dumped["properties"]["format_version"], 3, "{dumped}");
    assert_eq!(
        dumped["range_deletions"],
        serde_json::json!([{ "start": "b", "end": "c", "sequences": [6] }])
    );
    // An empty range deletes nothing.
    ok(db, &["delete-range", "d", "a"]);
    assert_eq!(ok(db, &["scan"]), "a\tA\nc\tC\nd\tD\n");
    let usage = thicket(db, &["delete-range", "a"]);
    assert_eq!(usage.status.code(), Some(2), "FROM and TO are required");
}

#[test]
fn scan_bounds_limit_and_direction() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path();
    for k in ["a", "b", "c", "d", "e"] {
        ok(db, &["put", k, &k.to_uppercase()]);
    }
    ok(db, &["delete", "c"]);
    assert_eq!(ok(db, &["scan"]), "a\tA\nb\tB\nd\tD\ne\tE\n");
    assert_eq!(
        ok(db, &["scan", "--from", "b", "--to", "e"]),
        "b\tB\nd\tD\n"
    );
    assert_eq!(ok(db, &["scan", "--from", "bb"]), "d\tD\ne\tE\n");
    assert_eq!(ok(db, &["scan", "--limit", "2"]), "a\tA\nb\tB\n");
    assert_eq!(ok(db, &["scan", "--limit", "0"]), "");
    assert_eq!(ok(db, &["scan", "--reverse"]), "e\tE\nd\tD\nb\tB\na\tA\n");
    assert_eq!(
        ok(
            db,
            &[
                "scan",
                "--reverse",
                "--from",
                "b",
                "--to",
                "e",
                "--limit",
                "1"
            ]
        ),
        "d\tD\n"
    );
    assert_eq!(ok(db, &["scan", "--reverse", "--to", "b"]), "a\tA\n");
}

#[test]
fn load_then_scan_and_stats() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path();
    let out = ok(db, &["load", "--count", "25000", "--value-size", "20"]);
    let acked: Vec<&str> = out.lines().filter(|l| l.starts_with("acked ")).collect();
    assert!(acked.contains(&"acked 10000"), "{out}");
    assert_eq!(acked.last(), Some(&"acked 25000"), "{out}");
    let summary = out.lines().last().unwrap();
    assert!(
        summary.starts_with("loaded 25000 keys in ") && summary.ends_with(" writes/s"),
        "{summary}"
    );
    assert_eq!(
        ok(db, &["get", "key0000000000000042"]),
        "v0000000000000042|v0\n"
    );
    assert_eq!(
        ok(db, &["scan", "--reverse", "--limit", "1"]),
        "key0000000000024999\tv0000000000024999|v0\n"
    );
    // Random order writes the same keys.
    ok(
        db,
        &[
            "load", "--count", "1000", "--start", "25000", "--random", "--seed", "7",
        ],
    );
    let scanned = ok(db, &["scan", "--from", "key0000000000024990"]);
    assert_eq!(scanned.lines().count(), 1010);
}

#[test]
fn stats_json_has_required_keys_and_persists() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path();
    ok(
        db,
        &[
            "load",
            "--count",
            "5000",
            "--option",
            "write_buffer_size=65536",
        ],
    );
    let s = stats_json(db);
    for key in [
        "tables",
        "segments",
        "user_bytes_written",
        "engine_bytes_written",
        "write_amplification",
        "fsyncs",
        "fsyncs_by_cause",
        "compactions_merge",
        "compactions_move",
        "tables_per_level",
        "runs_per_level",
        "bytes_per_level",
        "stall_micros",
        "flushes",
        "user_writes",
    ] {
        assert!(s.get(key).is_some(), "stats lacks {key}: {s}");
    }
    for cause in ["log", "flush", "compaction", "manifest"] {
        assert!(s["fsyncs_by_cause"][cause].is_u64(), "{s}");
    }
    let user = s["user_bytes_written"].as_u64().unwrap();
    assert!(user >= 5000 * 100, "{s}");
    assert_eq!(s["user_writes"].as_u64(), Some(5000));
    assert!(s["engine_bytes_written"].as_u64().unwrap() >= user, "{s}");
    assert!(s["tables"].as_u64().unwrap() >= 1, "{s}");
    assert!(s["write_amplification"].as_f64().unwrap() > 0.0, "{s}");
    assert!(s["tables_per_level"].is_array(), "{s}");
    assert_eq!(s["live_keys"].as_u64(), Some(5000), "{s}");
    assert_eq!(s["logical_bytes"].as_u64(), Some(5000 * (19 + 100)), "{s}");
    assert!(s["disk_bytes"].as_u64().unwrap() > 0, "{s}");
    let amp = s["space_amplification"].as_f64().expect("numeric");
    assert!(amp >= 1.0, "{s}");

    // Counters are cumulative across processes.
    ok(db, &["load", "--count", "3000", "--start", "5000"]);
    let s2 = stats_json(db);
    assert_eq!(s2["user_writes"].as_u64(), Some(8000), "{s2}");
    assert!(s2["user_bytes_written"].as_u64().unwrap() > user);

    let text = ok(db, &["stats"]);
    assert!(text.lines().count() > 5, "{text}");
    assert!(text.contains("write amp"), "{text}");
    assert!(text.contains("space amp"), "{text}");
}

#[test]
fn stats_json_lists_exactly_the_pinned_keys() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path();
    ok(db, &["put", "apple", "red"]);
    let s = stats_json(db);
    let mut keys: Vec<&str> = s.as_object().unwrap().keys().map(String::as_str).collect();
    keys.sort_unstable();
    let mut pinned = vec![
        "keyspaces",
        "memtables",
        "immutable_memtables",
        "tables_per_level",
        "runs_per_level",
        "bytes_per_level",
        "tables",
        "segments",
        "live_table_bytes",
        "last_sequence",
        "user_bytes_written",
        "user_writes",
        "write_groups",
        "log_bytes_written",
        "flush_bytes_written",
        "compaction_bytes_written",
        "compaction_bytes_read",
        "manifest_bytes_written",
        "engine_bytes_written",
        "write_amplification",
        "fsyncs",
        "fsyncs_by_cause",
        "flushes",
        "compactions_merge",
        "compactions_move",
        "compactions_concurrent",
        "tables_moved",
        "tables_settled",
        "compactions_grouped",
        "merge_checkpoints",
        "merges_resumed",
        "merge_in_progress",
        "level_bytes_read",
        "level_bytes_written",
        "stall_micros",
        "holes_punched",
        "segments_deleted",
        "search_lookups",
        "search_probes",
        "search_probes_discarded",
        "buffer_hits",
        "buffer_range_pieces",
        "buffer_tables_removed",
        "freezes",
        "buffer_trims",
        "buffer_tables_trimmed",
        "buffer_bytes_per_level",
        "buffer_tables_per_level",
        "get_blocks_read_per_level",
        "buffer_hits_per_level",
        "buffer_stops_per_level",
        "buffer_blocks_read_per_level",
        "buffer_range_reads_per_level",
        "level_range_reads_per_level",
        "buffer_tables_removed_per_level",
        "buffer_tables_trimmed_per_level",
        "freezes_per_level",
        "gets",
        "get_blocks_read",
        "log_table_bytes",
        "log_table_data_bytes",
        "log_table_live_bytes",
        "compaction_buffer_bytes",
        "buffer_tables",
        "block_cache_hits",
        "block_cache_misses",
        "block_cache_passing_hits",
        "block_cache_passing_misses",
        "block_cache_metadata_bytes",
        "block_cache_bytes",
        "open_segment_files",
        "l0_compactions_deferred",
        "hot_entries_kept",
        "in_place_updates",
        "in_place_versions_kept",
        "log_rewrites",
        "log_limit_rewrites",
        "log_limit_switches",
        "flush_micros",
        "compaction_micros",
        "l0_overlap_ratio",
        "log_batch_values",
        "log_batch_reads",
        "log_batch_read_bytes",
        "log_spill_bytes",
        "log_values_shadowed",
        "background_error",
        "disk_bytes",
        "logical_bytes",
        "live_keys",
        "space_amplification",
        // The chunked layout (YoDB; 0 for an LSM store).
        "chunks",
        "munks_resident",
        "munk_bytes",
        "row_cache_bytes",
        "row_cache_hit_ratio",
        "chunk_funk_rebalances",
        "chunk_splits",
        "chunk_gets_from_munk",
        "chunk_gets_from_row_cache",
        "chunk_gets_from_log",
        "chunk_gets_from_table",
        "chunk_log_parts_searched",
        "chunk_munk_loads",
        "chunk_munk_evictions",
        "chunk_munk_rebalances",
        "chunk_puts_waited_for_switch",
        "chunk_funk_builds_skipped",
        "chunk_funk_builds_queued",
        "chunk_puts_waited_for_build",
        "chunk_checkpoints",
    ];
    pinned.sort_unstable();
    assert_eq!(keys, pinned, "{s}");
    let mut causes: Vec<&String> = s["fsyncs_by_cause"].as_object().unwrap().keys().collect();
    causes.sort_unstable();
    assert_eq!(causes, ["compaction", "flush", "log", "manifest"]);
    assert_eq!(s["user_writes"], 1);
    assert_eq!(s["background_error"], serde_json::Value::Null);
}

/// `keyspace create|list|drop` and `--keyspace` on the data commands; the
/// default keyspace when absent; `dump` shows the keyspace's edits and ops.
#[test]
fn keyspaces_from_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path();
    ok(db, &["put", "k", "default-value"]);
    let created = ok(
        db,
        &[
            "keyspace",
            "create",
            "users",
            "--keyspace-profile",
            "sifr",
            "--keyspace-option",
            "bloom_bits_per_key=16",
        ],
    );
    assert_eq!(created, "created keyspace users\n");
    assert_eq!(ok(db, &["keyspace", "list"]), "default\nusers\n");
    ok(db, &["put", "k", "user-value", "--keyspace", "users"]);
    ok(db, &["put", "j", "x", "--keyspace", "users"]);
    ok(db, &["delete", "j", "--keyspace", "users"]);
    ok(db, &["load", "--count", "50", "--keyspace", "users"]);
    ok(
        db,
        &[
            "delete-range",
            "key0000000000000010",
            "key0000000000000040",
            "--keyspace",
            "users",
        ],
    );
    assert_eq!(ok(db, &["get", "k"]), "default-value\n");
    assert_eq!(ok(db, &["get", "k", "--keyspace", "users"]), "user-value\n");
    assert_eq!(
        thicket(db, &["get", "j", "--keyspace", "users"])
            .status
            .code(),
        Some(1)
    );
    let scanned = ok(db, &["scan", "--keyspace", "users"]);
    assert_eq!(scanned.lines().count(), 21, "{scanned}");
    assert_eq!(ok(db, &["scan"]), "k\tdefault-value\n");
    let manifest = ok(db, &["dump", "--manifest"]);
    assert!(
        manifest.contains("create keyspace 1 named \"users\""),
        "{manifest}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&ok(db, &["dump", "--manifest", "--json"])).unwrap();
    let created = json["records"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["edit"]["create_keyspace"]["name"] == "users")
        .expect("a record creates the keyspace");
    assert_eq!(created["edit"]["keyspace"], 1);
    ok(db, &["compact", "--keyspace", "users"]);
    ok(db, &["check"]);
    assert_eq!(stats_json(db)["keyspaces"], 2);
    let err = fails(db, &["get", "k", "--keyspace", "nope"]);
    assert!(err.contains("no such keyspace"), "{err}");
    let err = fails(db, &["put", "k", "v", "--keyspace", "nope"]);
    assert!(err.contains("no such keyspace"), "{err}");
    ok(db, &["keyspace", "drop", "users"]);
    assert_eq!(ok(db, &["keyspace", "list"]), "default\n");
    let err = fails(db, &["keyspace", "drop", "default"]);
    assert!(err.contains("cannot be dropped"), "{err}");
    let manifest = ok(db, &["dump", "--manifest"]);
    assert!(
        !manifest.contains("named \"users\""),
        "a rolled MANIFEST forgets it: {manifest}"
    );
}

/// The same in a chunked store: its keyspaces are chunked too (`yodb`
/// when no profile is named; an LSM profile is refused), with range
/// deletes, checkpoints and drops.
#[test]
fn keyspaces_from_the_command_line_in_a_chunked_store() {
    let dir = tempfile::tempdir().unwrap();
    let db = &dir.path().join("store");
    ok(db, &["put", "k", "default-value", "--profile", "yodb"]);
    let err = fails(
        db,
        &["keyspace", "create", "lsm", "--keyspace-profile", "sifr"],
    );
    assert!(err.contains("layout lsm"), "{err}");
    let created = ok(
        db,
        &[
            "keyspace",
            "create",
            "users",
            "--keyspace-option",
            "chunk_size=8192",
            "--keyspace-option",
            "funk_log_limit=2048",
            "--keyspace-option",
            "funk_log_limit_with_munk=4096",
        ],
    );
    assert_eq!(created, "created keyspace users\n");
    assert_eq!(ok(db, &["keyspace", "list"]), "default\nusers\n");
    ok(db, &["put", "k", "user-value", "--keyspace", "users"]);
    ok(db, &["load", "--count", "500", "--keyspace", "users"]);
    ok(
        db,
        &[
            "delete-range",
            "key0000000000000010",
            "key0000000000000490",
            "--keyspace",
            "users",
        ],
    );
    assert_eq!(ok(db, &["get", "k"]), "default-value\n");
    assert_eq!(ok(db, &["get", "k", "--keyspace", "users"]), "user-value\n");
    let scanned = ok(db, &["scan", "--keyspace", "users"]);
    assert_eq!(scanned.lines().count(), 21, "{scanned}");
    ok(db, &["compact", "--keyspace", "users"]);
    let stats = stats_json(db);
    assert_eq!(stats["keyspaces"], 2);
    assert!(stats["chunk_splits"].as_u64().unwrap() > 0, "{stats}");
    let copy = dir.path().join("copy");
    let report = ok(db, &["checkpoint", "--to", copy.to_str().unwrap()]);
    assert!(report.contains("segments linked"), "{report}");
    ok(db, &["keyspace", "drop", "users"]);
    assert_eq!(ok(db, &["keyspace", "list"]), "default\n");
    ok(db, &["check"]);
    let scanned = ok(&copy, &["scan", "--keyspace", "users"]);
    assert_eq!(scanned.lines().count(), 21, "{scanned}");
    ok(&copy, &["check"]);
}

#[test]
fn options_and_profiles() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path();
    ok(
        db,
        &["put", "k", "v", "--option", "write_buffer_size=65536"],
    );
    ok(
        db,
        &[
            "flush",
            "--option",
            "target_table_size=65536",
            "--option",
            "block_size=1024",
        ],
    );
    let err = fails(db, &["get", "k", "--option", "bogus=1"]);
    assert!(err.contains("bogus"), "{err}");
    let err = fails(db, &["get", "k", "--option", "write_buffer_size=lots"]);
    assert!(err.contains("write_buffer_size"), "{err}");
    let err = fails(db, &["get", "k", "--option", "write_buffer_size=10"]);
    assert!(err.contains("write_buffer_size"), "{err}");
    let err = fails(db, &["get", "k", "--option", "write_buffer_size"]);
    assert!(err.contains("NAME=VALUE"), "{err}");

    let err = fails(db, &["get", "k", "--profile", "nosuch"]);
    assert!(err.contains("nosuch"), "{err}");
    assert_eq!(ok(db, &["get", "k", "--profile", "default"]), "v\n");

    let fresh = dir.path().join("fresh");
    let err = fails(&fresh, &["put", "k", "v", "--profile", "nosuch"]);
    assert!(err.contains("nosuch"), "{err}");
    ok(&fresh, &["put", "k", "v", "--profile", "default"]);
    let options = std::fs::read_to_string(fresh.join("OPTIONS")).unwrap();
    assert!(options.contains("profile=default"), "{options}");
}

#[test]
fn reads_do_not_create_a_store() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("none");
    let err = fails(&db, &["get", "k"]);
    assert!(err.contains("no store"), "{err}");
    assert!(!db.join("CURRENT").exists());
}

#[test]
fn missing_db_is_a_usage_error() {
    let o = Command::new(env!("CARGO_BIN_EXE_thicket"))
        .args(["get", "k"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--db"));
}

#[test]
fn check_finds_a_flipped_byte() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path();
    let small = [
        "--option",
        "write_buffer_size=65536",
        "--option",
        "target_table_size=65536",
    ];
    let mut args = vec!["load", "--count", "5000"];
    args.extend(small);
    ok(db, &args);
    ok(db, &["compact"]);
    ok(db, &["put", "tail", "in the log"]);
    let report = ok(db, &["check"]);
    assert!(report.starts_with("ok:"), "{report}");

    let mut segments = Vec::new();
    for entry in std::fs::read_dir(db).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "seg") {
            let mut bytes = std::fs::read(&path).unwrap();
            if bytes.len() > 200 {
                // Offset 100 lies in the first data block of the first table.
                bytes[100] ^= 0x55;
                std::fs::write(&path, bytes).unwrap();
                segments.push(path.file_name().unwrap().to_string_lossy().into_owned());
            }
        }
    }
    assert!(!segments.is_empty(), "no segment written");
    let o = thicket(db, &["check"]);
    assert!(!o.status.success(), "check passed a corrupt store");
    let err = stderr(&o);
    assert!(
        segments.iter().any(|s| err.contains(s.as_str())),
        "{err} names none of {segments:?}"
    );
    assert!(err.contains("offset"), "{err}");
}

#[test]
fn checkpoint_is_an_openable_copy() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let copy = dir.path().join("copy");
    ok(&db, &["load", "--count", "3000", "--value-size", "20"]);
    ok(&db, &["flush"]);
    ok(&db, &["put", "before", "yes"]);
    let out = ok(&db, &["checkpoint", "--to", copy.to_str().unwrap()]);
    assert!(
        out.starts_with(&format!("checkpoint {}: ", copy.display())),
        "{out}"
    );
    assert!(out.contains(" segments linked, 0 copied"), "{out}");
    ok(&db, &["put", "after", "the checkpoint"]);
    assert_eq!(ok(&copy, &["get", "before"]), "yes\n");
    assert_eq!(thicket(&copy, &["get", "after"]).status.code(), Some(1));
    assert_eq!(ok(&copy, &["scan"]).lines().count(), 3001);
    assert!(ok(&copy, &["check"]).starts_with("ok: "));
    // The target must be new.
    let err = fails(&db, &["checkpoint", "--to", copy.to_str().unwrap()]);
    assert!(err.contains("already exists"), "{err}");
}

/// Names, sizes and modification times of a directory's files.
fn listing(dir: &Path) -> Vec<(String, u64, std::time::SystemTime)> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let meta = e.metadata().unwrap();
            (
                e.file_name().into_string().unwrap(),
                meta.len(),
                meta.modified().unwrap(),
            )
        })
        .collect();
    files.sort();
    files
}

/// In the chunked layout `dump` decodes `CHUNKS` (keyspaces, chunks and
/// their files), a funk table (`NUMBER:0`) and a chunk log, and writes
/// nothing.
#[test]
fn dump_decodes_a_chunked_store() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path();
    let small_chunks = [
        "--profile",
        "yodb",
        "--option",
        "chunk_size=262144",
        "--option",
        "funk_log_limit_with_munk=131072",
    ];
    let load = ["load", "--count", "5000", "--value-size", "100"];
    ok(db, &[&small_chunks[..], &load[..]].concat());
    ok(db, &["put", "key0000000000000005", "new"]);
    ok(
        db,
        &["delete-range", "key0000000000000100", "key0000000000000200"],
    );
    let before = listing(db);
    let list: serde_json::Value = serde_json::from_str(&ok(db, &["dump", "--json"])).unwrap();
    let default = &list["keyspaces"][0];
    assert_eq!(default["name"], "default", "{list}");
    // Version 3 records it; the writes up to it were synced.
    let durable = list["durable_sequence"]
        .as_u64()
        .expect("a durable sequence");
    assert!(durable <= list["last_sequence"].as_u64().unwrap(), "{list}");
    let chunks = default["chunks"].as_array().unwrap();
    assert!(chunks.len() > 1, "split into chunks: {list}");
    let first = &chunks[0];
    assert_eq!(first["start"], "");
    assert!(ok(db, &["dump"]).contains(&format!("log {}", first["log"])));

    let table = first["table"].as_u64().unwrap();
    let dumped: serde_json::Value = serde_json::from_str(&ok(
        db,
        &["dump", "--table", &format!("{table}:0"), "--json"],
    ))
    .unwrap();
    assert_eq!(dumped["table"]["keyspace"], "default", "{dumped}");
    assert_eq!(dumped["table"]["chunk_log"], first["log"]);
    let entries = dumped["entries"].as_array().unwrap();
    assert_eq!(entries[5]["key"], "key0000000000000005");
    assert_ne!(entries[5]["value"], "new", "the put is in the chunk log");
    let err = fails(db, &["dump", "--table", &format!("{}:0", first["log"])]);
    assert!(err.contains("no funk table"), "{err}");

    let log: serde_json::Value = serde_json::from_str(&ok(
        db,
        &["dump", "--log", &first["log"].to_string(), "--json"],
    ))
    .unwrap();
    let records = log["records"].as_array().unwrap();
    let ops: Vec<&serde_json::Value> = records
        .iter()
        .flat_map(|r| r["ops"].as_array().unwrap())
        .collect();
    assert!(
        ops.iter()
            .any(|op| op["key"] == "key0000000000000005" && op["value"] == "new"),
        "{log}"
    );
    let tombstones: Vec<&serde_json::Value> = records
        .iter()
        .flat_map(|r| r["range_deletions"].as_array().unwrap())
        .collect();
    assert_eq!(tombstones[0]["start"], "key0000000000000100", "{log}");
    let checked = ok(db, &["check"]);
    assert!(
        checked.starts_with(&format!("ok: {} funk tables", chunks.len())),
        "{checked}"
    );
    assert_eq!(listing(db), before, "dump and check wrote nothing");
}

#[test]
fn dump_decodes_the_manifest_a_table_and_a_log_without_writing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path();
    ok(db, &["load", "--count", "50", "--value-size", "5"]);
    ok(db, &["flush"]);
    ok(db, &["delete", "key0000000000000003"]);
    let before = listing(db);

    let manifest: serde_json::Value =
        serde_json::from_str(&ok(db, &["dump", "--json"])).expect("JSON");
    assert_eq!(
        manifest,
        serde_json::from_str::<serde_json::Value>(&ok(db, &["dump", "--manifest", "--json"]))
            .unwrap()
    );
    let records = manifest["records"].as_array().unwrap();
    let first = &records[0]["edit"];
    assert_eq!(first["format_version"], 7, "{first}");
    let table = records
        .iter()
        .flat_map(|r| r["edit"]["new_tables"].as_array().unwrap())
        .find(|t| t["entries"] == 50)
        .unwrap_or_else(|| panic!("the flushed table is recorded: {manifest}"));
    assert_eq!(table["smallest"]["key"], "key0000000000000000");
    assert_eq!(table["largest"]["sequence"], 50);
    let last = records.last().unwrap();
    let level0 = last["version"]["levels"][0].as_array().unwrap();
    assert!(
        level0
            .iter()
            .any(|run| run["tables"].as_array().unwrap().contains(&table["table"])),
        "{last}"
    );

    let spec = format!("{}:{}", table["segment"], table["offset"]);
    let dumped: serde_json::Value =
        serde_json::from_str(&ok(db, &["dump", "--table", &spec, "--json"])).unwrap();
    assert_eq!(dumped["properties"]["entries"], 50, "{dumped}");
    assert_eq!(dumped["table"]["table"], table["table"]);
    let entries = dumped["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 50);
    assert_eq!(entries[7]["key"], "key0000000000000007");
    assert_eq!(entries[7]["value"], "v0000");
    assert_eq!(entries[7]["kind"], "value");
    assert!(!dumped["index"].as_array().unwrap().is_empty());

    let log_number = last["edit"]["log_number"].as_u64().unwrap();
    let log: serde_json::Value = serde_json::from_str(&ok(
        db,
        &["dump", "--log", &log_number.to_string(), "--json"],
    ))
    .unwrap();
    let ops: Vec<&serde_json::Value> = log["records"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|r| r["ops"].as_array().unwrap())
        .collect();
    assert_eq!(ops.len(), 1, "{log}");
    assert_eq!(ops[0]["kind"], "deletion");
    assert_eq!(ops[0]["key"], "key0000000000000003");
    assert_eq!(ops[0]["sequence"], 51);

    assert!(ok(db, &["dump"]).starts_with("manifest "));
    assert!(ok(db, &["dump", "--table", &spec]).contains("entries: 50"));
    assert!(ok(db, &["dump", "--log", &log_number.to_string()]).contains("@51:deletion"));
    let err = fails(db, &["dump", "--table", "nonsense"]);
    assert!(err.contains("SEGMENT:OFFSET"), "{err}");
    let err = fails(db, &["dump", "--table", &format!("{}:1", table["segment"])]);
    assert!(err.contains("no live table"), "{err}");

    // Reads (get, scan, stats, check, dump) leave the directory as it was.
    ok(db, &["get", "key0000000000000001"]);
    ok(db, &["scan"]);
    ok(db, &["stats", "--json"]);
    ok(db, &["check"]);
    assert_eq!(listing(db), before);
}
