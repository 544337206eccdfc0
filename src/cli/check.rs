//! `mcp-ui-gateway check`: every problem of an overlay directory in one run,
//! one per line, each naming the file, the line and the key, so that one
//! edit-check cycle fixes them all.
//!
//! Three layers, each reporting everything it finds:
//! 1. what loading reports (syntax, unknown keys, missing widgets, status
//!    text over 64 characters, malformed CSP origins, …), the very errors the
//!    gateway would log on a reload;
//! 2. overlay files naming an upstream that is not configured, which the
//!    gateway would silently never apply;
//! 3. unless offline, each overlaid upstream's live `tools/list`: tools it
//!    does not have, file parameters its input schema cannot carry, result
//!    shaping that cannot work with the tool as it is, and render tools
//!    whose name an upstream tool takes (a collision: the upstream wins).
//!
//! Hazards that only might be problems (it depends on results no listing
//! shows) are warnings: printed, but they do not fail the check. So are the
//! app directories' rules ([`super::directory`]), unless `--strict` makes
//! them problems.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{describe_transport, directory};
use crate::config::{AuthChallenge, Limits, Mount};
use crate::overlay::builtin::{View, is_builtin_name};
use crate::overlay::load::WIDGETS_DIR;
use crate::overlay::validate::builtin;
use crate::overlay::{
    BridgeKind, Inspection, LoadError, LoadOptions, RenderSite, ToolOverlay, ToolSite,
    inspect_dir_with,
};
use crate::probe::{self, Listing};
use crate::rewrite::call::is_text_wrapper_schema;
use crate::rewrite::file_param_problems;

/// How many of an upstream's tool names an "unknown tool" message lists.

#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Skip the live `tools/list` of the upstreams.
    pub offline: bool,
    /// The app directories' rules are problems, not warnings.
    pub strict: bool,
    /// The gateway's `public_url`, when configured.
    pub public_url: Option<String>,
    /// The `[[app]]` endpoints an overlay file may name.
    pub apps: Vec<crate::overlay::AppScope>,
    /// The directory was named (`--overlays`): it must exist.
    pub dir_named: bool,
}

/// Everything `check` found. A finding reads `file:line: key.path: reason`,
/// like the gateway's own reload errors.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// What must be fixed; any makes the check fail.
    pub problems: Vec<LoadError>,
    /// What may be wrong, depending on what the upstream returns.
    pub warnings: Vec<LoadError>,
    /// The overlay directory, for the summary.
    dir: PathBuf,
    files: usize,
    tools: usize,
    widgets: usize,
    offline: bool,
    /// Upstreams checked live, with their number of tools.
    checked: Vec<(String, usize)>,
    /// A line per widget folder: the bridge its code speaks, and how the
    /// gateway serves it.
    pub bridges: Vec<String>,
}

impl Report {
    pub fn is_clean(&self) -> bool {
        self.problems.is_empty()
    }

    /// The one-line verdict printed last.
    pub fn summary(&self) -> String {
        let warnings = match self.warnings.len() {
            0 => String::new(),
            1 => ", 1 warning".into(),
            n => format!(", {n} warnings"),
        };
        if !self.is_clean() {
            let n = self.problems.len();
            let s = if n == 1 { "" } else { "s" };
            return format!("{n} problem{s} in {}{warnings}", self.dir.display());
        }
        let live = if self.offline {
            "not checked against the upstreams (--offline)".to_owned()
        } else if self.checked.is_empty() {
            "no upstream to check against".to_owned()
        } else {
            let each: Vec<String> = self
                .checked
                .iter()
                .map(|(name, tools)| format!("'{name}' ({})", plural(*tools, "tool")))
                .collect();
            format!("checked against upstream {}", each.join(", "))
        };
        format!(
            "{} OK: {}, {} overlaid, {}; {live}{warnings}",
            self.dir.display(),
            plural(self.files, "overlay file"),
            plural(self.tools, "tool"),
            plural(self.widgets, "widget"),
        )
    }
}

