//! `mcp-ui-gateway init`: a starting point for the overlays of an upstream,
//! written from its live `tools/list`: `<dir>/<mount>.toml` with one table
//! per tool whose keys are all commented out. The file changes nothing until
//! the operator uncomments something, so it passes `check` as written and is
//! safe to drop into a directory a running gateway watches.
//!
//! It never replaces a file without `--force`, and leaves out tools another
//! file of the same mount already overlays (a tool may be overlaid in one
//! file only).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{describe_transport, list};
use crate::config::{Limits, Mount};
use crate::overlay::builtin;
use crate::overlay::{Inspection, inspect_dir_within};
use crate::probe::{self, Listing, Prober};
use crate::rewrite::call::is_text_wrapper_schema;
use crate::rewrite::file_param_problems;

/// The editor schemas, written next to the stubs when missing so that the
/// `#:schema` line of a stub resolves in a fresh directory.
const SCHEMAS: [(&str, &str); 2] = [
    (
        "overlay.schema.json",
        include_str!("../../overlays/schema/overlay.schema.json"),
    ),
    (
        "widget.schema.json",
        include_str!("../../overlays/schema/widget.schema.json"),
    ),
];
/// Longest description line copied into a stub.
const DESCRIPTION_CHARS: usize = 100;

#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Only this upstream (default: every configured one).
    pub upstream: Option<String>,
    /// Replace existing stub files.
    pub force: bool,
}

/// What `init` did.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    /// One line per file written.
    pub written: Vec<String>,
    /// One line per upstream that got no file, and why.
    pub failures: Vec<String>,
}

/// Writes a stub for each upstream (or the one named in `options`) into
/// `dir`, creating it if needed. `Err` is for a usage error (an upstream
/// name that is not configured); per-upstream failures are in the outcome.
pub async fn run(
    dir: &Path,
    mounts: &[Mount],
    limits: &Limits,
    options: &Options,
    progress: &mut dyn Write,
) -> Result<Outcome, String> {
    let targets: Vec<&Mount> = match &options.upstream {
        Some(name) => match mounts.iter().find(|m| &m.name == name) {
            Some(mount) => vec![mount],
            None => {
                return Err(format!(
                    "no upstream named '{name}' is configured (configured: {}); for one that is not, give its --upstream URL, --upstream-sse URL or `-- COMMAND` with --name {name}",
                    list(mounts.iter().map(|m| &m.name))
                ));
            }
        },
        None => mounts.iter().collect(),
    };
    let mut outcome = Outcome::default();
    if let Err(e) = fs::create_dir_all(dir) {
        outcome
            .failures
            .push(format!("cannot create {}: {e}", dir.display()));
        return Ok(outcome);
    }
    let inspection = inspect_dir_within(dir, limits.max_widget_bytes);
    for mount in targets {
        let path = dir.join(format!("{}.toml", mount.name));
        if mount.name.starts_with('.') {
            outcome.failures.push(format!(
                "upstream '{}': {} would be a dot file, which the gateway ignores; write its overlays in a file with `upstream = \"{}\"`",
                mount.name,
                path.display(),
                mount.name
            ));
            continue;
        }
        if path.exists() && !options.force {
            outcome.failures.push(format!(
                "{} exists; not overwritten (use --force to replace it)",
                path.display()
            ));
            continue;
        }
        let _ = writeln!(
            progress,
            "fetching the tools of upstream '{}' ({})",
            mount.name,
            describe_transport(mount)
        );
        let listing = match probe::list_tools(mount, limits, Prober::Command).await {
            Ok(listing) => listing,
            Err(e) => {
                outcome.failures.push(e.to_string());
                continue;
            }
        };
        let elsewhere = overlaid_elsewhere(&inspection, &mount.name, &path);
        let (text, stubs) = stub(&mount.name, &listing, &elsewhere);
        match write_atomically(&path, &text) {
            Ok(()) => {
                let server = listing
                    .server()
                    .map(|s| format!(" ({s})"))
                    .unwrap_or_default();
                outcome.written.push(format!(
                    "wrote {}: {} of upstream '{}'{server}",
                    path.display(),
                    plural(stubs, "tool stub"),
                    mount.name
                ));
            }
            Err(e) => outcome
                .failures
                .push(format!("cannot write {}: {e}", path.display())),
        }
    }
    // Only next to a stub: a refusal leaves the directory as it was.
    if !outcome.written.is_empty() {
        write_schemas(dir, &mut outcome);
    }
    Ok(outcome)
}

