//! The demo's overlays, built into the binary: run where no `overlays/`
//! directory is (outside a checkout), the binary serves the bundled demo as
//! the checkout does, widgets included.

use std::path::Path;

/// Each file the demo's overlays need, by its path in the directory.
pub const FILES: &[(&str, &str)] = &[
    ("demo.toml", include_str!("../../overlays/demo.toml")),
    (
        "widgets/task-board/widget.toml",
        include_str!("../../overlays/widgets/task-board/widget.toml"),
    ),
    (
        "widgets/task-board/index.html",
        include_str!("../../overlays/widgets/task-board/index.html"),
    ),
    (
        "widgets/task-board/app.js",
        include_str!("../../overlays/widgets/task-board/app.js"),
    ),
    (
        "widgets/task-board/style.css",
        include_str!("../../overlays/widgets/task-board/style.css"),
    ),
];

/// Writes the files under `dir`.
pub fn write(dir: &Path) -> std::io::Result<()> {
    for (path, text) in FILES {
        let path = dir.join(path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(path, text)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    /// The built-in copy is the whole demo overlay directory (but its docs
    /// and editor schemas): a file added there is added here too.
    #[test]
    fn every_file_of_the_demo_overlays_is_built_in() {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/overlays");
        let mut on_disk = Vec::new();
        let mut todo = vec![std::path::PathBuf::from(root)];
        while let Some(dir) = todo.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                let rel = path.strip_prefix(root).unwrap().display().to_string();
                if path.is_dir() {
                    if rel != "schema" {
                        todo.push(path);
                    }
                } else if rel != "README.md" {
                    on_disk.push(rel);
                }
            }
        }
        on_disk.sort();
        let mut built_in: Vec<String> = super::FILES.iter().map(|(p, _)| p.to_string()).collect();
        built_in.sort();
        assert_eq!(built_in, on_disk);
    }
}
