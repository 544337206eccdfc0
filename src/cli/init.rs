//! `mcp-ui-gateway init`: a starting point for the overlays of an upstream,
//! written from its live `tools/list`: `<dir>/<mount>.toml` with one table
//! per tool whose keys are all commented out. The file changes nothing until
//! the operator uncomments something, so it passes `check` as written and is
//! safe to drop into a directory a running gateway watches.
//!
//! It never replaces a file without `--force`, and leaves out tools another
//! file of the same mount already overlays (a tool may be overlaid in one
//! file only).
//!
//! - [`table`]: one tool's table of commented-out suggestions, and the TOML
//!   keys and strings a stub writes.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{describe_transport, list};
use mcp_ui_model::config::{Limits, Mount};
use mcp_ui_overlay::overlay::{Inspection, inspect_dir_within};
use mcp_ui_upstream::probe::{self, Listing, Prober};

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
pub mod table;

use table::{DESCRIPTION_CHARS, one_line, toml_key, tool_table};

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
        match init_one(dir, mount, &inspection, limits, options, progress).await {
            Ok(written) => outcome.written.push(written),
            Err(failure) => outcome.failures.push(failure),
        }
    }
    // Only next to a stub: a refusal leaves the directory as it was.
    if !outcome.written.is_empty() {
        write_schemas(dir, &mut outcome);
    }
    Ok(outcome)
}

/// Writes the stub of `mount` into `dir`: the line saying what was
/// written, or why nothing was.
async fn init_one(
    dir: &Path,
    mount: &Mount,
    inspection: &Inspection,
    limits: &Limits,
    options: &Options,
    progress: &mut dyn Write,
) -> Result<String, String> {
    let path = dir.join(format!("{}.toml", mount.name));
    if mount.name.starts_with('.') {
        return Err(format!(
            "upstream '{}': {} would be a dot file, which the gateway ignores; write its overlays in a file with `upstream = \"{}\"`",
            mount.name,
            path.display(),
            mount.name
        ));
    }
    if path.exists() && !options.force {
        return Err(format!(
            "{} exists; not overwritten (use --force to replace it)",
            path.display()
        ));
    }
    let _ = writeln!(
        progress,
        "fetching the tools of upstream '{}' ({})",
        mount.name,
        describe_transport(mount)
    );
    let listing = probe::list_tools(mount, limits, Prober::Command)
        .await
        .map_err(|e| e.to_string())?;
    let elsewhere = overlaid_elsewhere(inspection, &mount.name, &path);
    let (text, stubs) = stub(&mount.name, &listing, &elsewhere);
    match write_atomically(&path, &text) {
        Ok(()) => {
            let server = listing
                .server()
                .map(|s| format!(" ({s})"))
                .unwrap_or_default();
            Ok(format!(
                "wrote {}: {} of upstream '{}'{server}",
                path.display(),
                plural(stubs, "tool stub"),
                mount.name
            ))
        }
        Err(e) => Err(format!("cannot write {}: {e}", path.display())),
    }
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

#[cfg(test)]
mod tests;