fn plural(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

fn write_schemas(dir: &Path, outcome: &mut Outcome) {
    let schema_dir = dir.join("schema");
    for (name, text) in SCHEMAS {
        let path = schema_dir.join(name);
        if path.exists() {
            continue;
        }
        let written = fs::create_dir_all(&schema_dir).and_then(|()| write_atomically(&path, text));
        match written {
            Ok(()) => outcome
                .written
                .push(format!("wrote {} (for editors)", path.display())),
            Err(e) => outcome
                .failures
                .push(format!("cannot write {}: {e}", path.display())),
        }
    }
}

/// Tools of `mount` that files other than `except` already overlay, with the
/// file that does.
fn overlaid_elsewhere<'a>(
    inspection: &'a Inspection,
    mount: &str,
    except: &Path,
) -> BTreeMap<&'a str, &'a Path> {
    inspection
        .tools
        .iter()
        .filter(|site| site.mount == mount && site.file != except)
        .map(|site| (site.tool.as_str(), site.file.as_path()))
        .collect()
}

/// Writes through a dot file and a rename: a gateway watching the directory
/// must never load half a file (it ignores dot files).
fn write_atomically(path: &Path, text: &str) -> std::io::Result<()> {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("overlay");
    let temporary: PathBuf = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    fs::write(&temporary, text)?;
    fs::rename(&temporary, path).inspect_err(|_| {
        let _ = fs::remove_file(&temporary);
    })
}

/// The stub file for `listing`, and how many tool tables it has. Tools in
/// `elsewhere` get a comment instead of a table.
pub fn stub(mount: &str, listing: &Listing, elsewhere: &BTreeMap<&str, &Path>) -> (String, usize) {
    let mut out = String::from("#:schema ./schema/overlay.schema.json\n");
    let server = listing
        .server()
        .map(|s| format!(" ({})", one_line(&s, DESCRIPTION_CHARS)))
        .unwrap_or_default();
    let _ = write!(
        out,
        "\
# Overlays for the tools of upstream '{mount}'{server},
# written by `mcp-ui-gateway init`. Every key is commented out, so this file
# changes nothing yet: uncomment what a tool needs (docs/overlays.md of
# mcp-ui-gateway describes every key), delete the tables of tools you leave
# alone, then run `mcp-ui-gateway check`.
#
# The annotations shown are the tool's own, or MCP's defaults when it has
# none; ChatGPT wants readOnlyHint, destructiveHint and openWorldHint set.
"
    );
    let mut seen = BTreeSet::new();
    let mut stubs = 0;
    for tool in &listing.tools {
        let Some(name) = tool.get("name").and_then(Value::as_str) else {
            continue;
        };
        // A repeated name would be a repeated table: invalid TOML.
        if !seen.insert(name) {
            continue;
        }
        if let Some(file) = elsewhere.get(name) {
            let _ = writeln!(
                out,
                "\n# {}: overlaid in {}",
                one_line(&toml_key(name), DESCRIPTION_CHARS),
                file.display()
            );
            continue;
        }
        stubs += 1;
        tool_table(&mut out, name, tool);
    }
    if seen.is_empty() {
        out.push_str("\n# The upstream lists no tools.\n");
    }
    (out, stubs)
}

fn tool_table(out: &mut String, name: &str, tool: &Value) {
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
fn one_line(text: &str, max: usize) -> String {
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
fn humanize(name: &str) -> String {
    let spaced = one_line(&name.replace(['_', '-', '.', '/'], " "), DESCRIPTION_CHARS);
    let mut chars = spaced.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => spaced,
    }
}

/// A valid widget folder name derived from the tool's name.
fn widget_name(name: &str) -> String {
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

#[cfg(test)]
mod tests;
