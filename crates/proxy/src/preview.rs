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
//! An endpoint that asks for tokens (`[auth]`) is described in the list of
//! mounts (its resource URL, issuer and scopes, and the gateway's own
//! authorization server when it signs users in), so the page shows a sign-in
//! panel instead of an error: it signs in with the gateway's authorization
//! server as an OAuth 2.1 public client, coming back to `/preview/callback`,
//! or takes a token pasted in. The page's `connect-src` admits the gateway's
//! `public_url` origin too, where the authorization server answers when the
//! page was opened under another loopback name.
//!
//! Served only when enabled (`preview` in the configuration, on by default
//! with a loopback `listen`); otherwise every `/preview` path is 404.

use http::header::{self, HeaderValue};
use http::{Method, Response, StatusCode, Uri};
use serde::Deserialize;

use mcp_ui_model::config::{Auth, Mount};
use mcp_ui_model::reply::{Body, empty, full, text};
use mcp_ui_wire::percent::{Plus, percent_decode};

/// Where the page is served.
pub const PATH: &str = "/preview";

const INDEX_HTML: &str = include_str!("preview/index.html");
const HOST_JS: &str = include_str!("preview/host.js");
const HOST_CSS: &str = include_str!("preview/host.css");
const SANDBOX_HTML: &str = include_str!("preview/sandbox.html");

/// Where the gateway's authorization server sends the page back to after a
/// sign-in (the page's redirect URI, on the page's own origin).
pub const CALLBACK_PATH: &str = "/preview/callback";

/// The page's own policy: everything from the gateway, nothing else. Its
/// `connect-src` also names the origin of `public_url` (see [`page_csp`]).
const PAGE_CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
connect-src 'self'; frame-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// [`PAGE_CSP`], with the origin of `public_url` (where the gateway's
/// metadata and authorization server answer) admitted to `connect-src`:
/// the page opened at `http://localhost:8787` registers and redeems its
/// code at `http://127.0.0.1:8787` when that is the public URL. Only an
/// `http(s)` URL's origin, as the WHATWG parser writes it, is added.
fn page_csp(public_url: Option<&str>) -> String {
    let origin = public_url
        .and_then(|u| url::Url::parse(u).ok())
        .filter(|u| matches!(u.scheme(), "http" | "https"))
        .map(|u| u.origin().ascii_serialization())
        .filter(|o| o != "null");
    match origin {
        Some(o) => PAGE_CSP.replacen(
            "connect-src 'self';",
            &format!("connect-src 'self' {o};"),
            1,
        ),
        None => PAGE_CSP.to_owned(),
    }
}

/// Whether `path` is one of the preview's (a mount at the same path wins:
/// the caller looks mounts up first).
pub(crate) fn claims(path: &str) -> bool {
    path == PATH || path.starts_with("/preview/")
}

/// An MCP endpoint the page can connect to: a mount's, or an app's with
/// the upstreams it combines.
#[derive(Debug, Clone)]
pub struct Endpoint<'a> {
    pub name: &'a str,
    pub path: &'a str,
    /// The app's members' upstream names; `None` for a mount.
    pub members: Option<Vec<&'a str>>,
    /// What its callers need when the gateway checks their tokens
    /// (`[auth]`); `None` when it does not (an open endpoint, or one whose
    /// upstream has OAuth of its own, which the page learns from a 401).
    pub auth: Option<&'a Auth>,
    /// The scopes its tools' overlays declare (`security_schemes`), which
    /// its protected-resource metadata lists after `auth.scopes`.
    pub declared: Vec<String>,
}

impl<'a> From<&'a Mount> for Endpoint<'a> {
    fn from(m: &'a Mount) -> Self {
        Endpoint {
            name: &m.name,
            path: &m.path,
            members: None,
            auth: m.auth.as_ref(),
            declared: Vec::new(),
        }
    }
}

