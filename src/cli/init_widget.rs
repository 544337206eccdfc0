//! `init --widget NAME`: a minimal widget folder to start from, an
//! `index.html` that speaks the MCP Apps bridge and `window.openai`, and a
//! `widget.toml` whose comments show the keys a bundler's output needs.

use std::path::{Path, PathBuf};

use mcp_ui_overlay::overlay::load::WIDGETS_DIR;
use mcp_ui_overlay::overlay::validate;

const INDEX: &str = include_str!("init_widget/index.html");

fn manifest(name: &str) -> String {
    format!(
        r#"#:schema ../../schema/widget.schema.json
# The widget `{name}`: name it from a tool overlay with `widget = "{name}"`.
title = "{name}"
prefers_border = true

# With a bundler, point `entry` at its output, such as Vite's:
# entry = "dist/index.html"
# A leading `/` in it resolves in the entry's folder (or `base`).
# Images and media up to `inline_limit` bytes (8192) become data: URIs; module
# chunks, fonts and larger files are served by the gateway under public_url.
"#
    )
}

/// Writes `<overlays>/widgets/<name>/{index.html,widget.toml}`; returns
/// the files written. An existing file is kept unless `force`.
pub fn run(overlays: &Path, name: &str, force: bool) -> Result<Vec<PathBuf>, String> {
    validate::widget_name(name).map_err(|reason| format!("widget name `{name}`: {reason}"))?;
    let folder = overlays.join(WIDGETS_DIR).join(name);
    let files = [
        (folder.join("index.html"), INDEX.replace("{{NAME}}", name)),
        (folder.join("widget.toml"), manifest(name)),
    ];
    if !force && let Some((path, _)) = files.iter().find(|(path, _)| path.exists()) {
        return Err(format!(
            "{} exists; pass --force to replace it",
            path.display()
        ));
    }
    std::fs::create_dir_all(&folder)
        .map_err(|e| format!("cannot create {}: {e}", folder.display()))?;
    let mut written = Vec::new();
    for (path, text) in files {
        std::fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        written.push(path);
    }
    Ok(written)
}
