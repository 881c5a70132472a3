//! The engine's layers, lowest first: a module may import its own layer and
//! the ones below it, never one above (`docs/architecture.md`). This test
//! reads every source file and fails on an import that points upwards.

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

#[test]
fn the_checker_sees_paths_and_ignores_comments() {
    assert_eq!(
        crate_paths("use crate::db::Snapshot; let x = crate::io::f();"),
        vec!["db", "io"]
    );
    assert!(crate_paths("// see crate::db").is_empty());
    assert!(crate_paths("use mycrate::db;").is_empty());
}
