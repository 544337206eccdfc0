//! The source's shape, as ARCHITECTURE.md describes it: no module of the
//! product (the crates, the binary, the examples) grows past 1,000 lines,
//! where one concern has become several; and percent-decoding happens in one
//! place (`mcp_ui_wire::percent`), so every URL part is decoded by the same
//! rules, each caller saying only what a `+` means to it.

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
