//! The overlay loader on arbitrary files: a mount file (TOML, or JSON when it
//! starts with `{`), and one widget's manifest, HTML entry, script and
//! stylesheet, separated by NUL bytes in the input. Loading never panics,
//! every problem names a file inside the directory and a reason, and what
//! loads is consistent (tools name widgets that exist, URIs are unique).
#![no_main]

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use mcp_ui_overlay::overlay::load::{inspect_dir, load_dir};

/// Files written from the input's NUL-separated parts, in order.
const FILES: [&str; 5] = [
    "", // the mount file: demo.toml or demo.json
    "widgets/task-board/widget.toml",
    "widgets/task-board/index.html",
    "widgets/task-board/app.js",
    "widgets/task-board/style.css",
];

/// One directory per fuzzing process, rewritten for every input.
fn dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let base = Path::new("/dev/shm");
        let base = if base.is_dir() {
            base.to_path_buf()
        } else {
            std::env::temp_dir()
        };
        let dir = base.join(format!(
            "mcp-ui-gateway-fuzz-overlay-{}",
            std::process::id()
        ));
        fs::create_dir_all(dir.join("widgets/task-board")).expect("create the overlay directory");
        dir
    })
}

fuzz_target!(|data: &[u8]| {
    let dir = dir();
    let mut parts = data.splitn(FILES.len(), |&b| b == 0);
    let mount = parts.next().unwrap_or_default();
    let json = mount.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{');
    let (mount_name, other) = if json {
        ("demo.json", "demo.toml")
    } else {
        ("demo.toml", "demo.json")
    };
    let _ = fs::remove_file(dir.join(other));
    fs::write(dir.join(mount_name), mount).expect("write the mount file");
    for file in &FILES[1..] {
        let path = dir.join(file);
        match parts.next() {
            Some(content) => fs::write(&path, content).expect("write a widget file"),
            None => {
                let _ = fs::remove_file(&path);
            }
        }
    }

    let inspection = inspect_dir(dir);
    for error in &inspection.errors {
        assert!(
            error.file.starts_with(dir),
            "a problem names a file in the directory: {error}"
        );
        assert!(
            !error.reason.is_empty(),
            "a problem has a reason: {error:?}"
        );
        assert!(error.line.is_none_or(|l| l >= 1), "lines are 1-based");
        let _ = error.to_string();
    }
    let loaded = load_dir(dir);
    assert_eq!(loaded.is_ok(), inspection.errors.is_empty());
    let complete = loaded.is_ok();
    let set = match loaded {
        Ok(set) => set,
        Err(errors) => {
            assert!(!errors.0.is_empty());
            let _ = errors.to_string();
            inspection.set
        }
    };
    // What passed the checks hangs together.
    let widgets = set.widgets();
    let mut uris = BTreeSet::new();
    for widget in widgets.iter() {
        assert!(uris.insert(widget.uri.clone()), "widget URIs are unique");
        assert!(widget.uri.starts_with("ui://"), "{}", widget.uri);
        assert!(widgets.by_uri(&widget.uri).is_some());
    }
    for (_, mount) in set.mounts() {
        for (name, tool) in mount.tools() {
            // A partial inspection (problems found) may keep a tool whose
            // widget failed: that failure is among the problems reported.
            if let (true, Some(widget)) = (complete, &tool.widget) {
                assert!(
                    widgets.get(widget).is_some(),
                    "tool {name} names widget {widget}, which did not load"
                );
            }
        }
    }
});
