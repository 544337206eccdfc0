//! The source's shape, as ARCHITECTURE.md describes it: no module of the
//! product (the crates, the binary, the examples) grows past 1,000 lines,
//! where one concern has become several; and percent-decoding happens in one
//! place (`mcp_ui_wire::percent`), so every URL part is decoded by the same
//! rules, each caller saying only what a `+` means to it. And every Rust file of
//! `tests/` is a module of the one test binary, `tests/gateway.rs`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The product's sources: `src/`, `examples/` and each crate's `src/`.
fn product_sources() -> Vec<PathBuf> {
    let root = root();
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    rust_files(&root.join("examples"), &mut files);
    let crates = std::fs::read_dir(root.join("crates")).expect("crates/");
    for c in crates.flatten() {
        rust_files(&c.path().join("src"), &mut files);
    }
    assert!(files.len() > 100, "found only {} sources", files.len());
    files
}

fn relative(path: &Path) -> String {
    path.strip_prefix(root())
        .unwrap_or(path)
        .display()
        .to_string()
}

#[test]
fn no_module_grows_past_a_thousand_lines() {
    let long: Vec<String> = product_sources()
        .iter()
        .filter_map(|p| {
            let lines = std::fs::read_to_string(p).ok()?.lines().count();
            (lines > 1_000).then(|| format!("{} ({lines} lines)", relative(p)))
        })
        .collect();
    assert!(
        long.is_empty(),
        "split these into modules by concern, as the rest are: {}",
        long.join(", ")
    );
}

#[test]
fn percent_decoding_is_done_in_one_place() {
    let decoder = root().join("crates/wire/src/percent.rs");
    let elsewhere: Vec<String> = product_sources()
        .iter()
        .filter(|p| **p != decoder)
        .filter(|p| {
            std::fs::read_to_string(p).is_ok_and(|text| {
                text.contains("percent_decode_str")
                    || text.contains("percent_encoding::percent_decode")
            })
        })
        .map(|p| relative(p))
        .collect();
    assert!(
        elsewhere.is_empty(),
        "decode with mcp_ui_wire::percent::percent_decode instead: {}",
        elsewhere.join(", ")
    );
}

/// The modules `text` declares (`mod name;`, `pub mod name;`).
fn declared_modules(text: &str) -> BTreeSet<String> {
    text.lines()
        .map(|l| l.trim().trim_start_matches("pub "))
        .filter_map(|l| l.strip_prefix("mod ")?.strip_suffix(';'))
        .map(str::to_owned)
        .collect()
}

/// The modules `dir` holds: each `NAME.rs` but `skip`, each folder with a `mod.rs`,
/// and each other folder with Rust files in it (as `NAME/`, which no `mod` line names).
fn modules_in(dir: &Path, skip: &[&str]) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let (path, name) = (
            entry.path(),
            entry.file_name().to_string_lossy().into_owned(),
        );
        if skip.contains(&name.as_str()) {
            continue;
        }
        if let Some(stem) = name.strip_suffix(".rs") {
            found.insert(stem.to_owned());
        } else if path.join("mod.rs").is_file() {
            found.insert(name);
        } else if path.is_dir() && !dir.join(format!("{name}.rs")).is_file() {
            let mut files = std::fs::read_dir(&path).unwrap().flatten();
            if files.any(|f| f.path().extension().is_some_and(|e| e == "rs")) {
                found.insert(format!("{name}/"));
            }
        }
    }
    found
}

/// `autotests = false` (Cargo.toml): tests/gateway.rs is the only test binary, so a
/// file its modules do not declare would compile nowhere and its tests never run.
#[test]
fn every_test_file_is_a_module_of_the_test_binary() {
    let tests = root().join("tests");
    // The fixture server is a [[bin]] of its own.
    let skip = ["gateway.rs", "fixture_server"];
    let mut pending = vec![(tests.join("gateway.rs"), tests.clone(), &skip[..])];
    while let Some((file, dir, skip)) = pending.pop() {
        let text = std::fs::read_to_string(&file).unwrap();
        let found = modules_in(&dir, skip);
        let declared = declared_modules(&text);
        let undeclared: Vec<&String> = found.difference(&declared).collect();
        assert!(
            undeclared.is_empty(),
            "{}: declare {undeclared:?} (`mod NAME;`, a folder with a mod.rs), or they never run",
            relative(&file),
        );
        for name in found {
            let (own, sub) = (dir.join(format!("{name}.rs")), dir.join(&name));
            if own.is_file() && sub.is_dir() {
                pending.push((own, sub, &[]));
            } else if sub.join("mod.rs").is_file() {
                pending.push((sub.join("mod.rs"), sub, &["mod.rs"]));
            }
        }
    }
}
