//! The project's Markdown documents as the tests that run them read them:
//! a section under a `## ` heading, and its fenced blocks.

use std::path::Path;

/// The text of `file` (relative to the checkout's root).
pub fn read(file: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(file);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The section of `doc` (named `name` in a failure) that starts with the
/// heading `## title`, up to the next section.
pub fn section(name: &str, doc: &str, title: &str) -> String {
    let start = doc
        .find(&format!("\n## {title}\n"))
        .unwrap_or_else(|| panic!("{name} has a section {title:?}"));
    let rest = &doc[start + 1..];
    let end = rest[3..].find("\n## ").map_or(rest.len(), |i| i + 4);
    rest[..end].to_owned()
}

/// A fenced block: its language, the rest of its info line, its text.
pub struct Block {
    pub lang: String,
    pub info: String,
    pub text: String,
}

/// The fenced blocks of `section`, in order.
pub fn blocks(section: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut lines = section.lines();
    while let Some(line) = lines.next() {
        let Some(info) = line.strip_prefix("```") else {
            continue;
        };
        let (lang, info) = info.split_once(' ').unwrap_or((info, ""));
        let mut text = String::new();
        for line in lines.by_ref() {
            if line.starts_with("```") {
                break;
            }
            text.push_str(line);
            text.push('\n');
        }
        out.push(Block {
            lang: lang.trim().to_owned(),
            info: info.to_owned(),
            text,
        });
    }
    out
}
