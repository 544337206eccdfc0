//! `/preview`: a web page that is an MCP Apps host for the gateway's own
//! mounts, for people editing overlays. It lists each mount's tools, calls
//! one with arguments from a form generated from its `inputSchema`, shows the
//! raw request and result, and renders the tool's widget in a sandboxed
//! iframe with the `ui/*` bridge and a `window.openai` compatibility object.
//! When an overlay changes it re-lists and renders the new widget.
//!
//! The page speaks MCP streamable HTTP to the mounts from the browser, so
//! widget HTML reaches the iframe only through `resources/read`. What the
//! gateway serves here is static: the page and its script and style, the
//! list of mounts, and the sandbox document the widget is written into, whose
//! `Content-Security-Policy` header is built from the widget's declared
//! domains (`?csp=`, the resource's `_meta.ui.csp`).
//!
//! Served only when enabled (`preview` in the configuration, on by default
//! with a loopback `listen`); otherwise every `/preview` path is 404.

use http::header::{self, HeaderValue};
use http::{Method, Response, StatusCode, Uri};
use serde::Deserialize;

use crate::config::Mount;
use crate::percent::{Plus, percent_decode};
use crate::reply::{Body, empty, full, text};

/// Where the page is served.
pub const PATH: &str = "/preview";

const INDEX_HTML: &str = include_str!("preview/index.html");
const HOST_JS: &str = include_str!("preview/host.js");
const HOST_CSS: &str = include_str!("preview/host.css");
const SANDBOX_HTML: &str = include_str!("preview/sandbox.html");

/// The page's own policy: everything from the gateway, nothing else.
const PAGE_CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
connect-src 'self'; frame-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// Whether `path` is one of the preview's (a mount at the same path wins:
/// the caller looks mounts up first).
pub(crate) fn claims(path: &str) -> bool {
    path == PATH || path.starts_with("/preview/")
}

/// Answers a request for a preview path; `enabled` is whether the preview
/// is served at all, `mounts` the gateway's.
/// An MCP endpoint the page can connect to: a mount's, or an app's with
/// the upstreams it combines.
#[derive(Debug, Clone)]
pub struct Endpoint<'a> {
    pub name: &'a str,
    pub path: &'a str,
    /// The app's members' upstream names; `None` for a mount.
    pub members: Option<Vec<&'a str>>,
}

impl<'a> From<&'a Mount> for Endpoint<'a> {
    fn from(m: &'a Mount) -> Self {
        Endpoint {
            name: &m.name,
            path: &m.path,
            members: None,
        }
    }
}

pub fn serve<'a>(
    enabled: bool,
    mounts: impl Iterator<Item = Endpoint<'a>>,
    public_url: Option<&str>,
    method: &Method,
    uri: &Uri,
) -> Response<Body> {
    if !enabled {
        return text(
            StatusCode::NOT_FOUND,
            "not found: the preview is off (set `preview = true` in the configuration or run `serve --preview`)\n",
        );
    }
    if method != Method::GET && method != Method::HEAD {
        let mut r = text(StatusCode::METHOD_NOT_ALLOWED, "Method Not Allowed\n");
        r.headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
        return r;
    }
    let (body, content_type, csp) = match uri.path() {
        "/preview" | "/preview/" => (
            INDEX_HTML.to_owned(),
            "text/html; charset=utf-8",
            PAGE_CSP.to_owned(),
        ),
        "/preview/host.js" => (
            HOST_JS.to_owned(),
            "text/javascript; charset=utf-8",
            PAGE_CSP.to_owned(),
        ),
        "/preview/host.css" => (
            HOST_CSS.to_owned(),
            "text/css; charset=utf-8",
            PAGE_CSP.to_owned(),
        ),
        "/preview/mounts.json" => (
            mounts_json(mounts, public_url),
            "application/json",
            PAGE_CSP.to_owned(),
        ),
        "/preview/sandbox" => (
            SANDBOX_HTML.to_owned(),
            "text/html; charset=utf-8",
            widget_csp(&declared_csp(uri.query())),
        ),
        _ => {
            return text(
                StatusCode::NOT_FOUND,
                "not found: no such preview file (the page is at /preview)\n",
            );
        }
    };
    let mut r = Response::new(if method == Method::HEAD {
        empty()
    } else {
        full(body)
    });
    let h = r.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    crate::reply::confine(h, &csp, crate::reply::Framing::AsItsPolicySays);
    r
}

/// Each mount's name and path, and the origins the hosts render its
/// widgets at when the gateway's public URL is known.
fn mounts_json<'a>(mounts: impl Iterator<Item = Endpoint<'a>>, public_url: Option<&str>) -> String {
    let mounts: Vec<serde_json::Value> = mounts
        .map(|m| {
            let mut v = serde_json::json!({ "name": m.name, "path": m.path });
            if let Some(members) = &m.members {
                v["app"] = serde_json::json!(members);
            }
            if let Some(o) = crate::host::WidgetOrigins::behind(public_url, m.path) {
                v["origins"] = serde_json::json!(o);
            }
            v
        })
        .collect();
    serde_json::json!({ "mounts": mounts }).to_string()
}

/// The domains a widget resource declares (`_meta.ui.csp`).
#[derive(Debug, Default, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct DeclaredCsp {
    pub connect_domains: Vec<String>,
    pub resource_domains: Vec<String>,
    pub frame_domains: Vec<String>,
    pub base_uri_domains: Vec<String>,
}

