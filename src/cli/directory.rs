//! The app directories' rules: what ChatGPT's app review and Claude's
//! connector directory ask of the tools, widgets and sign-in an app lists,
//! checked over the overlays, the facts of the configuration they need,
//! each upstream's live `tools/list` when it is known, and the widget
//! heights `check` measured. Pure: `check` gathers the inputs and prints the
//! findings, as warnings, or as problems with `--strict`; `--host` chooses
//! whose directory's rules apply ([`Hosts`]), each finding naming the hosts
//! that ask for it ([`Rule::hosts`]).
//!
//! It sits beside `check` rather than in `overlay::validate` because it
//! reads listings as the rewrites do (the Python SDK's text wrapper schema).
//!
//! Rules that need a listing (the upstream's titles, annotations, schemas
//! and `_meta`) are skipped for an upstream whose listing is not known
//! (`check --offline`); the others apply to the files alone. ChatGPT's own
//! rules are in [`chatgpt`], Claude's in [`claude`]; the hints both ask for
//! are here.

use serde_json::Value;

use super::init::table::toml_key;
use mcp_ui_overlay::overlay::{ToolOverlay, ToolSite};

mod chatgpt;
pub mod claude;
mod model;

pub use chatgpt::has_chatgpt_domain;
use model::Located;
pub use model::{
    CLAUDE_INLINE_MAX_PX, Finding, Height, Host, Hosts, Input, Measured, REQUIRED_HINTS, Rule,
    SignIn, SignInKind, Upstream,
};

#[cfg(test)]
mod tests;

/// Every finding the chosen hosts ask for: the tools' (overlaid, then the
/// listed ones no overlay names), the widgets', the render tools', the
/// helpers', the endpoints' and the heights'. Render tools always carry the
/// three hints (the gateway's defaults, merged under the overlay's) and an
/// output schema, so only their titles and widgets are checked.
pub fn findings(input: &Input<'_>) -> Vec<Finding> {
    let mut out = Vec::new();
    for site in input.tools {
        let Some(overlay) = &site.overlay else {
            continue;
        };
        let Some(upstream) = input.upstreams.iter().find(|u| u.mount == site.mount) else {
            continue;
        };
        // `None` offline; `Some(None)` for a tool the listing lacks (reported
        // elsewhere as unknown): the listing's rules skip both.
        let listed = upstream
            .tools
            .map(|tools| tools.iter().find(|t| t["name"] == site.tool.as_str()));
        let tool = listed.flatten();
        let at = Located { site, new: false };
        if let Some(tool) = tool {
            out.extend(annotations(&at, overlay, tool));
            out.extend(claude::title(&at, overlay, tool));
            out.extend(chatgpt::native_ui(&at, overlay, tool));
        }
        if listed.is_none() || tool.is_some() {
            out.extend(chatgpt::output_schema(&at, overlay, tool));
        }
        out.extend(chatgpt::oauth_in_band(&at, overlay, upstream, tool));
    }
    for upstream in input.upstreams {
        out.extend(unoverlaid(input, upstream));
    }
    out.extend(chatgpt::widget_domains(input));
    out.extend(claude::render_titles(input));
    out.extend(claude::helpers(input));
    out.extend(input.sign_ins.iter().filter_map(claude::sign_in));
    out.extend(input.heights.iter().filter_map(claude::height));
    out.retain(|f| input.hosts.ask(f.rule));
    out
}

/// The hints and title of the tools `upstream` lists that no overlay table
/// names: what a new `[tools.<name>]` table in its file would set.
fn unoverlaid(input: &Input<'_>, upstream: &Upstream<'_>) -> Vec<Finding> {
    let mut out = Vec::new();
    let written = |name: &str| {
        input
            .tools
            .iter()
            .any(|s| s.mount == upstream.mount && s.tool == name)
    };
    let blank = ToolOverlay::default();
    for tool in upstream.tools.unwrap_or_default() {
        let Some(name) = tool.get("name").and_then(Value::as_str) else {
            continue;
        };
        if written(name) {
            continue;
        }
        let site = ToolSite {
            file: upstream.file.to_path_buf(),
            line: None,
            mount: upstream.mount.to_owned(),
            tool: name.to_owned(),
            key: name.to_owned(),
            overlay: None,
        };
        let at = Located {
            site: &site,
            new: true,
        };
        out.extend(annotations(&at, &blank, tool));
        out.extend(claude::title(&at, &blank, tool));
    }
    out
}

/// [`Rule::Annotations`]: the hints the overlay and the upstream set
/// together, and the overlay lines that would set the missing ones.
fn annotations(at: &Located<'_>, overlay: &ToolOverlay, tool: &Value) -> Option<Finding> {
    let upstream = |key: &str| tool.get("annotations")?.get(key)?.as_bool();
    let ours: Vec<(&str, bool)> = overlay
        .annotations
        .map(|a| a.entries().collect())
        .unwrap_or_default();
    let hint = |key: &str| {
        ours.iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| *v)
            .or_else(|| upstream(key))
    };
    let missing: Vec<&str> = REQUIRED_HINTS
        .into_iter()
        .filter(|key| hint(key).is_none())
        .collect();
    if missing.is_empty() {
        return None;
    }
    let read_only = hint("readOnlyHint") == Some(true);
    let lines: Vec<(&str, bool, &str)> = missing
        .iter()
        .map(|key| match *key {
            "readOnlyHint" => (*key, false, "true if it changes nothing"),
            "destructiveHint" if read_only => (*key, false, "it only reads"),
            "destructiveHint" => (*key, true, "false if it never deletes nor overwrites"),
            _ => (
                *key,
                true,
                "false if it reaches nothing beyond its own data",
            ),
        })
        .collect();
    let name = &at.site.key;
    let table = overlay.annotations.is_some();
    let add = if at.is_json() {
        let pairs: Vec<String> = lines
            .iter()
            .map(|(key, value, _)| format!("\"{key}\": {value}"))
            .collect();
        if table {
            format!(
                "add to the \"annotations\" of tool {name:?}, with the values true of the tool (shown: MCP's defaults):\n    {}",
                pairs.join(", ")
            )
        } else {
            format!(
                "add to tool {name:?}, with the values true of the tool (shown: MCP's defaults):\n    \"annotations\": {{ {} }}",
                pairs.join(", ")
            )
        }
    } else {
        let mut text = String::from("add, with the values true of the tool:");
        let header = format!("[tools.{}.annotations]", toml_key(name));
        if table {
            text = format!(
                "add to its annotations ({header} or the inline table), with the values true of the tool:"
            );
        } else {
            text.push_str(&format!("\n    {header}"));
        }
        for (key, value, note) in &lines {
            text.push_str(&format!("\n    {key} = {value}  # {note}"));
        }
        text
    };
    let message = format!(
        "{} missing from its annotations (ChatGPT's app review and Claude's directory require readOnlyHint, destructiveHint and openWorldHint; without them hosts assume a tool that writes, destroys and reaches the outside world); {add}",
        missing.join(", ")
    );
    Some(at.finding(Rule::Annotations, "annotations", message))
}
