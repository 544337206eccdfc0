//! A widget folder's content turned into its MCP resource, without touching
//! the filesystem: local scripts and stylesheets inlined into one HTML
//! document (the host renders a single document in a sandbox with no server
//! behind it), the resource `_meta` in both vocabularies, and a URI versioned
//! by content hash (hosts cache templates by URI).

use std::borrow::Cow;

use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use super::format::{BridgeKind, WidgetDomain, WidgetManifest, merge_meta};
use crate::host::{HostKind, Target};

pub mod bridge;
mod builder;
#[cfg(test)]
mod bundle_tests;
mod inline;
pub mod link;
mod media;
mod options;
mod paths;
mod refs;
mod scan;
#[cfg(test)]
mod tests;
mod urls;

pub use inline::{Asset, BundleError, BundleOptions, Inlined, bundle};
pub use media::media_type;
pub(crate) use paths::normalize;

/// The MIME type of MCP Apps HTML resources, exactly as the spec writes it.
pub const MCP_APP_MIME: &str = "text/html;profile=mcp-app";

/// How many hex digits of the content hash go into the URI: 48 bits, plenty
/// to tell the versions of one widget apart.
const HASH_DIGITS: usize = 12;

/// One compiled widget version: what `resources/read` returns for it.
#[derive(Debug, Clone, PartialEq)]
pub struct Widget {
    /// The folder name.
    pub name: String,
    /// `ui://<name>/<hash>.html`, where `<hash>` is the first 12 hex digits
    /// of the SHA-256 of the HTML and the `_meta` together (the same URI for
    /// every host).
    pub uri: String,
    /// The single HTML document, assets inlined.
    pub html: String,
    /// The resource `_meta` for hosts other than ChatGPT and Claude
    /// (possibly empty).
    pub meta: Map<String, Value>,
    /// The resource `_meta` for ChatGPT.
    pub(crate) chatgpt_meta: Map<String, Value>,
    /// The resource `_meta` for Claude, before any derived domain.
    pub(crate) claude_meta: Map<String, Value>,
    /// Whether Claude is given the domain derived from the endpoint URL,
    /// when one is known: the manifest sets no `domain.claude`, and its
    /// `meta` leaves `ui` alone.
    pub(crate) claude_derives: bool,
    /// `title` of the `resources/list` entry.
    pub title: Option<String>,
    /// `description` of the `resources/list` entry.
    pub description: Option<String>,
    /// Keys of the manifest's `meta` that replaced one the gateway writes.
    pub meta_overrides: Vec<String>,
    /// The folder name of the files the gateway serves for this version (a
    /// hash of them), empty when there are none.
    pub asset_prefix: String,
    /// The files served under `<public_url>/assets/<asset_prefix>/`.
    pub assets: Vec<Asset>,
    /// The bridge its code speaks; `OpenAi` documents carry the script that
    /// implements `window.openai` on the `ui/*` messages.
    pub bridge: BridgeKind,
}

impl Widget {
    /// Builds a widget from its already validated manifest and its final
    /// HTML (see [`bundle`]).
    pub fn compile(name: &str, manifest: &WidgetManifest, html: String) -> Widget {
        let mut meta_overrides: Vec<String> = Vec::new();
        let [chatgpt_meta, claude_meta, meta] = HostKind::ALL.map(|host| {
            let mut meta = resource_meta(manifest, host);
            if let Some(extra) = &manifest.meta {
                for key in merge_meta(&mut meta, extra, |_, _| true) {
                    if !meta_overrides.contains(&key) {
                        meta_overrides.push(key);
                    }
                }
            }
            meta
        });
        let per_host = match &manifest.domain {
            Some(WidgetDomain::PerHost(hosts)) => Some(hosts),
            _ => None,
        };
        let claude_derives = per_host.is_none_or(|h| h.claude.is_none())
            && !manifest.meta.as_ref().is_some_and(|m| m.contains_key("ui"));
        // The other hosts' `_meta` holds the string form or `other`; the
        // per-host values it lacks are hashed beside it.
        let mut host_domains = Vec::new();
        for value in per_host.iter().flat_map(|h| [&h.chatgpt, &h.claude]) {
            host_domains.push(0u8);
            host_domains.extend_from_slice(value.as_deref().unwrap_or_default().as_bytes());
        }
        let uri = versioned_uri(name, &html, &meta, &host_domains);
        Widget {
            name: name.to_owned(),
            uri,
            html,
            meta,
            chatgpt_meta,
            claude_meta,
            claude_derives,
            title: manifest.title.clone(),
            description: manifest.description.clone(),
            meta_overrides,
            asset_prefix: String::new(),
            assets: Vec::new(),
            bridge: BridgeKind::McpApps,
        }
    }

