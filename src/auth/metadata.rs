//! A mount's protected-resource metadata (RFC 9728), served by the gateway:
//! the upstream's document with `resource` set to the mount's public URL,
//! fetched from the upstream's own origin only, bounded in time and size.

use std::time::{Duration, Instant};

use bytes::Bytes;
use http::header::{self, HeaderMap, HeaderValue};
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use serde_json::Value;

use super::state::{AuthState, PRM_PATH, PRM_TTL, origin_of, resource_url};
use crate::config::{Mount, Transport};
use crate::reply::{self, Body};
use crate::upstream::client::{Client, send};

/// Largest upstream metadata document accepted.
const PRM_MAX_BYTES: usize = 256 * 1024;

/// Serve a mount's protected-resource metadata: the upstream's document with
/// `resource` set to the mount's public URL, everything else unchanged.
pub async fn serve_prm(
    auth: &AuthState,
    mount: usize,
    config: &Mount,
    fetch: &Fetch<'_>,
    headers: &HeaderMap,
) -> Response<Body> {
    let Some(base) = auth.base(headers) else {
        return reply::text(StatusCode::BAD_REQUEST, "no Host header\n");
    };
    if let Some((at, doc)) = auth
        .cache
        .lock()
        .expect("not poisoned")
        .get(&(mount, base.clone()))
        .cloned()
        && at.elapsed() < PRM_TTL
    {
        return prm_response(doc);
    }
    let Transport::Http { url } = &config.transport else {
        return reply::text(
            StatusCode::NOT_FOUND,
            "not found: this upstream publishes no protected-resource metadata\n",
        );
    };
    let remembered = auth
        .challenge_urls
        .lock()
        .expect("not poisoned")
        .get(&mount)
        .cloned();
    let origin = origin_of(url);
    let upath = url.path().trim_end_matches('/');
    let mut candidates: Vec<String> = remembered.into_iter().collect();
    if !upath.is_empty() {
        candidates.push(format!("{origin}{PRM_PATH}{upath}"));
    }
    candidates.push(format!("{origin}{PRM_PATH}"));
    let resource = resource_url(&base, &config.path);
    for candidate in candidates {
        let Some(doc) = fetch_json(fetch, &candidate).await else {
            continue;
        };
        let Value::Object(mut obj) = doc else {
            continue;
        };
        obj.insert("resource".into(), Value::String(resource.clone()));
        let bytes = Bytes::from(serde_json::to_vec(&Value::Object(obj)).expect("serializable"));
        auth.cache
            .lock()
            .expect("not poisoned")
            .insert((mount, base.clone()), (Instant::now(), bytes.clone()));
        return prm_response(bytes);
    }
    tracing::debug!(upstream = %config.name, "no protected-resource metadata found at the upstream");
    reply::text(
        StatusCode::NOT_FOUND,
        "not found: the upstream publishes no protected-resource metadata\n",
    )
}

fn prm_response(doc: Bytes) -> Response<Body> {
    let mut r = reply::json(StatusCode::OK, doc);
    r.headers_mut().insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=60"),
    );
    r
}

/// How metadata documents are fetched from an upstream.
pub struct Fetch<'a> {
    pub client: &'a Client,
    /// The bound on each fetch (at most 10 s).
    pub timeout: Duration,
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
    let timeout = fetch.timeout.min(Duration::from_secs(10));
    let resp = send(fetch.client, "metadata", req, timeout).await.ok()?;
    if !resp.status().is_success() {
        return None;
    }
    let body = tokio::time::timeout(
        timeout,
        Limited::new(resp.into_body(), PRM_MAX_BYTES).collect(),
    )
    .await
    .ok()?
    .ok()?
    .to_bytes();
    let v: Value = serde_json::from_slice(&body).ok()?;
    v.as_object().filter(|o| !o.is_empty())?;
    Some(v)
}
