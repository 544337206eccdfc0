//! The app directories' rules: what ChatGPT's app review asks of the tools
//! and widgets an app lists, checked over the overlays, the facts of the
//! configuration they need, and each upstream's live `tools/list` when it
//! is known. Pure: `check` gathers the inputs and prints the findings, as
//! warnings, or as problems with `--strict`.
//!
//! It sits beside `check` rather than in `overlay::validate` because it
//! reads listings as the rewrites do (the Python SDK's text wrapper schema).
//!
//! Rules that need a listing (the upstream's annotations, schemas and
//! `_meta`) are skipped for an upstream whose listing is not known
//! (`check --offline`); the others apply to the files alone.

use std::collections::BTreeSet;
use std::fmt;
use std::path::PathBuf;

use serde_json::Value;

use super::init::toml_key;
use crate::overlay::validate::url_origin;
use crate::overlay::{
    RenderSite, SecurityScheme, ToolOverlay, ToolSite, WidgetDomain, WidgetManifest, WidgetSite,
};
use crate::rewrite::call::is_text_wrapper_schema;

#[cfg(test)]
mod tests;

/// One rule of the app directories.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Rule {
    /// An overlaid tool lacks `readOnlyHint`, `destructiveHint` or
    /// `openWorldHint` in its annotations, the upstream's and the overlay's
    /// together (ChatGPT's review requires all three).
    Annotations,
    /// A tool's results carry `structuredContent` (shaped by the gateway,
    /// or an MCP App's) but `tools/list` shows no `outputSchema`.
    OutputSchema,
    /// An `oauth2` security scheme on an upstream whose authorization
    /// challenges are not relayed in-band: ChatGPT cannot start account
    /// linking.
    OauthInBand,
    /// A widget with no ChatGPT domain while the gateway's public URL is
    /// known: ChatGPT's submission needs a unique one.
    WidgetDomain,
    /// An overlay replaces the `resourceUri` of a tool the upstream already
    /// lists as an MCP App.
    NativeUi,
}

impl Rule {
    /// The rule's id, as printed: `app-directory/<id>`.
    pub fn id(self) -> &'static str {
        match self {
            Rule::Annotations => "annotations",
            Rule::OutputSchema => "output-schema",
            Rule::OauthInBand => "oauth-in-band",
            Rule::WidgetDomain => "widget-domain",
            Rule::NativeUi => "native-ui",
        }
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "app-directory/{}", self.id())
    }
}

/// One broken rule: which, where (file, line of the table, key path) and
/// what to change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub rule: Rule,
    pub file: PathBuf,
    pub line: Option<usize>,
    pub place: Option<String>,
    pub message: String,
}

/// What the rules know of one configured upstream.
#[derive(Debug, Clone, Copy)]
pub struct Upstream<'a> {
    /// Its mount name (the overlays' `upstream`).
    pub mount: &'a str,
    /// `auth_challenge = "in-band"`: a refused `tools/call` is answered with
    /// a tool result carrying the challenge, which ChatGPT acts on.
    pub in_band_challenges: bool,
    /// Its live tools, when known (not with `check --offline`).
    pub tools: Option<&'a [Value]>,
}

/// Everything the rules look at.
#[derive(Debug, Clone, Copy)]
pub struct Input<'a> {
    pub tools: &'a [ToolSite],
    pub renders: &'a [RenderSite],
    pub widgets: &'a [WidgetSite],
    /// The configured upstreams; overlays of any other are not checked here.
    pub upstreams: &'a [Upstream<'a>],
    /// The gateway's `public_url`, when configured.
    pub public_url: Option<&'a str>,
}

/// The three hints ChatGPT's review requires, by wire name.
pub const REQUIRED_HINTS: [&str; 3] = ["readOnlyHint", "destructiveHint", "openWorldHint"];

/// Every finding, in the order of `input.tools` then of `input.widgets`.
/// Render tools always carry the three hints (the gateway's defaults,
/// merged under the overlay's) and an output schema, so only their widgets
/// are checked.
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
        let at = Located { site };
        if let Some(tool) = tool {
            out.extend(annotations(&at, overlay, tool));
            out.extend(native_ui(&at, overlay, tool));
        }
        if listed.is_none() || tool.is_some() {
            out.extend(output_schema(&at, overlay, tool));
        }
        out.extend(oauth_in_band(&at, overlay, upstream, tool));
    }
    if let Some(public_url) = input.public_url {
        let used: BTreeSet<&str> = input
            .tools
            .iter()
            .filter_map(|s| s.overlay.as_ref()?.widget.as_deref())
            .chain(input.renders.iter().map(|r| r.render.widget.as_str()))
            .collect();
        for widget in input.widgets {
            if used.contains(widget.name.as_str()) && !has_chatgpt_domain(&widget.manifest) {
                out.push(widget_domain(widget, public_url));
            }
        }
        // Built-in widgets take theirs from their `view`.
        let builtin = |widget: &str| widget.starts_with("builtin:");
        for site in input.tools {
            let Some(overlay) = &site.overlay else {
                continue;
            };
            if overlay.widget.as_deref().is_some_and(builtin)
                && !gives_chatgpt(overlay.view.as_ref().and_then(|v| v.domain()))
            {
                let place = format!("tools.{}.view.domain", toml_key(&site.key));
                out.push(builtin_domain(&site.file, site.line, place, public_url));
            }
        }
        for site in input.renders {
            if builtin(&site.render.widget)
                && !gives_chatgpt(site.render.view.as_ref().and_then(|v| v.domain()))
            {
                let place = format!("render.{}.view.domain", toml_key(&site.key));
                out.push(builtin_domain(&site.file, site.line, place, public_url));
            }
        }
    }
    out
}