    /// This widget with the files the gateway serves for it.
    pub(crate) fn with_assets(mut self, prefix: String, assets: Vec<Asset>) -> Widget {
        self.asset_prefix = prefix;
        self.assets = assets;
        self
    }

    /// The served file at `path` (relative to the widget folder).
    pub fn asset(&self, path: &str) -> Option<&Asset> {
        self.assets.iter().find(|a| a.path == path)
    }

    /// The resource `_meta` for `target`: Claude's carries the domain
    /// derived from the endpoint URL, when there is one and the manifest
    /// leaves it to the gateway.
    pub fn meta_for(&self, target: &Target) -> Cow<'_, Map<String, Value>> {
        match target.kind {
            HostKind::ChatGpt => Cow::Borrowed(&self.chatgpt_meta),
            HostKind::Other => Cow::Borrowed(&self.meta),
            HostKind::Claude => match target.derived_domain().filter(|_| self.claude_derives) {
                None => Cow::Borrowed(&self.claude_meta),
                Some(domain) => {
                    let mut meta = self.claude_meta.clone();
                    set_ui_domain(&mut meta, domain);
                    Cow::Owned(meta)
                }
            },
        }
    }
}

/// `ui.domain` set to `domain`, in the place [`resource_meta`] gives it
/// (after `ui.csp`).
fn set_ui_domain(meta: &mut Map<String, Value>, domain: &str) {
    if !meta.contains_key("ui") {
        meta.shift_insert(0, "ui".into(), json!({}));
    }
    let Some(Value::Object(ui)) = meta.get_mut("ui") else {
        return;
    };
    match ui.get_mut("domain") {
        Some(value) => *value = json!(domain),
        None => {
            let at = usize::from(ui.contains_key("csp"));
            ui.shift_insert(at, "domain".into(), json!(domain));
        }
    }
}

/// `ui://<name>/<hash>.html`. The hash covers the metadata too (a CSP change
/// alone must also reach hosts that cached the old version), and
/// `host_domains`, the per-host domains `meta` does not show.
pub(crate) fn versioned_uri(
    name: &str,
    html: &str,
    meta: &Map<String, Value>,
    host_domains: &[u8],
) -> String {
    let mut hasher = Sha256::new();
    hasher.update(html.as_bytes());
    hasher.update([0u8]);
    // Serializing a Map of plain JSON cannot fail.
    hasher.update(serde_json::to_vec(meta).unwrap_or_default());
    hasher.update(host_domains);
    let digest = hex::encode(hasher.finalize());
    format!("ui://{name}/{}.html", &digest[..HASH_DIGITS])
}

/// The `_meta.ui.domain` and `openai/widgetDomain` a manifest's `domain`
/// gives `host` (before any domain derived for Claude):
/// - ChatGPT: `chatgpt`, else the string form, as an origin in both keys;
/// - Claude: `claude`, else the string form when it is a bare host name,
///   in `ui.domain` only (Claude reads no `openai/*` key);
/// - other hosts: `other`, else the string form; `openai/widgetDomain` is
///   always its origin form.
pub(crate) fn host_domain(
    domain: Option<&WidgetDomain>,
    host: HostKind,
) -> (Option<String>, Option<String>) {
    let value = match (domain, host) {
        (None, _) => None,
        (Some(WidgetDomain::One(v)), HostKind::Claude) => Some(v).filter(|v| !v.contains("://")),
        (Some(WidgetDomain::One(v)), _) => Some(v),
        (Some(WidgetDomain::PerHost(h)), HostKind::ChatGpt) => h.chatgpt.as_ref(),
        (Some(WidgetDomain::PerHost(h)), HostKind::Claude) => h.claude.as_ref(),
        (Some(WidgetDomain::PerHost(h)), HostKind::Other) => h.other.as_ref(),
    };
    let Some(value) = value else {
        return (None, None);
    };
    match host {
        HostKind::ChatGpt => (Some(as_origin(value)), Some(as_origin(value))),
        HostKind::Claude => (Some(value.clone()), None),
        HostKind::Other => (Some(value.clone()), Some(as_origin(value))),
    }
}

