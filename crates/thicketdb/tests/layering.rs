//! The engine's layers, lowest first: a module may import its own layer and
//! the ones below it, never one above (`docs/architecture.md`). This test
//! reads every source file and fails on an import that points upwards.
//! Inside `db` the same holds for its three tiers: the seams both engines
//! share, the engines (`db/lsm`, `db/chunked`, which never import each
//! other) and the facade (`Db`, `Keyspace`, the tools) on top.

use std::fs;
use std::path::{Path, PathBuf};

/// Top-level modules of `src/`, lowest layer first.
const LAYERS: &[&str] = &[
    "error",
    "format",
    "io",
    "iterator",
    "log",
    "table",
    "memtable",
    "stats",
    "options",
    "version",
    "compaction",
    "db",
];

fn rank(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| *l == module)
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).expect("readable src dir") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The modules a line names as `crate::MODULE`, comments left out.
fn crate_paths(line: &str) -> Vec<&str> {
    let code = line.split("//").next().unwrap_or("");
    code.match_indices("crate::")
        .filter(|(at, _)| !code[..*at].ends_with(|c: char| c.is_alphanumeric() || c == '_'))
        .map(|(at, m)| {
            let rest = &code[at + m.len()..];
            let end = rest
                .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            &rest[..end]
        })
        .collect()
}

#[test]
fn no_module_imports_a_higher_layer() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut violations = Vec::new();
    for file in &files {
        let relative = file.strip_prefix(&src).expect("under src");
        let top = relative
            .components()
            .next()
            .and_then(|c| c.as_os_str().to_str())
            .map(|s| s.trim_end_matches(".rs"))
            .expect("a file name");
        if top == "lib" {
            continue; // the crate root re-exports the API from every layer
        }
        let own = rank(top).unwrap_or_else(|| {
            panic!(
                "{} is in no layer: add `{top}` to LAYERS",
                relative.display()
            )
        });
        let text = fs::read_to_string(file).expect("readable source");
        for (n, line) in text.lines().enumerate() {
            for module in crate_paths(line) {
                match rank(module) {
                    Some(r) if r > own => violations.push(format!(
                        "{}:{}: `{top}` imports higher layer `{module}`",
                        relative.display(),
                        n + 1
                    )),
                    None => violations.push(format!(
                        "{}:{}: `crate::{module}` is in no layer",
                        relative.display(),
                        n + 1
                    )),
                    _ => {}
                }
            }
        }
    }
    assert!(violations.is_empty(), "{}", violations.join("\n"));
}

/// `db`'s modules that both engines build on, and that import only each
/// other (and the layers below `db`).
const DB_SEAMS: &[&str] = &[
    "batch",
    "call_options",
    "check_keys",
    "check_report",
    "checkpoint_steps",
    "identity",
    "iter",
    "keyspace_rules",
    "probe",
    "read_only_fs",
    "snapshot",
    "space_usage",
    "stats_report",
    "whitebox",
];

/// `db`'s engines: each imports the seams and itself, never the other
/// engine nor the facade.
const DB_ENGINES: &[&str] = &["lsm", "chunked"];

/// Upward imports inside `db` that `docs/architecture.md` justifies:
/// (importing module, imported module). None today.
const DB_EXCEPTIONS: &[(&str, &str)] = &[];

/// The tier of a module of `db`: 0 seam, 1 engine, 2 facade.
fn db_tier(module: &str) -> usize {
    if DB_SEAMS.contains(&module) {
        0
    } else if DB_ENGINES.contains(&module) {
        1
    } else {
        2
    }
}

/// The module path of a source file below `src/` (`db/lsm/mod.rs` is
/// `["db", "lsm"]`, `db/lsm/open.rs` is `["db", "lsm", "open"]`).
fn module_path(relative: &Path) -> Vec<String> {
    let mut parts: Vec<String> = relative
        .iter()
        .map(|c| c.to_string_lossy().trim_end_matches(".rs").to_string())
        .collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts
}

