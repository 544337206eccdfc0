//! Claude's connector directory, the rules only it asks for: a `title` on
//! every tool, the tools only a widget calls visible to the app alone,
//! sign-in by OAuth with dynamic client registration or a Client ID
//! Metadata Document (or none), and inline widgets at most 500 px high.
//! Sources: Claude's review criteria
//! (<https://claude.com/docs/connectors/building/review-criteria>), its
//! authentication reference
//! (<https://claude.com/docs/connectors/building/authentication>) and the
//! directory checklist of anthropics/claude-plugins-official
//! (`plugins/mcp-server-dev/skills/build-mcp-app/references/directory-checklist.md`).

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use super::model::{
    CLAUDE_INLINE_MAX_PX, Finding, Height, Input, Located, Measured, Rule, SignIn, SignInKind,
    Upstream,
};
use crate::cli::init::table::toml_key;
use mcp_ui_overlay::overlay::ToolOverlay;
use mcp_ui_overlay::overlay::builtin::View;

/// [`Rule::Title`]: a tool neither the upstream nor the overlay titles
/// (`title`, or the upstream's `annotations.title`).
pub(super) fn title(at: &Located<'_>, overlay: &ToolOverlay, tool: &Value) -> Option<Finding> {
    let given = |v: Option<&Value>| {
        v.and_then(Value::as_str)
            .is_some_and(|s| !s.trim().is_empty())
    };
    let ours = overlay
        .title
        .as_deref()
        .is_some_and(|t| !t.trim().is_empty());
    if ours || given(tool.get("title")) || given(tool.pointer("/annotations/title")) {
        return None;
    }
    let name = &at.site.key;
    let suggested = suggest_title(&at.site.tool);
    let add = match (at.is_json(), at.new) {
        (true, true) => format!("add to \"tools\": \"{name}\": {{ \"title\": {suggested:?} }}"),
        (true, false) => format!("add to tool {name:?}: \"title\": {suggested:?}"),
        (false, true) => format!(
            "add, in words a user reads:\n    [tools.{}]\n    title = {suggested:?}",
            toml_key(name)
        ),
        (false, false) => format!(
            "add to [tools.{}], in words a user reads:\n    title = {suggested:?}",
            toml_key(name)
        ),
    };
    let message = format!(
        "no title: Claude's directory requires a title on every tool, and neither the upstream nor the overlay gives this one; {add}"
    );
    let key = if at.new { "" } else { "title" };
    Some(at.finding(Rule::Title, key, message))
}

/// "list_tasks" → "List tasks": a starting point the operator rewrites.
fn suggest_title(name: &str) -> String {
    let words = name.replace(['_', '-', '.'], " ");
    let mut chars = words.trim().chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => name.to_owned(),
    }
}

/// [`Rule::Title`] for render tools, which the gateway lists with the
/// overlay's `title` only.
pub(super) fn render_titles(input: &Input<'_>) -> Vec<Finding> {
    input
        .renders
        .iter()
        .filter(|r| input.upstreams.iter().any(|u| u.mount == r.mount))
        .filter(|r| r.render.title.as_deref().is_none_or(|t| t.trim().is_empty()))
        .map(|r| {
            let place = format!("render.{}.title", toml_key(&r.key));
            let add = if r.file.extension().is_some_and(|e| e == "json") {
                format!(
                    "add to render tool {:?}: \"title\": {:?}",
                    r.key,
                    suggest_title(&r.name)
                )
            } else {
                format!(
                    "add to [render.{}]:\n    title = {:?}",
                    toml_key(&r.key),
                    suggest_title(&r.name)
                )
            };
            Finding {
                rule: Rule::Title,
                file: r.file.clone(),
                line: r.line,
                place: Some(place),
                message: format!(
                    "no title: Claude's directory requires a title on every tool, render tools included; {add}"
                ),
            }
        })
        .collect()
}

/// A built-in widget's view, where it is written.
struct Caller<'a> {
    file: &'a std::path::Path,
    mount: &'a str,
    place: String,
    view: &'a View,
}

