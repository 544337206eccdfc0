//! ChatGPT's app review, the rules only its directory asks for: output
//! schemas for structured results, in-band authorization challenges, a
//! unique widget domain; and the native MCP Apps tool an overlay replaces.

use std::collections::BTreeSet;

use serde_json::Value;

use super::model::{Finding, Input, Located, Rule, Upstream};
use crate::cli::init::table::toml_key;
use mcp_ui_overlay::overlay::validate::url_origin;
use mcp_ui_overlay::overlay::{
    SecurityScheme, ToolOverlay, WidgetDomain, WidgetManifest, WidgetSite,
};
use mcp_ui_rewrite::rewrite::call::is_text_wrapper_schema;

/// [`Rule::WidgetDomain`] for every widget some tool or render tool shows
/// with no ChatGPT domain, while the public URL is known.
pub(super) fn widget_domains(input: &Input<'_>) -> Vec<Finding> {
    let mut out = Vec::new();
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

/// [`Rule::OutputSchema`]: results that carry `structuredContent` with no
/// `outputSchema` in `tools/list`. With the listing (`tool`), the schema
/// listed is the overlay's, or else the upstream's (which the gateway drops
/// when shaping replaces the Python SDK's `{"result": string}` wrapper);
/// without it, only the overlay's own shaping is judged.
pub(super) fn output_schema(
    at: &Located<'_>,
    overlay: &ToolOverlay,
    tool: Option<&Value>,
) -> Option<Finding> {
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
pub(super) fn oauth_in_band(
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
pub(super) fn native_ui(at: &Located<'_>, overlay: &ToolOverlay, tool: &Value) -> Option<Finding> {
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
pub(super) fn native_resource_uri(tool: &Value) -> Option<&str> {
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