/// Whether the manifest gives ChatGPT a widget domain.
pub fn has_chatgpt_domain(manifest: &WidgetManifest) -> bool {
    gives_chatgpt(manifest.domain.as_ref())
}

fn gives_chatgpt(domain: Option<&WidgetDomain>) -> bool {
    match domain {
        Some(WidgetDomain::One(_)) => true,
        Some(WidgetDomain::PerHost(hosts)) => hosts.chatgpt.is_some(),
        None => false,
    }
}

/// [`Rule::WidgetDomain`] for a built-in widget (its `view` at `place` of
/// `file`) with no ChatGPT domain, while the public URL is known.
fn builtin_domain(
    file: &std::path::Path,
    line: Option<usize>,
    place: String,
    public_url: &str,
) -> Finding {
    let origin = url_origin(public_url).unwrap_or_else(|| public_url.to_owned());
    let message = format!(
        "ChatGPT requires a unique widget domain for app submission, and the built-in widget at {place} has none for ChatGPT: give it an origin unique to this app, such as public_url's: `{place} = {{ chatgpt = \"{origin}\" }}` (a table keeps Claude's domain derived from public_url)"
    );
    Finding {
        rule: Rule::WidgetDomain,
        file: file.to_path_buf(),
        line,
        place: Some(place),
        message,
    }
}

/// A tool table's location, for findings.
struct Located<'a> {
    site: &'a ToolSite,
}

impl Located<'_> {
    fn finding(&self, rule: Rule, key: &str, message: String) -> Finding {
        let tool = &self.site.key;
        let place = match key {
            "" => format!("tools.{tool}"),
            key => format!("tools.{tool}.{key}"),
        };
        Finding {
            rule,
            file: self.site.file.clone(),
            line: self.site.line,
            place: Some(place),
            message,
        }
    }

    fn is_json(&self) -> bool {
        self.site.file.extension().is_some_and(|e| e == "json")
    }
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
        "{} missing from its annotations (ChatGPT's app review requires readOnlyHint, destructiveHint and openWorldHint; without them hosts assume a tool that writes, destroys and reaches the outside world); {add}",
        missing.join(", ")
    );
    Some(at.finding(Rule::Annotations, "annotations", message))
}

/// [`Rule::OutputSchema`]: results that carry `structuredContent` with no
/// `outputSchema` in `tools/list`. With the listing (`tool`), the schema
/// listed is the overlay's, or else the upstream's (which the gateway drops
/// when shaping replaces the Python SDK's `{"result": string}` wrapper);
/// without it, only the overlay's own shaping is judged.
fn output_schema(at: &Located<'_>, overlay: &ToolOverlay, tool: Option<&Value>) -> Option<Finding> {
    if overlay.output_schema.is_some() {
        return None;
    }
    let from_text = overlay.result.structured_from_text;
    let why = match tool {
        None if from_text => "result.structured_from_text makes it from the text",
        None => return None,
        Some(tool) => {
            let schema = tool.get("outputSchema").filter(|s| s.is_object());
            let wrapper = schema.is_some_and(is_text_wrapper_schema);
            if schema.is_some() && !(wrapper && from_text) {
                return None;
            }
            if from_text {
                "result.structured_from_text makes it from the text"
            } else if !overlay.result.widget_only.is_empty() {
                "result.widget_only shapes it"
            } else if native_resource_uri(tool).is_some() {
                "the upstream lists the tool as an MCP App, whose UI renders it"
            } else {
                return None;
            }
        }
    };
    let name = &at.site.key;
    let add = if at.is_json() {
        format!(
            "add \"output_schema\": {{ \"type\": \"object\", \"properties\": {{ … }} }} to tool {name:?}"
        )
    } else {
        format!(
            "add [tools.{}.output_schema] with type = \"object\" and the properties of the results",
            toml_key(name)
        )
    };
    let message = format!(
        "its results carry structuredContent ({why}), but tools/list shows no outputSchema for it; ChatGPT's app review expects one describing structuredContent: {add}"
    );
    Some(at.finding(Rule::OutputSchema, "", message))
}