/// [`Rule::AppOnlyHelper`]: a tool a built-in widget calls (an action or
/// the refresh) is a helper unless something shows the model calls it too:
/// it has a widget of its own, it is a render tool's data tool, or a
/// visibility is written for it (the overlay's, or the upstream's
/// `_meta.ui.visibility`). Claude lists every tool visible to the model;
/// one only the widget calls is to be `visibility = ["app"]`.
pub(super) fn helpers(input: &Input<'_>) -> Vec<Finding> {
    let callers = input
        .tools
        .iter()
        .filter_map(|s| {
            let view = s.overlay.as_ref()?.view.as_ref()?;
            let place = format!("tools.{}", toml_key(&s.key));
            Some(Caller {
                file: &s.file,
                mount: &s.mount,
                place,
                view,
            })
        })
        .chain(input.renders.iter().filter_map(|r| {
            let view = r.render.view.as_ref()?;
            let place = format!("render.{}", toml_key(&r.key));
            Some(Caller {
                file: &r.file,
                mount: &r.mount,
                place,
                view,
            })
        }));
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for caller in callers {
        let Some(upstream) = input.upstreams.iter().find(|u| u.mount == caller.mount) else {
            continue;
        };
        for (key, target) in caller.view.calls() {
            if !seen.insert((caller.mount, target)) || says_who_calls(input, upstream, target) {
                continue;
            }
            out.push(helper(input, &caller, &key, target));
        }
    }
    out
}

/// Whether anything shows who calls `target` of `upstream`'s mount: a
/// visibility written for it, a widget of its own, being a render tool or
/// a render tool's data tool.
fn says_who_calls(input: &Input<'_>, upstream: &Upstream<'_>, target: &str) -> bool {
    let mount = upstream.mount;
    let overlay = input
        .tools
        .iter()
        .find(|s| s.mount == mount && s.tool == target)
        .and_then(|s| s.overlay.as_ref());
    let written = overlay.is_some_and(|o| o.visibility.is_some() || o.widget.is_some());
    let rendering = input.renders.iter().filter(|r| r.mount == mount);
    let data_or_render = rendering
        .clone()
        .any(|r| r.name == target || r.render.data_tools.iter().any(|d| d == target));
    let listed = upstream.tools.is_some_and(|tools| {
        tools.iter().filter(|t| t["name"] == target).any(|t| {
            t.pointer("/_meta/ui/visibility")
                .is_some_and(Value::is_array)
        })
    });
    written || data_or_render || listed
}

/// The finding for `target`, called by `caller`'s `key`: at the tool's
/// table when it has one, else in the caller's file.
fn helper(input: &Input<'_>, caller: &Caller<'_>, key: &str, target: &str) -> Finding {
    let site = input
        .tools
        .iter()
        .find(|s| s.mount == caller.mount && s.tool == target && s.overlay.is_some());
    let header = format!("[tools.{}]", toml_key(target));
    let (file, line, add) = match site {
        Some(s) => (
            s.file.clone(),
            s.line,
            format!("add to {header}:\n    visibility = [\"app\"]"),
        ),
        None => (
            caller.file.to_path_buf(),
            None,
            format!("add:\n    {header}\n    visibility = [\"app\"]"),
        ),
    };
    let message = format!(
        "the widget of {} calls `{target}` ({}.{key}), and nothing says whether the model calls it too: Claude's directory wants the tools only a widget calls visible to the app alone, out of Claude's tool list; {add}\n    (or visibility = [\"model\", \"app\"] if the model calls it too)",
        caller.place, caller.place
    );
    Finding {
        rule: Rule::AppOnlyHelper,
        file,
        line,
        place: Some(format!("tools.{}.visibility", toml_key(target))),
        message,
    }
}

