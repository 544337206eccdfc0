//! A widget folder's content turned into its MCP resource, without touching
//! the filesystem: local scripts and stylesheets inlined into one HTML
//! document (the host renders a single document in a sandbox with no server
//! behind it), the resource `_meta` in both vocabularies, and a URI versioned
//! by content hash (hosts cache templates by URI).

use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use super::format::{WidgetManifest, merge_meta};

mod inline;
mod scan;
#[cfg(test)]
mod tests;

pub use inline::{Inlined, inline_assets, normalize};
pub use scan::AssetError;

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
    /// of the SHA-256 of the HTML and the `_meta` together.
    pub uri: String,
    /// The single HTML document, assets inlined.
    pub html: String,
    /// The resource `_meta` (possibly empty).
    pub meta: Map<String, Value>,
    /// `title` of the `resources/list` entry.
    pub title: Option<String>,
    /// `description` of the `resources/list` entry.
    pub description: Option<String>,
    /// Keys of the manifest's `meta` that replaced one the gateway writes.
    pub meta_overrides: Vec<String>,
}

impl Widget {
    /// Builds a widget from its already validated manifest and its final
    /// HTML (see [`inline_assets`]).
    pub fn compile(name: &str, manifest: &WidgetManifest, html: String) -> Widget {
        let mut meta = resource_meta(manifest);
        let meta_overrides = match &manifest.meta {
            Some(extra) => merge_meta(&mut meta, extra, |_, _| true),
            None => Vec::new(),
        };
        let uri = versioned_uri(name, &html, &meta);
        Widget {
            name: name.to_owned(),
            uri,
            html,
            meta,
            title: manifest.title.clone(),
            description: manifest.description.clone(),
            meta_overrides,
        }
    }
}

/// `ui://<name>/<hash>.html`. The hash covers the metadata too: a CSP change
/// alone must also reach hosts that cached the old version.
pub fn versioned_uri(name: &str, html: &str, meta: &Map<String, Value>) -> String {
    let mut hasher = Sha256::new();
    hasher.update(html.as_bytes());
    hasher.update([0u8]);
    // Serializing a Map of plain JSON cannot fail.
    hasher.update(serde_json::to_vec(meta).unwrap_or_default());
    let digest = hex::encode(hasher.finalize());
    format!("ui://{name}/{}.html", &digest[..HASH_DIGITS])
}

/// The resource `_meta`: MCP Apps `ui.*` first, then the ChatGPT mirrors.
/// Only what the manifest declares is emitted, so host defaults still apply
/// to the rest.
pub fn resource_meta(manifest: &WidgetManifest) -> Map<String, Value> {
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
    if let Some(domain) = &manifest.domain {
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
    if let Some(domain) = &manifest.domain {
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