fn plural(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

/// Checks the overlay directory `dir` against the configured `mounts`, and
/// every mount's upstream (overlaid or not) against its live listing.
/// Progress goes to `progress`. `Err` is for a directory that cannot be
/// checked at all (a usage error), not for problems in it; a directory that
/// is not named and does not exist, with upstreams to check, is a warning
/// (the gateway serves them without overlays).
pub async fn run(
    dir: &Path,
    mounts: &[Mount],
    limits: &Limits,
    options: Options,
    progress: &mut dyn Write,
) -> Result<Report, String> {
    let no_dir = !dir.is_dir();
    if no_dir && (mounts.is_empty() || options.offline || options.dir_named) {
        return Err(format!(
            "the overlay directory {} does not exist (set it with --overlays or `overlays` in the configuration)",
            dir.display()
        ));
    }
    let load = LoadOptions {
        max_bytes: limits.max_widget_bytes,
        public_url: options.public_url.clone(),
        apps: options.apps.clone(),
    };
    let inspection = if no_dir {
        Inspection::default()
    } else {
        inspect_dir_with(dir, &load)
    };
    let mut report = Report {
        dir: dir.to_path_buf(),
        files: inspection.mount_files.len(),
        tools: inspection.tools.len(),
        widgets: inspection.set.widgets().iter().count(),
        offline: options.offline,
        ..Report::default()
    };
    report.problems.extend(inspection.errors.iter().cloned());
    if no_dir {
        report.warnings.push(LoadError {
            file: dir.to_path_buf(),
            line: None,
            place: None,
            reason: "does not exist: nothing is overlaid; the upstreams are checked as they are"
                .into(),
        });
    }
    unknown_upstreams(&inspection, mounts, &mut report);
    unused_widgets(dir, &inspection, &mut report);
    report.bridges = bridges(&inspection);
    let mut listings: Vec<(&str, Listing)> = Vec::new();
    if !options.offline {
        for mount in mounts {
            let sites: Vec<&ToolSite> = inspection
                .tools
                .iter()
                .filter(|site| site.mount == mount.name)
                .collect();
            let renders: Vec<&RenderSite> = inspection
                .renders
                .iter()
                .filter(|site| site.mount == mount.name)
                .collect();
            // An upstream nothing overlays is still listed: that it answers
            // at all (its TLS, its command, its URL) is what `serve` needs.
            let _ = writeln!(
                progress,
                "checking upstream '{}' ({})",
                mount.name,
                describe_transport(mount)
            );
            match probe::list_tools(mount, limits).await {
                Ok(listing) => {
                    let from = listing
                        .server()
                        .map(|s| format!(" from {s}"))
                        .unwrap_or_default();
                    let _ = writeln!(progress, "  {}{from}", plural(listing.tools.len(), "tool"));
                    report
                        .checked
                        .push((mount.name.clone(), listing.tools.len()));
                    for site in sites {
                        live_tool(site, &listing, &mut report);
                    }
                    for site in renders {
                        live_render(site, &listing, &mut report);
                    }
                    listings.push((&mount.name, listing));
                }
                Err(e) => {
                    let (file, whose) = match (sites.first(), renders.first()) {
                        (Some(site), _) => (site.file.clone(), String::new()),
                        (None, Some(site)) => (site.file.clone(), String::new()),
                        (None, None) => (dir.to_path_buf(), format!("upstream '{}': ", mount.name)),
                    };
                    report.problems.push(LoadError {
                        file,
                        line: None,
                        place: None,
                        reason: format!(
                            "{whose}cannot check against the live tools/list: {e} (fix the upstream, or run with --offline)"
                        ),
                    });
                }
            }
        }
    }
    directory_rules(&inspection, mounts, &listings, &options, &mut report);
    let order = |a: &LoadError, b: &LoadError| (&a.file, a.line).cmp(&(&b.file, b.line));
    report.problems.sort_by(order);
    report.warnings.sort_by(order);
    Ok(report)
}

/// The app directories' rules, over the listings `check` obtained: warnings,
/// or problems with `--strict`.
fn directory_rules(
    inspection: &Inspection,
    mounts: &[Mount],
    listings: &[(&str, Listing)],
    options: &Options,
    report: &mut Report,
) {
    let upstreams: Vec<directory::Upstream<'_>> = mounts
        .iter()
        .map(|mount| directory::Upstream {
            mount: &mount.name,
            in_band_challenges: mount.auth_challenge == AuthChallenge::InBand,
            tools: listings
                .iter()
                .find(|(name, _)| *name == mount.name)
                .map(|(_, listing)| listing.tools.as_slice()),
        })
        .collect();
    let input = directory::Input {
        tools: &inspection.tools,
        renders: &inspection.renders,
        widgets: &inspection.widgets,
        upstreams: &upstreams,
        public_url: options.public_url.as_deref(),
    };
    let findings = directory::findings(&input).into_iter().map(|f| LoadError {
        file: f.file,
        line: f.line,
        place: f.place,
        reason: format!("[{}] {}", f.rule, f.message),
    });
    if options.strict {
        report.problems.extend(findings);
    } else {
        report.warnings.extend(findings);
    }
}

/// Overlay files whose mount is not a configured upstream: the gateway never
/// applies them, and says nothing, since it looks overlays up by mount.
fn unknown_upstreams(inspection: &Inspection, mounts: &[Mount], report: &mut Report) {
    let configured: Vec<&str> = mounts.iter().map(|m| m.name.as_str()).collect();
    report.problems.extend(inspection.unconfigured(&configured));
}

/// What each widget folder's code speaks, and whether the manifest said so.
fn bridges(inspection: &Inspection) -> Vec<String> {
    inspection
        .widgets
        .iter()
        .filter_map(|site| {
            let widget = inspection.set.widgets().get(&site.name)?;
            let how = if site.manifest.bridge.is_some() {
                "set by bridge in the manifest"
            } else {
                "detected"
            };
            Some(match widget.bridge {
                BridgeKind::OpenAi => format!(
                    "widget {}: window.openai, served with the script that implements it on the MCP Apps ui/* messages ({how}; bridge = \"mcp-apps\" serves it as written)",
                    site.name
                ),
                BridgeKind::McpApps => format!(
                    "widget {}: MCP Apps ui/*, served as written ({how})",
                    site.name
                ),
            })
        })
        .collect()
}

/// A widget no tool names is never listed nor served: most likely a tool's
/// `widget` key misses it, or it is left over.
fn unused_widgets(dir: &Path, inspection: &Inspection, report: &mut Report) {
    // A mount file that could not be read whole may be what names the
    // widget: better nothing than a warning that misleads.
    if report.problems.iter().any(|p| p.file.parent() == Some(dir)) {
        return;
    }
    let used: BTreeSet<&str> = inspection
        .tools
        .iter()
        .filter_map(|site| site.overlay.as_ref()?.widget.as_deref())
        .chain(inspection.renders.iter().map(|r| r.render.widget.as_str()))
        .collect();
    for widget in inspection.set.widgets().iter() {
        if !used.contains(widget.name.as_str()) && !is_builtin_name(&widget.name) {
            report.warnings.push(LoadError {
                file: dir.join(WIDGETS_DIR).join(&widget.name),
                line: None,
                place: None,
                reason: "no tool names this widget, so no host will see it".into(),
            });
        }
    }
}

/// The checks of one tool overlay against the live tool.
fn live_tool(site: &ToolSite, listing: &Listing, report: &mut Report) {
    let at = |key: &str| match key {
        "" => format!("tools.{}", site.key),
        key => format!("tools.{}.{key}", site.key),
    };
    let finding = |key: &str, reason: String| LoadError {
        file: site.file.clone(),
        line: site.line,
        place: Some(at(key)),
        reason,
    };
    let Some(tool) = listing.tool(&site.tool) else {
        let reason = unknown_tool(&site.mount, &site.tool, listing);
        report.problems.push(finding("", reason));
        return;
    };
    let Some(overlay) = &site.overlay else {
        return;
    };
    let input_schema = tool.get("inputSchema").unwrap_or(&Value::Null);
    for (i, param) in overlay.file_params.iter().enumerate() {
        let problems = file_param_problems(input_schema, param);
        if !problems.is_empty() {
            let reason = format!(
                "`{param}`: {}; the gateway leaves it out of openai/fileParams",
                problems.join("; ")
            );
            report
                .problems
                .push(finding(&format!("file_params[{i}]"), reason));
        }
    }
    let upstream_schema = tool.get("outputSchema").filter(|s| s.is_object());
    if overlay.output_schema.is_none() {
        let required = required_keys(upstream_schema);
        for key in &overlay.result.widget_only {
            if required.contains(key.as_str()) {
                let reason = format!(
                    "`{key}` is required by the upstream's outputSchema but moved out of structuredContent, so clients would reject the results; set output_schema"
                );
                report.problems.push(finding("result.widget_only", reason));
            }
        }
    }
    shaping_warnings(overlay, upstream_schema, &finding, report);
    builtin_against_listing(overlay, upstream_schema, &finding, report);
    if let Some(view) = &overlay.view {
        builtin_calls(view, &site.mount, listing, &finding, report);
    }
}

/// The tools a built-in widget's actions and refresh call must be listed.
fn builtin_calls(
    view: &View,
    mount: &str,
    listing: &Listing,
    finding: &dyn Fn(&str, String) -> LoadError,
    report: &mut Report,
) {
    for (key, tool) in view.calls() {
        if listing.tool(tool).is_none() {
            let reason = unknown_tool(mount, tool, listing);
            report.problems.push(finding(&key, reason));
        }
    }
}

/// A built-in widget's keys and pointers against the live output schema,
/// when the overlay sets none of its own (loading checked that one). The
/// Python SDK's text wrapper describes no records: nothing to check.
fn builtin_against_listing(
    overlay: &ToolOverlay,
    upstream_schema: Option<&Value>,
    finding: &dyn Fn(&str, String) -> LoadError,
    report: &mut Report,
) {
    let Some(kind) = builtin::kind_of(overlay.widget.as_deref()) else {
        return;
    };
    let Some(schema) = upstream_schema.filter(|s| !is_text_wrapper_schema(s)) else {
        return;
    };
    if overlay.output_schema.is_some() {
        return;
    }
    let view = overlay.view.clone().unwrap_or_default();
    for problem in builtin::against_schema(kind, &view, schema) {
        let reason = format!("{} (the upstream's live outputSchema)", problem.reason);
        report.problems.push(finding(&problem.place, reason));
    }
}

/// A render tool against the live listing: its name must be free (an
/// upstream tool of the same name wins, and the gateway drops the render
/// tool), and its data tools must exist.
fn live_render(site: &RenderSite, listing: &Listing, report: &mut Report) {
    let finding = |key: &str, reason: String| LoadError {
        file: site.file.clone(),
        line: site.line,
        place: Some(match key {
            "" => format!("render.{}", site.key),
            key => format!("render.{}.{key}", site.key),
        }),
        reason,
    };
    if listing.tool(&site.name).is_some() {
        let reason = format!(
            "name collision: upstream '{}' has a tool named `{}`; the upstream's tool wins, so the gateway leaves this render tool out of tools/list and sends its calls upstream; rename the render tool",
            site.mount, site.name
        );
        report.problems.push(finding("", reason));
    }
    for (i, tool) in site.render.data_tools.iter().enumerate() {
        if listing.tool(tool).is_none() {
            let reason = unknown_tool(&site.mount, tool, listing);
            report
                .problems
                .push(finding(&format!("data_tools[{i}]"), reason));
        }
    }
    if let Some(view) = &site.render.view {
        builtin_calls(view, &site.mount, listing, &finding, report);
    }
}

/// Result shaping that the tool's listing says will not work as meant.
fn shaping_warnings(
    overlay: &ToolOverlay,
    upstream_schema: Option<&Value>,
    finding: &dyn Fn(&str, String) -> LoadError,
    report: &mut Report,
) {
    // The Python SDK's `{"result": string}` only wraps the text: shaping
    // parses that text, so it works as for a server without a schema.
    let wrapper = upstream_schema.is_some_and(is_text_wrapper_schema);
    let upstream_has_schema = upstream_schema.is_some() && !wrapper;
    if overlay.result.structured_from_text && upstream_has_schema {
        report.warnings.push(finding(
            "result.structured_from_text",
            "has no effect: the upstream declares an outputSchema, so it sends structuredContent itself".into(),
        ));
    }
    if overlay.output_schema.is_some() && !overlay.result.structured_from_text {
        let reason = if wrapper {
            "the upstream's results wrap their text as {\"result\": \"…\"} (the Python SDK's outputSchema for a tool returning a string), which this schema does not describe, so every result becomes a tool error; if the text is JSON, set result.structured_from_text = true"
        } else if !upstream_has_schema {
            "the upstream declares no outputSchema, so its results probably carry no structuredContent, and the gateway answers such results as tool errors (validating clients would reject them); if the tool returns JSON text, set result.structured_from_text = true"
        } else {
            ""
        };
        if !reason.is_empty() {
            report
                .warnings
                .push(finding("output_schema", reason.into()));
        }
    }
}

fn required_keys(schema: Option<&Value>) -> BTreeSet<&str> {
    schema
        .and_then(|s| s.get("required"))
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// "upstream 'x' has no tool `y`", with the likely intended name, or the
/// names it does have.
fn unknown_tool(mount: &str, tool: &str, listing: &Listing) -> String {
    let names: Vec<&str> = listing.names().collect();
    crate::overlay::validate::unknown_tool(mount, tool, &names)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn builtin_widget_keys_are_checked_against_the_live_output_schema() {
        let listing = Listing {
            server_info: None,
            protocol_version: probe::PROTOCOL_VERSION.into(),
            tools: vec![json!({"name": "list_tasks", "outputSchema": {
                "type": "object",
                "properties": {"tasks": {"type": "array", "items": {
                    "type": "object", "properties": {"title": {"type": "string"}, "done": {"type": "boolean"}}
                }}}
            }})],
        };
        let overlay: ToolOverlay =
            toml::from_str("widget = \"builtin:table\"\n[view]\ncolumns = [\"title\", \"don\"]\n")
                .unwrap();
        let site = ToolSite {
            file: PathBuf::from("overlays/demo.toml"),
            line: Some(3),
            mount: "demo".into(),
            tool: "list_tasks".into(),
            key: "list_tasks".into(),
            overlay: Some(overlay),
        };
        let mut report = Report::default();
        live_tool(&site, &listing, &mut report);
        let found: Vec<String> = report.problems.iter().map(ToString::to_string).collect();
        assert_eq!(
            found,
            [
                "overlays/demo.toml:3: tools.list_tasks.view.columns[1]: `don` is not in the output schema's records at `/tasks`: `/` has no property `don`; did you mean `done`? (the upstream's live outputSchema)"
            ]
        );
    }

    #[test]
    fn the_tools_builtin_actions_call_must_be_listed() {
        let listing = Listing {
            server_info: None,
            protocol_version: probe::PROTOCOL_VERSION.into(),
            tools: vec![
                json!({"name": "list_tasks"}),
                json!({"name": "complete_task"}),
            ],
        };
        let overlay: ToolOverlay = toml::from_str(
            "widget = \"builtin:list\"\n[view]\nactions = [{ label = \"Done\", tool = \"complete_tsk\" }]\nrefresh = \"list_tasks\"\n",
        )
        .unwrap();
        let site = ToolSite {
            file: PathBuf::from("overlays/demo.toml"),
            line: Some(3),
            mount: "demo".into(),
            tool: "list_tasks".into(),
            key: "list_tasks".into(),
            overlay: Some(overlay),
        };
        let mut report = Report::default();
        live_tool(&site, &listing, &mut report);
        let found: Vec<String> = report.problems.iter().map(ToString::to_string).collect();
        assert_eq!(
            found,
            [
                "overlays/demo.toml:3: tools.list_tasks.view.actions[0].tool: upstream 'demo' has no tool `complete_tsk`; did you mean `complete_task`?"
            ]
        );
    }

    #[test]
    fn unknown_tools_suggest_or_list() {
        let listing = Listing {
            server_info: None,
            protocol_version: probe::PROTOCOL_VERSION.into(),
            tools: vec![json!({"name": "list_tasks"}), json!({"name": "add_task"})],
        };
        assert_eq!(
            unknown_tool("demo", "list_task", &listing),
            "upstream 'demo' has no tool `list_task`; did you mean `list_tasks`?"
        );
        assert_eq!(
            unknown_tool("demo", "weather", &listing),
            "upstream 'demo' has no tool `weather` (its tools: `list_tasks`, `add_task`)"
        );
    }
}
