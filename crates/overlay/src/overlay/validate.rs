//! The rules an overlay must pass beyond its syntax, as pure functions that
//! return every problem found with the key path it sits at, so loading and
//! the offline `check` command report the same things in the same words.
//! Rules that need the upstream's live `tools/list` (file parameters) are in
//! the rewrite crate (`mcp_ui_rewrite::rewrite`), which sees that list.

use std::collections::BTreeSet;

use serde_json::Value;

use super::format::{RenderTool, SecurityScheme, ToolOverlay, WidgetManifest};
use super::set::MountOverlays;
use super::widget;

pub mod builtin;
mod csp;
mod names;
mod problem;
mod sample;
#[cfg(test)]
mod tests;
mod widget_domain;

use csp::origin;
pub use csp::{origin_allowed, url_origin};
pub use names::{nearest, unknown_tool};
pub use problem::Problem;

/// ChatGPT's limit on `openai/toolInvocation/invoking` and `invoked`.
pub(crate) const STATUS_TEXT_MAX_CHARS: usize = 64;

/// Checks a tool overlay. `widget_exists` says whether a widget folder of
/// that name exists.
pub fn tool(tool: &ToolOverlay, widget_exists: &dyn Fn(&str) -> bool) -> Vec<Problem> {
    let mut problems = Vec::new();
    builtin::view(tool.widget.as_deref(), tool.view.as_ref(), &mut problems);
    if let (Some(kind), Some(schema)) = (
        builtin::kind_of(tool.widget.as_deref()),
        &tool.output_schema,
    ) {
        let view = tool.view.clone().unwrap_or_default();
        problems.extend(builtin::against_schema(
            kind,
            &view,
            &Value::Object(schema.clone()),
        ));
    }
    if let Some(name) = &tool.widget
        && super::builtin::reference(name).is_none()
        && !widget_exists(name)
    {
        problems.push(Problem::new(
            "widget",
            format!("no widget folder `widgets/{name}`"),
        ));
    }
    if let Some(visibility) = &tool.visibility {
        if visibility.is_empty() {
            problems.push(Problem::new(
                "visibility",
                "empty: no one could call the tool; list \"model\", \"app\" or both",
            ));
        }
        duplicates(
            "visibility",
            visibility.iter().map(|a| a.as_str()),
            &mut problems,
        );
    }
    for (key, text) in [("invoking", &tool.invoking), ("invoked", &tool.invoked)] {
        if let Some(text) = text
            && let Err(reason) = status_text(text)
        {
            problems.push(Problem::new(key, reason));
        }
    }
    if let Some(schemes) = &tool.security_schemes {
        security_schemes(schemes, &mut problems);
    }
    names("file_params", &tool.file_params, &mut problems);
    if let Some(schema) = &tool.output_schema
        && schema.get("type").and_then(|t| t.as_str()) != Some("object")
    {
        problems.push(Problem::new(
            "output_schema.type",
            "must be \"object\": MCP structured content is always an object",
        ));
    }
    names(
        "result.widget_only",
        &tool.result.widget_only,
        &mut problems,
    );
    sample::tool(tool, &mut problems);
    let required = tool
        .output_schema
        .as_ref()
        .and_then(|s| s.get("required"))
        .and_then(|r| r.as_array());
    for key in &tool.result.widget_only {
        if required.is_some_and(|r| r.iter().any(|k| k.as_str() == Some(key))) {
            problems.push(Problem::new(
                "result.widget_only",
                format!(
                    "`{key}` is moved out of structuredContent, so output_schema cannot require it"
                ),
            ));
        }
    }
    problems
}

/// Checks a render tool `name` of a mount whose tool overlays are `mount`
/// (its input schema may come from a data tool's overlay).
pub fn render(
    name: &str,
    render: &RenderTool,
    mount: &MountOverlays,
    widget_exists: &dyn Fn(&str) -> bool,
) -> Vec<Problem> {
    let mut problems = Vec::new();
    if mount.tool(name).is_some() {
        problems.push(Problem::new(
            "",
            format!("`{name}` is also overlaid as `[tools.{name}]`, an upstream tool; a render tool needs a name of its own"),
        ));
    }
    builtin::view(Some(&render.widget), render.view.as_ref(), &mut problems);
    if let (Some(kind), Some(schema)) = (
        builtin::kind_of(Some(&render.widget)),
        render
            .output_schema
            .as_ref()
            .or_else(|| mount.render_input_schema(render)),
    ) {
        let view = render.view.clone().unwrap_or_default();
        problems.extend(builtin::against_schema(
            kind,
            &view,
            &Value::Object(schema.clone()),
        ));
    }
    if super::builtin::reference(&render.widget).is_none() && !widget_exists(&render.widget) {
        problems.push(Problem::new(
            "widget",
            format!("no widget folder `widgets/{}`", render.widget),
        ));
    }
    if render.data_tools.is_empty() {
        problems.push(Problem::new(
            "data_tools",
            "empty: name the upstream tool(s) whose results this tool renders",
        ));
    }
    names("data_tools", &render.data_tools, &mut problems);
    if render.data_tools.iter().any(|t| t == name) {
        problems.push(Problem::new(
            "data_tools",
            "a render tool cannot be its own data tool",
        ));
    }
    for (key, text) in [("invoking", &render.invoking), ("invoked", &render.invoked)] {
        if let Some(text) = text
            && let Err(reason) = status_text(text)
        {
            problems.push(Problem::new(key, reason));
        }
    }
    for (key, schema) in [
        ("input_schema", &render.input_schema),
        ("output_schema", &render.output_schema),
    ] {
        if let Some(schema) = schema
            && schema.get("type").and_then(|t| t.as_str()) != Some("object")
        {
            problems.push(Problem::new(
                format!("{key}.type"),
                "must be \"object\": tool arguments and structured content are objects",
            ));
        }
    }
    sample::render(render, &mut problems);
    if mount.render_input_schema(render).is_none() {
        problems.push(Problem::new(
            "input_schema",
            "missing, and no data tool's overlay declares an output_schema to take it from",
        ));
    }
    problems
}