/// What the page is told besides its endpoints.
#[derive(Debug, Clone, Default)]
pub struct Site<'a> {
    /// The configured `public_url`.
    pub public_url: Option<&'a str>,
    /// The gateway's base URL for this request: `public_url`, or made of
    /// its `Host` (the resource URLs the protected-resource metadata names).
    pub base: Option<String>,
    /// The gateway's own authorization server (`[authorization_server]`).
    pub authorization_server: Option<SignIn<'a>>,
}

/// The gateway's authorization server as the page signs in with it.
#[derive(Debug, Clone)]
pub struct SignIn<'a> {
    /// Its issuer (`public_url`): the `iss` of its tokens.
    pub issuer: &'a str,
    /// Its metadata document's URL (RFC 8414).
    pub metadata: String,
}

/// Answers a request for a preview path; `enabled` is whether the preview
/// is served at all, `mounts` the gateway's endpoints.
pub fn serve<'a>(
    enabled: bool,
    mounts: impl Iterator<Item = Endpoint<'a>>,
    site: &Site<'_>,
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
    let page = page_csp(site.public_url);
    let (body, content_type, csp) = match uri.path() {
        "/preview" | "/preview/" | CALLBACK_PATH => {
            (INDEX_HTML.to_owned(), "text/html; charset=utf-8", page)
        }
        "/preview/host.js" => (HOST_JS.to_owned(), "text/javascript; charset=utf-8", page),
        "/preview/host.css" => (HOST_CSS.to_owned(), "text/css; charset=utf-8", page),
        "/preview/mounts.json" => (mounts_json(mounts, site), "application/json", page),
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
    mcp_ui_model::reply::confine(h, &csp, mcp_ui_model::reply::Framing::AsItsPolicySays);
    r
}

/// Each mount's name and path, the origins the hosts render its widgets at
/// when the gateway's public URL is known, and what a protected one needs
/// (`auth`: its resource URL and metadata, issuer and scopes, whether a
/// caller without a token may list, and how the page gets a token:
/// `"authorization_server"`, signing in with the gateway's own, or
/// `"token"`, one pasted in); then the gateway's authorization server.
fn mounts_json<'a>(mounts: impl Iterator<Item = Endpoint<'a>>, site: &Site<'_>) -> String {
    let mounts: Vec<serde_json::Value> = mounts
        .map(|m| {
            let mut v = serde_json::json!({ "name": m.name, "path": m.path });
            if let Some(members) = &m.members {
                v["app"] = serde_json::json!(members);
            }
            if let Some(o) = mcp_ui_overlay::host::WidgetOrigins::behind(site.public_url, m.path) {
                v["origins"] = serde_json::json!(o);
            }
            if let Some(auth) = m.auth {
                v["auth"] = auth_json(auth, &m, site);
            }
            v
        })
        .collect();
    let mut doc = serde_json::json!({ "mounts": mounts });
    if let Some(a) = &site.authorization_server {
        doc["authorization_server"] =
            serde_json::json!({ "issuer": a.issuer, "metadata": a.metadata });
    }
    doc.to_string()
}

/// What the page needs of an endpoint that asks for tokens.
fn auth_json(auth: &Auth, m: &Endpoint<'_>, site: &Site<'_>) -> serde_json::Value {
    let mut scopes = auth.scopes.clone();
    for s in &m.declared {
        if !scopes.contains(s) {
            scopes.push(s.clone());
        }
    }
    let ours = site
        .authorization_server
        .as_ref()
        .is_some_and(|a| a.issuer == auth.issuer);
    let mut v = serde_json::json!({
        "issuer": auth.issuer,
        "scopes": scopes,
        "anonymous": auth.anonymous,
        "sign_in": if ours { "authorization_server" } else { "token" },
    });
    if let Some(base) = &site.base {
        use crate::oauth::passthrough::{prm_url, resource_url};
        v["resource"] = resource_url(base, m.path).into();
        v["resource_metadata"] = prm_url(base, m.path).into();
    }
    v
}

/// The domains a widget resource declares (`_meta.ui.csp`).
#[derive(Debug, Default, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct DeclaredCsp {
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
/// into it can never act as the gateway's origin. `check` measures widgets
/// under the same policy.
pub fn widget_csp(csp: &DeclaredCsp) -> String {
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
mod tests;
