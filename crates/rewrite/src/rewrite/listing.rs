//! The overlays against an upstream's live `tools/list`: the rules no file
//! alone can decide (a tool that is not listed, a file parameter its input
//! schema cannot carry, a built-in widget's keys missing from its output
//! schema or its actions' arguments that the called tool's input schema
//! wants as arrays, result shaping that cannot work, a render tool whose
//! name the upstream takes). `check` runs them on the listing it fetches; `serve` on
//! the listing passing through, at start and after each reload. Both say
//! the same `file:line: key: reason`.

use std::collections::BTreeSet;

use serde_json::Value;

use super::call::is_text_wrapper_schema;
use super::tools::file_param_problems;
use mcp_ui_overlay::overlay::builtin::View;
use mcp_ui_overlay::overlay::validate::{self, builtin};
use mcp_ui_overlay::overlay::{LoadError, MountOverlays, RenderSite, ToolOverlay, ToolSite};

/// An upstream's listing, as the rules read it.
pub trait Listed {
    /// Every tool name, in the order listed.
    fn names(&self) -> Vec<&str>;
    /// Whether a tool called `name` is listed.
    fn has(&self, name: &str) -> bool;
    /// The tool called `name` as listed; `None` also for a tool listed
    /// whose description the caller did not keep (only overlaid tools'
    /// are read).
    fn tool(&self, name: &str) -> Option<&Value>;
}

/// The upstream's tools on one `tools/list` page, as a caller keeps them
/// to compare the overlays with later.
#[derive(Debug, Default, PartialEq)]
pub struct ListedPage {
    /// Every tool name, in order.
    pub names: Vec<String>,
    /// The overlaid tools, each as sent (JSON text).
    pub overlaid: Vec<String>,
}

/// A tool's name, when it has one.
fn name(tool: &Value) -> Option<&str> {
    tool.get("name").and_then(Value::as_str)
}

impl ListedPage {
    /// The page of `tools` (parsed), for a mount with the overlays `overlaid`.
    pub fn of(tools: &[Value], overlaid: Option<&MountOverlays>) -> Self {
        ListedPage {
            names: tools.iter().filter_map(name).map(str::to_owned).collect(),
            overlaid: tools
                .iter()
                .filter(|t| name(t).is_some_and(|n| overlaid.is_some_and(|o| o.tool(n).is_some())))
                .map(Value::to_string)
                .collect(),
        }
    }
}

/// A listing's tools as sent: every tool's description is kept.
impl Listed for Vec<Value> {
    fn names(&self) -> Vec<&str> {
        self.iter().filter_map(name).collect()
    }

    fn has(&self, name: &str) -> bool {
        self.tool(name).is_some()
    }

    fn tool(&self, wanted: &str) -> Option<&Value> {
        self.iter().find(|t| name(t) == Some(wanted))
    }
}

/// What the rules found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Findings {
    /// What does not work as written.
    pub problems: Vec<LoadError>,
    /// What may not work, depending on the results the upstream returns.
    pub warnings: Vec<LoadError>,
}

/// Every finding of `mount`'s tool overlays and render tools against its
/// listing.
pub fn findings<'a>(
    tools: impl IntoIterator<Item = &'a ToolSite>,
    renders: impl IntoIterator<Item = &'a RenderSite>,
    listed: &dyn Listed,
) -> Findings {
    let mut out = Findings::default();
    for site in tools {
        tool(site, listed, &mut out);
    }
    for site in renders {
        render(site, listed, &mut out);
    }
    out
}

/// The checks of one tool overlay against the live tool.
pub fn tool(site: &ToolSite, listed: &dyn Listed, out: &mut Findings) {
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
    if !listed.has(&site.tool) {
        let reason = unknown_tool(&site.mount, &site.tool, listed);
        out.problems.push(finding("", reason));
        return;
    }
    let (Some(overlay), Some(tool)) = (&site.overlay, listed.tool(&site.tool)) else {
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
            out.problems
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
                out.problems.push(finding("result.widget_only", reason));
            }
        }
    }
    shaping_warnings(overlay, upstream_schema, &finding, out);
    builtin_against_listing(overlay, upstream_schema, &finding, out);
    if let Some(view) = &overlay.view {
        builtin_calls(view, &site.mount, listed, &finding, out);
    }
}