fn security_schemes(schemes: &[SecurityScheme], problems: &mut Vec<Problem>) {
    if schemes.is_empty() {
        problems.push(Problem::new(
            "security_schemes",
            "empty; omit the key to keep the upstream's, or list {type = \"noauth\"}",
        ));
    }
    let kinds = schemes.iter().map(|s| match s {
        SecurityScheme::Noauth {} => "noauth",
        SecurityScheme::Oauth2 { .. } => "oauth2",
    });
    duplicates("security_schemes", kinds, problems);
    for (i, scheme) in schemes.iter().enumerate() {
        let SecurityScheme::Oauth2 { scopes } = scheme else {
            continue;
        };
        for (j, scope) in scopes.iter().enumerate() {
            if scope.is_empty()
                || scope.contains(|c: char| c.is_whitespace() || c == '"' || c == '\\')
            {
                problems.push(Problem::new(
                    format!("security_schemes[{i}].scopes[{j}]"),
                    "an OAuth scope is one token without spaces, quotes or backslashes",
                ));
            }
        }
    }
}

/// Non-empty, distinct names.
fn names(place: &str, names: &[String], problems: &mut Vec<Problem>) {
    for (i, name) in names.iter().enumerate() {
        if name.is_empty() {
            problems.push(Problem::new(format!("{place}[{i}]"), "empty name"));
        }
    }
    duplicates(place, names.iter().map(String::as_str), problems);
}

fn duplicates<'a>(place: &str, items: impl Iterator<Item = &'a str>, problems: &mut Vec<Problem>) {
    let mut seen = BTreeSet::new();
    for item in items {
        if !seen.insert(item) {
            problems.push(Problem::new(place, format!("`{item}` is listed twice")));
        }
    }
}

/// Checks a widget manifest.
pub fn manifest(manifest: &WidgetManifest) -> Vec<Problem> {
    let mut problems = Vec::new();
    if let Err(reason) = entry(manifest.entry()) {
        problems.push(Problem::new("entry", reason));
    }
    if let Some(base) = &manifest.base
        && let Err(reason) = base_dir(base)
    {
        problems.push(Problem::new("base", reason));
    }
    if let Some(value) = &manifest.domain {
        widget_domain::check("domain", value, &mut problems);
    }
    if let Some(modes) = &manifest.display_modes {
        if modes.is_empty() {
            problems.push(Problem::new("display_modes", "empty; omit the key instead"));
        }
        duplicates(
            "display_modes",
            modes.iter().map(|m| m.as_str()),
            &mut problems,
        );
    }
    if let Some(csp) = &manifest.csp {
        let lists = [
            ("connect_domains", &csp.connect_domains),
            ("resource_domains", &csp.resource_domains),
            ("frame_domains", &csp.frame_domains),
            ("base_uri_domains", &csp.base_uri_domains),
            ("redirect_domains", &csp.redirect_domains),
        ];
        for (key, list) in lists {
            for (i, value) in list.iter().flatten().enumerate() {
                if let Err(reason) = origin(value) {
                    problems.push(Problem::new(format!("csp.{key}[{i}]"), reason));
                }
            }
        }
    }
    problems
}

fn entry(path: &str) -> Result<(), String> {
    if path.starts_with('/') || path.contains('\\') {
        return Err("must be a path relative to the widget folder, with `/` separators".into());
    }
    widget::normalize("", path).map(drop)
}

/// A widget's `base`: a folder inside the widget folder (`/` alone or `""`
/// is the folder itself).
fn base_dir(path: &str) -> Result<(), String> {
    let trimmed = path.trim_matches('/');
    if trimmed.is_empty() {
        return Ok(());
    }
    if path.contains('\\') {
        return Err("use `/` as the path separator".into());
    }
    widget::normalize("", trimmed).map(drop)
}

/// `invoking`/`invoked`: at most [`STATUS_TEXT_MAX_CHARS`] characters.
pub(crate) fn status_text(text: &str) -> Result<(), String> {
    let chars = text.chars().count();
    if chars > STATUS_TEXT_MAX_CHARS {
        return Err(format!(
            "{chars} characters; ChatGPT allows at most {STATUS_TEXT_MAX_CHARS}"
        ));
    }
    if text.contains(['\n', '\r']) {
        return Err("a status text is one line".into());
    }
    Ok(())
}

/// A widget folder name: it becomes the host part of `ui://<name>/…`, so it
/// is kept to lowercase letters, digits, `-` and `_`.
pub fn widget_name(name: &str) -> Result<(), WidgetNameError> {
    let valid = name.len() <= 63
        && name.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_');
    if valid {
        Ok(())
    } else {
        Err(WidgetNameError {
            name: name.to_owned(),
        })
    }
}

/// A name that cannot be a widget folder's ([`widget_name`]). The
/// operator's: the folder is in the overlay directory (or the name given to
/// `init`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WidgetNameError {
    pub name: String,
}

impl std::fmt::Display for WidgetNameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "widget folder `{}`: names are 1 to 63 of a-z, 0-9, `-` and `_`, starting with a letter or digit (the name is the host of its ui:// URI)",
            self.name
        )
    }
}

impl std::error::Error for WidgetNameError {}
