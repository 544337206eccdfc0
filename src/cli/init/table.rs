//! One tool's table in a stub: its description, and every key it may set
//! suggested from what the tool's listing says (its own widget, a built-in
//! widget for records, its annotations, its file parameters), commented out;
//! and the TOML keys and strings a stub writes.

use std::fmt::Write as _;

use serde_json::Value;

use mcp_ui_overlay::overlay::builtin;
use mcp_ui_rewrite::rewrite::call::is_text_wrapper_schema;
use mcp_ui_rewrite::rewrite::file_param_problems;

/// Longest description line copied into a stub.
pub(super) const DESCRIPTION_CHARS: usize = 100;

/// The table of tool `name`: every key a suggestion, commented out.
pub(super) fn tool_table(out: &mut String, name: &str, tool: &Value) {
    let _ = writeln!(out, "\n[tools.{}]", toml_key(name));
    match tool.get("description").and_then(Value::as_str) {
        Some(text) if !text.trim().is_empty() => {
            let _ = writeln!(out, "# {}", one_line(text, DESCRIPTION_CHARS));
        }
        _ => out.push_str("# (no description)\n"),
    }
    let title = tool
        .get("title")
        .or_else(|| tool.get("annotations").and_then(|a| a.get("title")))
        .and_then(Value::as_str)
        .map(|t| one_line(t, DESCRIPTION_CHARS))
        .unwrap_or_else(|| humanize(name));
    match native_widget(tool) {
        // An MCP Apps tool already: its own template stays unless replaced.
        Some((key, uri)) => {
            let _ = writeln!(
                out,
                "# The server's own widget, kept: {key} = {}; a `widget` here would replace it.",
                one_line(&toml_string(uri), DESCRIPTION_CHARS)
            );
        }
        None => {
            let _ = writeln!(out, "# widget = {}", toml_string(&widget_name(name)));
            if let Some(proposal) = builtin_proposal(tool) {
                out.push_str(&proposal);
            }
        }
    }
    let _ = writeln!(out, "# title = {}", toml_string(&title));
    let _ = writeln!(out, "# visibility = {}", visibility(tool));
    out.push_str("# invoking = \"Working…\"\n");
    out.push_str("# invoked = \"Done\"\n");
    let hints = tool.get("annotations");
    let hint = |key: &str, default: bool| {
        hints
            .and_then(|h| h.get(key))
            .and_then(Value::as_bool)
            .unwrap_or(default)
    };
    let _ = writeln!(
        out,
        "# annotations = {{ readOnlyHint = {}, destructiveHint = {}, openWorldHint = {}, idempotentHint = {} }}",
        hint("readOnlyHint", false),
        hint("destructiveHint", true),
        hint("openWorldHint", true),
        hint("idempotentHint", false),
    );
    let files = file_param_candidates(tool);
    if !files.is_empty() {
        let names: Vec<String> = files.iter().map(|f| toml_string(f)).collect();
        let _ = writeln!(out, "# file_params = [{}]", names.join(", "));
    }
    // A tool with an outputSchema sends structuredContent itself.
    if tool.get("outputSchema").is_none() {
        out.push_str("# result = { structured_from_text = true }\n");
    }
}

/// The template a tool already declares (an MCP Apps or ChatGPT tool), with
/// the `_meta` key that says so.
fn native_widget(tool: &Value) -> Option<(&'static str, &str)> {
    let meta = tool.get("_meta")?;
    let keys = [
        (
            "_meta.ui.resourceUri",
            meta.get("ui").and_then(|ui| ui.get("resourceUri")),
        ),
        ("_meta[\"ui/resourceUri\"]", meta.get("ui/resourceUri")),
        (
            "_meta[\"openai/outputTemplate\"]",
            meta.get("openai/outputTemplate"),
        ),
    ];
    keys.into_iter()
        .find_map(|(key, uri)| Some((key, uri?.as_str()?)))
}

/// The tool's own `_meta.ui.visibility` as a TOML array when it declares a
/// valid one, else both audiences (MCP Apps' default).
fn visibility(tool: &Value) -> String {
    let own = tool
        .get("_meta")
        .and_then(|m| m.get("ui"))
        .and_then(|ui| ui.get("visibility"))
        .and_then(Value::as_array)
        .filter(|v| !v.is_empty())
        .and_then(|v| {
            v.iter()
                .map(|a| a.as_str().filter(|a| matches!(*a, "model" | "app")))
                .collect::<Option<Vec<&str>>>()
        });
    let audiences = own.unwrap_or_else(|| vec!["model", "app"]);
    let quoted: Vec<String> = audiences.iter().map(|a| toml_string(a)).collect();
    format!("[{}]", quoted.join(", "))
}