/// A render tool against the live listing: its name must be free (an
/// upstream tool of the same name wins, and the gateway drops the render
/// tool), and its data tools must exist.
pub fn render(site: &RenderSite, listed: &dyn Listed, out: &mut Findings) {
    let finding = |key: &str, reason: String| LoadError {
        file: site.file.clone(),
        line: site.line,
        place: Some(match key {
            "" => format!("render.{}", site.key),
            key => format!("render.{}.{key}", site.key),
        }),
        reason,
    };
    if listed.has(&site.name) {
        let reason = format!(
            "name collision: upstream '{}' has a tool named `{}`; the upstream's tool wins, so the gateway leaves this render tool out of tools/list and sends its calls upstream; rename the render tool",
            site.mount, site.name
        );
        out.problems.push(finding("", reason));
    }
    for (i, tool) in site.render.data_tools.iter().enumerate() {
        if !listed.has(tool) {
            let reason = unknown_tool(&site.mount, tool, listed);
            out.problems
                .push(finding(&format!("data_tools[{i}]"), reason));
        }
    }
    if let Some(view) = &site.render.view {
        builtin_calls(view, &site.mount, listed, &finding, out);
    }
}

/// The tools a built-in widget's actions and refresh call must be listed.
fn builtin_calls(
    view: &View,
    mount: &str,
    listed: &dyn Listed,
    finding: &dyn Fn(&str, String) -> LoadError,
    out: &mut Findings,
) {
    for (key, tool) in view.calls() {
        if !listed.has(tool) {
            let reason = unknown_tool(mount, tool, listed);
            out.problems.push(finding(&key, reason));
        }
    }
    array_arguments(view, listed, finding, out);
}

/// An action's argument written as one text (a pointer or a literal) where
/// the called tool's input schema wants an array: the widget sends the
/// record's value (or the text) as it is, and the tool gets no list.
fn array_arguments(
    view: &View,
    listed: &dyn Listed,
    finding: &dyn Fn(&str, String) -> LoadError,
    out: &mut Findings,
) {
    for (i, action) in view.actions.iter().flatten().enumerate() {
        let Some(properties) = listed
            .tool(&action.tool)
            .and_then(|t| t.pointer("/inputSchema/properties"))
        else {
            continue;
        };
        for (name, value) in action.arguments.iter().flatten() {
            let Some(text) = value.as_str() else {
                continue;
            };
            if !properties.get(name).is_some_and(wants_array) {
                continue;
            }
            let tool = &action.tool;
            let reason = if text.starts_with('/') {
                format!(
                    "`{text}` sends the record's value as it is, and `{tool}`'s input schema wants an array for `{name}`; write [\"{text}\"] to send it in an array (unless that value is an array itself)"
                )
            } else {
                format!(
                    "`{text}` is sent as a text, and `{tool}`'s input schema wants an array for `{name}`; write [\"{text}\"]"
                )
            };
            out.warnings.push(finding(
                &format!("view.actions[{i}].arguments.{name}"),
                reason,
            ));
        }
    }
}

/// Whether a schema takes arrays only (or null): `type = "array"`, or
/// `anyOf`/`oneOf` alternatives that are arrays or null.
fn wants_array(schema: &Value) -> bool {
    let types: Vec<&str> = match schema.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => {
            let alternatives = schema.get("anyOf").or_else(|| schema.get("oneOf"));
            let Some(alternatives) = alternatives.and_then(Value::as_array) else {
                return false;
            };
            let null = |s: &Value| s.get("type").and_then(Value::as_str) == Some("null");
            return alternatives.iter().any(wants_array)
                && alternatives.iter().all(|a| wants_array(a) || null(a));
        }
    };
    types.contains(&"array") && types.iter().all(|t| matches!(*t, "array" | "null"))
}

/// A built-in widget's keys and pointers against the live output schema,
/// when the overlay sets none of its own (loading checked that one). The
/// Python SDK's text wrapper describes no records: nothing to check.
fn builtin_against_listing(
    overlay: &ToolOverlay,
    upstream_schema: Option<&Value>,
    finding: &dyn Fn(&str, String) -> LoadError,
    out: &mut Findings,
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
        out.problems.push(finding(&problem.place, reason));
    }
}

/// Result shaping that the tool's listing says will not work as meant.
fn shaping_warnings(
    overlay: &ToolOverlay,
    upstream_schema: Option<&Value>,
    finding: &dyn Fn(&str, String) -> LoadError,
    out: &mut Findings,
) {
    // The Python SDK's `{"result": string}` only wraps the text: shaping
    // parses that text, so it works as for a server without a schema.
    let wrapper = upstream_schema.is_some_and(is_text_wrapper_schema);
    let upstream_has_schema = upstream_schema.is_some() && !wrapper;
    if overlay.result.structured_from_text && upstream_has_schema {
        out.warnings.push(finding(
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
            out.warnings.push(finding("output_schema", reason.into()));
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
pub fn unknown_tool(mount: &str, tool: &str, listed: &dyn Listed) -> String {
    validate::unknown_tool(mount, tool, &listed.names())
}

#[cfg(test)]
mod tests;