/// [`Rule::SignIn`]: an endpoint hosts cannot sign in to by OAuth with
/// dynamic client registration or a Client ID Metadata Document.
pub(super) fn sign_in(sign_in: &SignIn) -> Option<Finding> {
    let endpoints = sign_in
        .endpoints
        .iter()
        .map(|e| format!("'{e}'"))
        .collect::<Vec<_>>()
        .join(", ");
    let front = "let the gateway be the hosts' authorization server: [authorization_server] with your provider (docs/oauth.md, \"Sign in with Google, GitHub or Entra\")";
    let message = match &sign_in.kind {
        SignInKind::Gateway {
            registration,
            documents,
        } => {
            if *registration || *documents {
                return None;
            }
            "[authorization_server] turns off both dynamic client registration and Client ID Metadata Documents, so no host can register to sign in: set `registration.enabled = true` or `client_metadata_documents.enabled = true` under [authorization_server]".to_owned()
        }
        SignInKind::Issuer { issuer, metadata } => match metadata.as_ref()? {
            Ok(doc) if registers(doc) => return None,
            Ok(_) => format!(
                "the issuer {issuer} of endpoint {endpoints} offers neither dynamic client registration (no registration_endpoint in its metadata) nor Client ID Metadata Documents (no client_id_metadata_document_supported: true), and Claude signs in only by one of them: turn one on at the provider, or {front}"
            ),
            Err(why) => format!(
                "the metadata of the issuer {issuer} of endpoint {endpoints} could not be read ({why}), so whether hosts can register with it is unknown; Claude signs in only by dynamic client registration or a Client ID Metadata Document"
            ),
        },
        SignInKind::Headers(names) => format!(
            "endpoint {endpoints} asks no sign-in but forwards the client's {} to its upstream: a host would have to present a static credential, which Claude does not support (a static bearer token blocks the listing); protect it with [auth] and {front}, passing the user on with auth.claims_to_headers, or remove forward_headers if the upstream answers without them",
            names.join(", ")
        ),
    };
    Some(Finding {
        rule: Rule::SignIn,
        file: sign_in.file.clone(),
        line: None,
        place: Some(sign_in.place.clone()),
        message,
    })
}

/// Whether an authorization server's metadata offers a registration path
/// hosts use: RFC 7591's endpoint, or Client ID Metadata Documents.
pub fn registers(doc: &Map<String, Value>) -> bool {
    doc.get("registration_endpoint")
        .and_then(Value::as_str)
        .is_some_and(|s| !s.is_empty())
        || doc.get("client_id_metadata_document_supported") == Some(&Value::Bool(true))
}

/// [`Rule::WidgetHeight`]: an inline widget over Claude's limit, or not
/// measured (which is no pass: the limit is unverified). A measured widget
/// is named at its `sample`, what it was measured with.
pub(super) fn height(height: &Height) -> Option<Finding> {
    let widget = &height.widget;
    let limit = CLAUDE_INLINE_MAX_PX;
    let at_sample = format!("{}.sample", height.place);
    let (place, message) = match &height.measured {
        Measured::Px(px) if *px <= limit => return None,
        Measured::Px(px) => {
            let fix = if widget.starts_with(mcp_ui_overlay::overlay::builtin::PREFIX) {
                "no `view` option bounds a built-in widget's height, which grows with its data: have the tool return fewer items per call (a page of them), point `view.data` at a shorter part of the result, or write a widget with a shorter inline layout"
            } else {
                "make its inline layout shorter (fewer rows, a summary that opens fullscreen)"
            };
            (
                at_sample,
                format!(
                    "its widget `{widget}` is {px} px high with its sample; Claude shows at most {limit} px inline (its directory's limit, without scrolling inside; measured in headless Chromium, 720 px wide, as a host renders it): {fix}; then check again"
                ),
            )
        }
        Measured::NoSample => (
            height.place.clone(),
            format!(
                "its widget `{widget}` was not measured: Claude's directory allows inline widgets at most {limit} px high, and nothing to render it with is written; add [{at_sample}] with arguments and (for a tool) the structured_content of a typical result"
            ),
        ),
        Measured::NotMeasured { why, fix } => (
            at_sample,
            format!(
                "its widget `{widget}` was not measured: {why}; Claude's directory allows inline widgets at most {limit} px high, and a height not measured is no pass: {fix}"
            ),
        ),
    };
    Some(Finding {
        rule: Rule::WidgetHeight,
        file: height.file.clone(),
        line: height.line,
        place: Some(place),
        message,
    })
}