/// A widget domain as an origin: a bare host name is served over https.
fn as_origin(value: &str) -> String {
    if value.contains("://") {
        value.to_owned()
    } else {
        format!("https://{value}")
    }
}

/// The resource `_meta` for `host`: MCP Apps `ui.*` first, then the ChatGPT
/// mirrors. Only what the manifest declares is emitted, so host defaults
/// still apply to the rest.
pub(crate) fn resource_meta(manifest: &WidgetManifest, host: HostKind) -> Map<String, Value> {
    let (ui_domain, openai_domain) = host_domain(manifest.domain.as_ref(), host);
    let mut ui = Map::new();
    if let Some(csp) = &manifest.csp {
        let mut standard = Map::new();
        let lists = [
            ("connectDomains", &csp.connect_domains),
            ("resourceDomains", &csp.resource_domains),
            ("frameDomains", &csp.frame_domains),
            ("baseUriDomains", &csp.base_uri_domains),
        ];
        for (key, list) in lists {
            if let Some(list) = list {
                standard.insert(key.into(), json!(list));
            }
        }
        if !standard.is_empty() {
            ui.insert("csp".into(), Value::Object(standard));
        }
    }
    if let Some(domain) = ui_domain {
        ui.insert("domain".into(), json!(domain));
    }
    if let Some(border) = manifest.prefers_border {
        ui.insert("prefersBorder".into(), json!(border));
    }
    if let Some(permissions) = permissions(manifest) {
        ui.insert("permissions".into(), permissions);
    }

    let mut meta = Map::new();
    if !ui.is_empty() {
        meta.insert("ui".into(), Value::Object(ui));
    }
    if let Some(csp) = &manifest.csp {
        // ChatGPT types connect_domains and resource_domains as required, so
        // they are always written once a [csp] table exists.
        let mut legacy = Map::new();
        let or_empty = |list: &Option<Vec<String>>| json!(list.as_deref().unwrap_or_default());
        legacy.insert("connect_domains".into(), or_empty(&csp.connect_domains));
        legacy.insert("resource_domains".into(), or_empty(&csp.resource_domains));
        if let Some(frames) = &csp.frame_domains {
            legacy.insert("frame_domains".into(), json!(frames));
        }
        if let Some(redirects) = &csp.redirect_domains {
            legacy.insert("redirect_domains".into(), json!(redirects));
        }
        meta.insert("openai/widgetCSP".into(), Value::Object(legacy));
    }
    if let Some(domain) = openai_domain {
        meta.insert("openai/widgetDomain".into(), json!(domain));
    }
    if let Some(border) = manifest.prefers_border {
        meta.insert("openai/widgetPrefersBorder".into(), json!(border));
    }
    if let Some(description) = &manifest.description {
        meta.insert("openai/widgetDescription".into(), json!(description));
    }
    if let Some(modes) = &manifest.display_modes {
        let modes: Vec<&str> = modes.iter().map(|m| m.as_str()).collect();
        meta.insert(
            "openai/ui".into(),
            json!({ "availableDisplayModes": modes }),
        );
    }
    meta
}

/// `{camera: {}, …}` for the permissions asked for, `None` if none is.
fn permissions(manifest: &WidgetManifest) -> Option<Value> {
    let p = manifest.permissions?;
    let asked = [
        ("camera", p.camera),
        ("microphone", p.microphone),
        ("geolocation", p.geolocation),
        ("clipboardWrite", p.clipboard_write),
    ];
    let map: Map<String, Value> = asked
        .into_iter()
        .filter(|(_, on)| *on)
        .map(|(key, _)| (key.to_owned(), json!({})))
        .collect();
    (!map.is_empty()).then_some(Value::Object(map))
}

/// A script or style sheet without indentation, blank lines, whole-line
/// `//` comments and comment blocks that start a line, and with no line
/// break after `{`, `;`, `,`, `(` or `[` (where none can end a statement):
/// the same code, about a seventh smaller. (The sources given here have no
/// string, template or regular expression spanning lines, so no text inside
/// one changes.)
pub(crate) fn compact(source: &str) -> String {
    let mut out = String::with_capacity(source.len());
    let mut in_comment = false;
    for line in source.lines() {
        let line = line.trim();
        if in_comment || line.starts_with("/*") {
            in_comment = !line.contains("*/");
            continue;
        }
        if line.is_empty() || line.starts_with("//") {
            continue;
        }
        out.push_str(line);
        if !line.ends_with(['{', ';', ',', '(', '[']) {
            out.push('\n');
        }
    }
    out
}