/// The `db` module (below `db`) each path of `line` names, resolved from
/// the file's module `here`: `crate::db::X::...` and `super::...::X`; a
/// root item (`crate::db::Db`) is the facade's `mod`.
fn db_targets(line: &str, here: &[String]) -> Vec<String> {
    let code = line.split("//").next().unwrap_or("");
    let mut found = Vec::new();
    let word_start =
        |at: usize| !code[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == ':');
    for (at, _) in code
        .match_indices("crate::db::")
        .filter(|(at, _)| word_start(*at))
    {
        found.push(first_segment(&code[at + "crate::db::".len()..]));
    }
    for (at, _) in code
        .match_indices("super::")
        .filter(|(at, _)| word_start(*at))
    {
        let mut rest = &code[at..];
        let mut path: Vec<String> = here.to_vec();
        while let Some(r) = rest.strip_prefix("super::") {
            path.pop();
            rest = r;
        }
        if path.len() == 1 && path[0] == "db" {
            found.push(first_segment(rest));
        } else if path.len() >= 2 && path[0] == "db" {
            found.push(path[1].clone());
        }
    }
    found
        .into_iter()
        .filter(|m| !m.is_empty() && m != "*")
        .map(|m| match m.chars().next() {
            Some(c) if c.is_uppercase() || c == '{' => "mod".to_string(),
            _ if m.chars().all(|c| c.is_uppercase() || c == '_') => "mod".to_string(),
            _ => m,
        })
        .collect()
}

fn first_segment(rest: &str) -> String {
    if rest.starts_with('{') {
        return "{".to_string();
    }
    let end = rest
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(rest.len());
    rest[..end].to_string()
}

#[test]
fn no_module_of_db_imports_a_higher_tier_or_the_other_engine() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src.join("db"), &mut files);
    let mut violations = Vec::new();
    for file in &files {
        let relative = file.strip_prefix(&src).expect("under src");
        let here = module_path(relative);
        let Some(own) = here.get(1).cloned() else {
            continue; // db/mod.rs: the facade's root may import anything
        };
        let name = relative.file_name().and_then(|n| n.to_str()).unwrap_or("");
        // Tests drive the store through the facade (`Db`); they still keep
        // to their own engine.
        let test_file = name.ends_with("tests.rs");
        let text = fs::read_to_string(file).expect("readable source");
        for (n, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("#[cfg(test)]") && !test_file {
                break; // a file's own test module comes last
            }
            for target in db_targets(line, &here) {
                if target == own || DB_EXCEPTIONS.contains(&(own.as_str(), target.as_str())) {
                    continue;
                }
                let other_engine =
                    DB_ENGINES.contains(&own.as_str()) && DB_ENGINES.contains(&target.as_str());
                let upward = db_tier(&target) > db_tier(&own) && !test_file;
                if other_engine
                    || upward
                    || (db_tier(&own) == db_tier(&target) && db_tier(&own) == 1)
                {
                    violations.push(format!(
                        "{}:{}: `db::{own}` imports `db::{target}`",
                        relative.display(),
                        n + 1
                    ));
                }
            }
        }
    }
    assert!(violations.is_empty(), "{}", violations.join("\n"));
}

#[test]
fn the_db_checker_resolves_paths() {
    let open = module_path(Path::new("db/chunked/open.rs"));
    assert_eq!(
        db_targets("use crate::db::lsm::tree::Tree;", &open),
        ["lsm"]
    );
    assert_eq!(db_targets("use crate::db::{Db, Keyspace};", &open), ["mod"]);
    assert_eq!(db_targets("use super::ChunkStore;", &open), ["chunked"]);
    let chunked = module_path(Path::new("db/chunked/mod.rs"));
    assert_eq!(
        db_targets("use super::read_only_fs::X;", &chunked),
        ["read_only_fs"]
    );
    assert_eq!(db_targets("use super::Keyspace;", &chunked), ["mod"]);
    assert!(db_targets("// crate::db::lsm", &open).is_empty());
}

#[test]
fn the_checker_sees_paths_and_ignores_comments() {
    assert_eq!(
        crate_paths("use crate::db::Snapshot; let x = crate::io::f();"),
        vec!["db", "io"]
    );
    assert!(crate_paths("// see crate::db").is_empty());
    assert!(crate_paths("use mycrate::db;").is_empty());
}
