//! `window.openai` for MCP Apps hosts. A widget written against ChatGPT's
//! Apps SDK reads `window.openai` and never starts the `ui/*` handshake, so
//! an MCP Apps host (Claude, VS Code, Goose, the AppBridge) shows it empty.
//! Such a widget gets a small script first in its document
//! (`openai_bridge.js`) that implements `window.openai` with `ui/*`
//! messages; in ChatGPT, where `window.openai` exists, the script does
//! nothing.

use super::{Asset, compact};
use crate::overlay::format::BridgeKind;

/// The script, as written; [`inject`] puts it in compacted.
const SCRIPT: &str = include_str!("openai_bridge.js");

/// Which bridge a widget's code speaks: `OpenAi` when it uses `window.openai`
/// (or listens for `openai:set_globals`) and never sends `ui/initialize`,
/// in its document or any script the gateway serves for it.
pub fn detect(html: &str, assets: &[Asset]) -> BridgeKind {
    let scripts = assets
        .iter()
        .filter(|a| a.media_type.contains("javascript"))
        .filter_map(|a| std::str::from_utf8(&a.body).ok());
    let (mut openai, mut mcp_apps) = (false, false);
    for code in std::iter::once(html).chain(scripts) {
        openai |= ["window.openai", "globalThis.openai", "openai:set_globals"]
            .iter()
            .any(|use_| code.contains(use_));
        mcp_apps |= code.contains("ui/initialize");
    }
    if openai && !mcp_apps {
        BridgeKind::OpenAi
    } else {
        BridgeKind::McpApps
    }
}

/// The document with the bridge script first in its `<head>` (one is made
/// after `<html>` or the doctype when there is none), so it runs before any
/// of the widget's own scripts.
pub fn inject(html: &str) -> String {
    let script = format!("<script>{}</script>", compact(SCRIPT));
    let (at, wrap) = match open_tag(html, "head") {
        Some(end) => (end, false),
        None => (
            open_tag(html, "html")
                .or_else(|| open_tag(html, "!doctype"))
                .unwrap_or(0),
            true,
        ),
    };
    let mut out = String::with_capacity(html.len() + script.len() + 13);
    out.push_str(&html[..at]);
    if wrap {
        out.push_str("<head>");
    }
    out.push_str(&script);
    if wrap {
        out.push_str("</head>");
    }
    out.push_str(&html[at..]);
    out
}

/// Where the first `<name …>` start tag ends (after its `>`), matched
/// case-insensitively and not as the start of a longer name (`<header>`).
fn open_tag(html: &str, name: &str) -> Option<usize> {
    let lower = html.to_ascii_lowercase();
    let needle = format!("<{name}");
    let mut from = 0;
    while let Some(found) = lower[from..].find(&needle) {
        let after = from + found + needle.len();
        match lower.as_bytes().get(after) {
            Some(b'>' | b' ' | b'\t' | b'\n' | b'\r' | b'\x0c' | b'/') => {
                return lower[after..].find('>').map(|end| after + end + 1);
            }
            _ => from = after,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The size of the script as [`inject`] writes it.
    fn script_len() -> usize {
        compact(SCRIPT).len() + "<script></script>".len()
    }

    fn js(body: &str) -> Asset {
        Asset {
            path: "assets/index.js".into(),
            media_type: "text/javascript",
            body: body.as_bytes().to_vec().into(),
        }
    }

    #[test]
    fn a_widget_that_only_knows_window_openai_gets_the_bridge() {
        let openai = "<script>const o = window.openai?.toolOutput;</script>";
        assert_eq!(detect(openai, &[]), BridgeKind::OpenAi);
        // In a served module, as a bundler leaves it.
        let doc = "<script type=module src=./assets/index.js></script>";
        let hooks = js("addEventListener(\"openai:set_globals\",f)");
        assert_eq!(detect(doc, &[hooks]), BridgeKind::OpenAi);
        // Both: the widget starts the MCP Apps handshake itself.
        let both = js("window.openai??post({method:\"ui/initialize\"})");
        assert_eq!(detect(doc, &[both]), BridgeKind::McpApps);
        assert_eq!(detect("<p>static</p>", &[]), BridgeKind::McpApps);
    }

    #[test]
    fn the_script_goes_first_in_the_head_or_a_head_made_for_it() {
        let at = |html: &str| {
            let out = inject(html);
            let start = out.find("<script>").unwrap();
            (
                out[..start].to_owned(),
                out[start..].contains("window.openai"),
            )
        };
        assert_eq!(
            at("<!doctype html><html lang=en><HEAD data-x><script>app()</script></head>"),
            ("<!doctype html><html lang=en><HEAD data-x>".into(), true)
        );
        assert_eq!(
            at("<!DOCTYPE html>\n<html><header>h</header>"),
            ("<!DOCTYPE html>\n<html><head>".into(), true)
        );
        assert_eq!(
            at("<!doctype html><p>x</p>"),
            ("<!doctype html><head>".into(), true)
        );
        assert_eq!(at("<p>x</p>"), ("<head>".into(), true));
    }

    /// A few KiB, as promised in the docs.
    #[test]
    fn the_script_is_small() {
        let n = script_len();
        eprintln!("window.openai bridge: {n} bytes");
        assert!(n < 8 * 1024, "{n} bytes");
    }
}