/// [`Rule::OauthInBand`]: an `oauth2` scheme the overlay writes (or, when
/// it writes none, the upstream lists) on an upstream whose challenges
/// reach clients as HTTP 401/403, which ChatGPT does not link accounts from.
fn oauth_in_band(
    at: &Located<'_>,
    overlay: &ToolOverlay,
    upstream: &Upstream<'_>,
    tool: Option<&Value>,
) -> Option<Finding> {
    if upstream.in_band_challenges {
        return None;
    }
    let in_meta = overlay
        .meta
        .as_ref()
        .and_then(|m| m.get("securitySchemes"))
        .is_some_and(has_oauth2);
    let key = if let Some(schemes) = &overlay.security_schemes {
        let oauth2 = schemes
            .iter()
            .any(|s| matches!(s, SecurityScheme::Oauth2 { .. }));
        if oauth2 {
            "security_schemes"
        } else if in_meta {
            "meta"
        } else {
            return None;
        }
    } else if in_meta {
        "meta"
    } else {
        let listed = tool.is_some_and(|t| {
            t.get("securitySchemes").is_some_and(has_oauth2)
                || t.pointer("/_meta/securitySchemes").is_some_and(has_oauth2)
        });
        if !listed {
            return None;
        }
        ""
    };
    let whose = if key.is_empty() {
        "the upstream lists an oauth2 security scheme for it"
    } else {
        "an oauth2 security scheme"
    };
    let mount = upstream.mount;
    let message = format!(
        "{whose}, but upstream '{mount}' relays its authorization challenges as HTTP 401/403, and ChatGPT starts account linking only from a challenge in the tool result: set auth_challenge = \"in-band\" in the [[upstream]] named '{mount}' of the configuration"
    );
    Some(at.finding(Rule::OauthInBand, key, message))
}

/// Whether a `securitySchemes` value lists an `oauth2` scheme.
fn has_oauth2(schemes: &Value) -> bool {
    schemes
        .as_array()
        .is_some_and(|a| a.iter().any(|s| s["type"] == "oauth2"))
}

/// [`Rule::NativeUi`]: the overlay replaces the `resourceUri` of a tool the
/// upstream already lists as an MCP App (its `widget`, or its `meta`
/// setting the `ui` keys or ChatGPT's alias).
fn native_ui(at: &Located<'_>, overlay: &ToolOverlay, tool: &Value) -> Option<Finding> {
    let uri = native_resource_uri(tool)?;
    let key = if overlay.widget.is_some() {
        "widget"
    } else if overlay.meta.as_ref().is_some_and(|m| {
        ["ui", "ui/resourceUri", "openai/outputTemplate"]
            .iter()
            .any(|k| m.contains_key(*k))
    }) {
        "meta"
    } else {
        return None;
    };
    let message = format!(
        "the upstream already lists this tool as an MCP App (resourceUri {uri}); the overlay's `{key}` replaces that resourceUri, so hosts render the overlay's widget instead of the upstream's own UI: remove `{key}` to keep the upstream's"
    );
    Some(at.finding(Rule::NativeUi, key, message))
}

/// The `_meta.ui.resourceUri` (or the flat `ui/resourceUri`) a listed tool
/// carries: an MCP Apps tool of the upstream's own.
fn native_resource_uri(tool: &Value) -> Option<&str> {
    tool.pointer("/_meta/ui/resourceUri")
        .and_then(Value::as_str)
        .or_else(|| tool.get("_meta")?.get("ui/resourceUri")?.as_str())
}

/// [`Rule::WidgetDomain`]: a widget some tool renders, with no ChatGPT
/// domain, while the public URL is known.
fn widget_domain(widget: &WidgetSite, public_url: &str) -> Finding {
    let origin = url_origin(public_url).unwrap_or_else(|| public_url.to_owned());
    let file = widget.manifest_file.display();
    let json = widget
        .manifest_file
        .extension()
        .is_some_and(|e| e == "json");
    let lines = if json {
        format!("\"domain\": {{\"chatgpt\": \"{origin}\"}}")
    } else {
        format!("domain = {{ chatgpt = \"{origin}\" }}")
    };
    Finding {
        rule: Rule::WidgetDomain,
        file: widget.manifest_file.clone(),
        line: None,
        place: Some("domain".into()),
        message: format!(
            "ChatGPT requires a unique widget domain for app submission, and widget `{}` has none for ChatGPT: give it an origin unique to this app in {file}, such as public_url's: `{lines}` (a table keeps Claude's domain derived from public_url)",
            widget.name
        ),
    }
}
