//! A mount's protected-resource metadata (RFC 9728), served by the gateway:
//! the upstream's document with `resource` set to the mount's public URL,
//! fetched from the upstream's own origin only, bounded in time and size,
//! and kept once per mount ([`super::cache`]) whatever the request's `Host`.

use std::time::Duration;

use bytes::Bytes;
use http::header::{self, HeaderMap, HeaderValue};
use http::{Request, Response, StatusCode};
use http_body_util::Full;
use serde_json::{Map, Value};

use super::cache::Doc;
use super::state::{AuthState, PRM_PATH, origin_of, resource_url};
use mcp_ui_model::config::{Mount, Transport};
use mcp_ui_model::reply::{self, Body};
use mcp_ui_upstream::upstream::client::{Client, send};

/// Largest upstream metadata document accepted.
const PRM_MAX_BYTES: usize = 256 * 1024;

/// Serve a mount's protected-resource metadata: the upstream's document with
/// `resource` set to the mount's public URL, everything else unchanged.
/// Without `public_url` that URL follows the request's `Host`, and the
/// answer says so (`Vary: Host`).
/// The metadata of an endpoint at `path` whose tokens the gateway checks
/// itself (`[auth]`): its resource URL and the configured issuer.
pub(crate) fn serve_own(
    auth: &AuthState,
    required: &mcp_ui_model::config::Auth,
    path: &str,
    declared: &[String],
    headers: &HeaderMap,
) -> Response<Body> {
    let Some(base) = auth.base(headers) else {
        return reply::text(StatusCode::BAD_REQUEST, "no valid Host header\n");
    };
    let resource = resource_url(&base, path);
    document(
        auth,
        crate::oauth::resource_server::metadata(required, &resource, declared),
    )
}

pub(crate) async fn serve_prm(
    auth: &AuthState,
    mount: usize,
    config: &Mount,
    fetch: &Fetch<'_>,
    headers: &HeaderMap,
) -> Response<Body> {
    let Some(base) = auth.base(headers) else {
        return reply::text(StatusCode::BAD_REQUEST, "no valid Host header\n");
    };
    if !matches!(config.transport, Transport::Http { .. }) {
        return reply::text(
            StatusCode::NOT_FOUND,
            "not found: this upstream publishes no protected-resource metadata\n",
        );
    }
    let Some(doc) = upstream_doc(auth, mount, config, fetch).await else {
        tracing::debug!(upstream = %config.name, "no protected-resource metadata found at the upstream");
        return reply::text(
            StatusCode::NOT_FOUND,
            "not found: the upstream publishes no protected-resource metadata\n",
        );
    };
    let resource = resource_url(&base, &config.path);
    document(auth, doc.with_resource(&resource))
}

/// The answer carrying a metadata document (already naming its resource).
pub(crate) fn document(auth: &AuthState, doc: Bytes) -> Response<Body> {
    let mut r = reply::json(StatusCode::OK, doc);
    let h = r.headers_mut();
    h.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=60"),
    );
    if auth.base_follows_host() {
        h.append(header::VARY, HeaderValue::from_static("host"));
    }
    r
}

/// A streamable HTTP mount's upstream metadata document (cached per
/// mount), `None` for another kind of upstream or when it publishes none.
pub(crate) async fn upstream_doc(
    auth: &AuthState,
    mount: usize,
    config: &Mount,
    fetch: &Fetch<'_>,
) -> Option<Doc> {
    let Transport::Http { url } = &config.transport else {
        return None;
    };
    let remembered = auth
        .challenge_urls
        .lock()
        .expect("not poisoned")
        .get(&mount)
        .cloned();
    auth.prm_cache
        .get_or_fetch(mount, remembered.clone(), || {
            fetch_upstream_doc(fetch, url, remembered)
        })
        .await
}

/// The upstream's document, from the URL its challenges named, else the
/// path-inserted and then the bare well-known URL on its origin; the whole
/// search bounded by one fetch timeout.
pub async fn fetch_upstream_doc(
    fetch: &Fetch<'_>,
    url: &http::Uri,
    remembered: Option<String>,
) -> Option<Map<String, Value>> {
    let origin = origin_of(url);
    let upath = url.path().trim_end_matches('/');
    let mut candidates: Vec<String> = remembered.into_iter().collect();
    if !upath.is_empty() {
        candidates.push(format!("{origin}{PRM_PATH}{upath}"));
    }
    candidates.push(format!("{origin}{PRM_PATH}"));
    let search = async {
        for candidate in candidates {
            if let Some(Value::Object(obj)) = fetch_json(fetch, &candidate).await {
                return Some(obj);
            }
        }
        None
    };
    tokio::time::timeout(fetch.bound(), search)
        .await
        .ok()
        .flatten()
}

/// How metadata documents are fetched from an upstream.
pub struct Fetch<'a> {
    pub client: &'a Client,
    /// The bound on each fetch (at most 10 s).
    pub timeout: Duration,
}

impl Fetch<'_> {
    fn bound(&self) -> Duration {
        self.timeout.min(Duration::from_secs(10))
    }
}

/// GET a JSON document from an upstream (http only, bounded in time and size).
async fn fetch_json(fetch: &Fetch<'_>, url: &str) -> Option<Value> {
    let uri: http::Uri = url.parse().ok()?;
    if uri.scheme_str() != Some("http") {
        return None;
    }
    let mut req = Request::new(Full::new(Bytes::new()));
    *req.uri_mut() = uri;
    req.headers_mut()
        .insert(header::ACCEPT, HeaderValue::from_static("application/json"));
    let timeout = fetch.bound();
    let resp = send(fetch.client, "metadata", req, timeout).await.ok()?;
    if !resp.status().is_success() {
        return None;
    }
    let bounds = mcp_ui_model::body::Bounds::within(PRM_MAX_BYTES, timeout);
    let body = mcp_ui_model::body::read(resp.into_body(), bounds)
        .await
        .ok()?;
    let v: Value = serde_json::from_slice(&body).ok()?;
    v.as_object().filter(|o| !o.is_empty())?;
    Some(v)
}