/// A built-in widget for a tool whose output schema describes lists of
/// records (a table of its array of objects, of the first when there are
/// several, with the `view.data` that picks it) or one record (key/value
/// pairs), as a commented alternative to a widget folder.
fn builtin_proposal(tool: &Value) -> Option<String> {
    let schema = tool
        .get("outputSchema")
        .filter(|s| !is_text_wrapper_schema(s))?;
    let properties = schema.get("properties")?.as_object()?;
    let arrays = builtin::default_array(schema);
    let records: Vec<&String> = arrays
        .iter()
        .filter(|name| {
            properties
                .get(name.as_str())
                .and_then(|p| builtin::schema_items(schema, p))
                .is_some_and(|items| items.get("properties").is_some_and(Value::is_object))
        })
        .collect();
    match records.as_slice() {
        [] => {}
        [only] if arrays.len() == 1 => {
            return Some(format!(
                "# or, with no HTML to write: widget = \"builtin:table\" (a table of `{}`; options in [tools.<name>.view])\n",
                one_line(only, DESCRIPTION_CHARS)
            ));
        }
        [first, rest @ ..] => {
            // Several arrays: the table needs to be told which one.
            let others: Vec<String> = rest
                .iter()
                .map(|n| {
                    format!(
                        "`/{}`",
                        one_line(&builtin::pointer_segment(n), DESCRIPTION_CHARS)
                    )
                })
                .collect();
            let also = if others.is_empty() {
                String::new()
            } else {
                format!("; or {}", others.join(", "))
            };
            return Some(format!(
                "# or, with no HTML to write: widget = \"builtin:table\" with the view below (a table of `{}`{also}; options in [tools.<name>.view])\n# view = {{ data = {} }}\n",
                one_line(first, DESCRIPTION_CHARS),
                toml_string(&format!("/{}", builtin::pointer_segment(first)))
            ));
        }
    }
    (!properties.is_empty()).then(|| {
        "# or, with no HTML to write: widget = \"builtin:kv\" (its fields as key/value pairs; options in [tools.<name>.view])\n".to_owned()
    })
}

/// Input properties already shaped as OpenAI file objects.
fn file_param_candidates(tool: &Value) -> Vec<String> {
    let schema = tool.get("inputSchema").unwrap_or(&Value::Null);
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    properties
        .keys()
        .filter(|p| file_param_problems(schema, p).is_empty())
        .cloned()
        .collect()
}

/// A TOML key: bare when it can be, quoted otherwise.
pub fn toml_key(name: &str) -> String {
    let bare = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if bare {
        name.to_owned()
    } else {
        toml_string(name)
    }
}

/// A TOML basic string, on one line whatever `text` holds.
pub fn toml_string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The first paragraph of `text` on one line, without control characters
/// (TOML comments may not hold them), cut at `max` characters.
pub(super) fn one_line(text: &str, max: usize) -> String {
    let paragraph = text.trim().split("\n\n").next().unwrap_or_default();
    let words: Vec<&str> = paragraph.split_whitespace().collect();
    let line: String = words
        .join(" ")
        .chars()
        .filter(|c| !c.is_control())
        .collect();
    if line.chars().count() <= max {
        return line;
    }
    let mut cut: String = line.chars().take(max - 1).collect();
    cut.push('…');
    cut
}

/// `list_tasks` → "List tasks": a title to start from.
pub(super) fn humanize(name: &str) -> String {
    let spaced = one_line(&name.replace(['_', '-', '.', '/'], " "), DESCRIPTION_CHARS);
    let mut chars = spaced.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => spaced,
    }
}

/// A valid widget folder name derived from the tool's name.
pub(super) fn widget_name(name: &str) -> String {
    let mut widget: String = name
        .chars()
        .map(|c| match c.to_ascii_lowercase() {
            c @ ('a'..='z' | '0'..='9' | '_' | '-') => c,
            _ => '-',
        })
        .take(63)
        .collect();
    if !widget.starts_with(|c: char| c.is_ascii_alphanumeric()) {
        widget = format!("w{}", &widget[..widget.len().min(62)]);
    }
    widget
}