/// The `csp` query parameter (percent-encoded JSON of `_meta.ui.csp`); none,
/// or one that does not parse, declares nothing: the restrictive default.
pub(crate) fn declared_csp(query: Option<&str>) -> DeclaredCsp {
    query
        .into_iter()
        .flat_map(|q| q.split('&'))
        .find_map(|pair| pair.strip_prefix("csp="))
        .and_then(query_value)
        .and_then(|json| serde_json::from_str(&json).ok())
        .unwrap_or_default()
}

/// The widget document's policy, after the MCP Apps template: nothing by
/// default; inline script and style; scripts, styles, images, fonts and
/// media also from `resourceDomains`; connections only to `connectDomains`;
/// nested frames only from `frameDomains`. Entries that could inject a
/// directive or keyword are dropped. Framed only by the preview page, and
/// sandboxed (an opaque origin) however it is opened, so what is written
/// into it can never act as the gateway's origin.
pub(crate) fn widget_csp(csp: &DeclaredCsp) -> String {
    fn list(domains: &[String]) -> String {
        domains
            .iter()
            .filter(|d| {
                !d.is_empty()
                    && d.len() <= 256
                    && !d.chars().any(|c| {
                        matches!(c, ';' | ',' | '\'' | '"') || c.is_whitespace() || c.is_control()
                    })
            })
            .fold(String::new(), |mut acc, d| {
                acc.push(' ');
                acc.push_str(d);
                acc
            })
    }
    let resources = list(&csp.resource_domains);
    let connect = list(&csp.connect_domains);
    let frames = list(&csp.frame_domains);
    let base = list(&csp.base_uri_domains);
    let or_none = |s: &str| {
        if s.is_empty() {
            " 'none'".to_owned()
        } else {
            s.to_owned()
        }
    };
    format!(
        "default-src 'none'; script-src 'self' 'unsafe-inline'{resources}; \
         style-src 'self' 'unsafe-inline'{resources}; img-src 'self' data: blob:{resources}; \
         media-src 'self' data: blob:{resources}; font-src 'self' data:{resources}; \
         connect-src{}; frame-src{}; object-src 'none'; base-uri{}; frame-ancestors 'self'; sandbox allow-scripts allow-forms",
        or_none(&connect),
        or_none(&frames),
        or_none(&base),
    )
}

/// A query value: `+` is a space, `%XX` a byte (form encoding, as browsers
/// write a query); the text must be UTF-8.
fn query_value(s: &str) -> Option<String> {
    let decoded = percent_decode(s, Plus::Space).utf8();
    decoded.map(std::borrow::Cow::into_owned)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    fn get(enabled: bool, path: &str) -> Response<Body> {
        serve(
            enabled,
            std::iter::empty(),
            None,
            &Method::GET,
            &path.parse().unwrap(),
        )
    }

    fn content_type(r: &Response<Body>) -> &str {
        r.headers()[header::CONTENT_TYPE].to_str().unwrap()
    }

    #[test]
    fn enabled_by_default_on_loopback_only() {
        let mut config = Config::default();
        assert!(config.preview_enabled());
        config.listen = "0.0.0.0:8787".parse().unwrap();
        assert!(!config.preview_enabled());
        config.preview = Some(true);
        assert!(config.preview_enabled());
    }

    #[test]
    fn disabled_preview_is_404() {
        assert!(claims("/preview"));
        for path in [
            "/preview",
            "/preview/",
            "/preview/host.js",
            "/preview/sandbox",
        ] {
            assert_eq!(get(false, path).status(), StatusCode::NOT_FOUND, "{path}");
        }
    }

    #[test]
    fn enabled_preview_serves_the_page() {
        let r = get(true, "/preview");
        assert_eq!(r.status(), StatusCode::OK);
        assert_eq!(content_type(&r), "text/html; charset=utf-8");
        let csp = r.headers()[header::CONTENT_SECURITY_POLICY]
            .to_str()
            .unwrap();
        assert!(csp.contains("default-src 'none'") && csp.contains("script-src 'self';"));
        assert_eq!(
            content_type(&get(true, "/preview/host.js")),
            "text/javascript; charset=utf-8"
        );
        assert_eq!(get(true, "/preview/nope").status(), StatusCode::NOT_FOUND);
        let post = serve(
            true,
            std::iter::empty(),
            None,
            &Method::POST,
            &"/preview".parse().unwrap(),
        );
        assert_eq!(post.status(), StatusCode::METHOD_NOT_ALLOWED);
        assert!(!claims("/previewer"));
    }

    #[test]
    fn sandbox_policy_comes_from_the_declared_domains() {
        let q = "csp=%7B%22connectDomains%22%3A%5B%22https%3A%2F%2Fapi.example.com%22%5D%2C\
                 %22resourceDomains%22%3A%5B%22https%3A%2F%2Fcdn.example.com%22%2C%22x%3B%20script-src%20*%22%5D%7D";
        let declared = declared_csp(Some(q));
        assert_eq!(declared.connect_domains, ["https://api.example.com"]);
        let csp = widget_csp(&declared);
        assert!(
            csp.contains("connect-src https://api.example.com;"),
            "{csp}"
        );
        assert!(
            csp.contains("script-src 'self' 'unsafe-inline' https://cdn.example.com;"),
            "{csp}"
        );
        assert!(!csp.contains("script-src *"), "injection dropped: {csp}");
        assert!(csp.contains("frame-src 'none'"), "{csp}");
        assert!(
            csp.ends_with("frame-ancestors 'self'; sandbox allow-scripts allow-forms"),
            "{csp}"
        );

        let default = widget_csp(&declared_csp(None));
        assert!(default.starts_with("default-src 'none';"));
        assert!(default.contains("connect-src 'none'"), "{default}");
        assert_eq!(
            declared_csp(Some("csp=%7Bnot-json")),
            DeclaredCsp::default()
        );
    }
}
