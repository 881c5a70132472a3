//! `thicket dump --json` of every golden fixture (the stores committed
//! under `crates/thicketdb/tests/fixtures`, one per profile and format
//! generation) against the `dump.json` committed beside it: a change that
//! decodes an old MANIFEST or chunk list differently (other tables, key
//! ranges, sequence numbers, file numbers) fails here, as a change that
//! cannot open it fails `thicketdb`'s `tests/golden.rs`.
//!
//! Counters that are zero are left out of the comparison: a counter added
//! later prints as 0 for an old store and changes nothing it decodes.
//!
//! Write the missing `dump.json` files (the committed ones stay):
//! `THICKET_BLESS=1 cargo test -p thicket-cli --test golden_dump`.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn fixtures_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../thicketdb/tests/fixtures")
}

/// Every fixture: (generation directory, fixture name).
fn fixtures() -> Vec<(PathBuf, String)> {
    let mut found = Vec::new();
    for generation in std::fs::read_dir(fixtures_root()).unwrap() {
        let generation = generation.unwrap().path();
        for fixture in std::fs::read_dir(&generation).unwrap() {
            let name = fixture.unwrap().file_name().into_string().unwrap();
            found.push((generation.clone(), name));
        }
    }
    found.sort();
    found
}

/// The dump, run from the generation's directory so that the paths it
/// prints are the same on every machine.
fn dump(generation: &Path, name: &str) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_thicket"))
        .current_dir(generation)
        .args(["dump", "--json", "--db", &format!("{name}/store")])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{name}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// `value` without the zero-valued entries of its counter maps.
fn without_zero_counters(value: Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(key, v)| match v {
                    Value::Object(c) if key == "stats" || key == "counters" => (
                        key,
                        Value::Object(c.into_iter().filter(|(_, n)| *n != 0).collect()),
                    ),
                    v => (key, without_zero_counters(v)),
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(without_zero_counters).collect()),
        other => other,
    }
}

#[test]
fn every_fixture_dumps_as_committed() {
    let bless = std::env::var_os("THICKET_BLESS").is_some();
    let fixtures = fixtures();
    assert!(fixtures.len() >= 11, "fixtures: {fixtures:?}");
    for (generation, name) in fixtures {
        let got = without_zero_counters(dump(&generation, &name));
        let expected_path = generation.join(&name).join("dump.json");
        if bless && !expected_path.exists() {
            let text = serde_json::to_string_pretty(&got).unwrap() + "\n";
            std::fs::write(&expected_path, text).unwrap();
        }
        let expected: Value =
            serde_json::from_slice(&std::fs::read(&expected_path).unwrap_or_else(|e| {
                panic!(
                    "{}: {e} (THICKET_BLESS=1 writes it)",
                    expected_path.display()
                )
            }))
            .unwrap();
        assert!(
            got == expected,
            "{}: the dump differs from the committed one",
            expected_path.display()
        );
    }
}
