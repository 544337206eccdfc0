//! The MCP endpoint of a mount, as streamable HTTP defines it: POST carries
//! messages (JSON in, JSON or SSE out), GET opens the server's stream,
//! DELETE ends a session. This module checks what the transport requires
//! of each (methods, media types, a bounded body) and hands the exchange to
//! the relay.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;

use http::header::{self, HeaderMap};
use http::{Method, Request, Response};
use hyper::body::Incoming;

use crate::gateway::{Gateway, MountState};
use crate::metrics::MethodId;
use crate::middleware::cors;
use crate::oauth::OAuth;
use crate::oauth::passthrough::AuthState;
use crate::oauth::resource_server::ResourceServer;
use crate::relay;
use mcp_ui_model::config::Limits;
use mcp_ui_model::outcome::Failure;
use mcp_ui_model::reply::Body;
use mcp_ui_wire::protocol::BODY_FLOOR_BYTES_PER_SEC;

/// One request to `mount`'s endpoint.
pub async fn serve(
    gw: &Arc<Gateway>,
    mount: &MountState,
    mut req: Request<Incoming>,
) -> Response<Body> {
    if let Some(auth) = &mount.config.auth
        && req.method() != Method::OPTIONS
        && let Err(refused) = admit(&gw.oauth, auth, &mount.config.path, &mut req).await
    {
        return *refused;
    }
    match *req.method() {
        Method::POST => post(gw, mount, req).await,
        Method::GET if !accepts(req.headers(), "text/event-stream") => {
            Failure::NotAcceptable("text/event-stream").respond(None)
        }
        Method::GET | Method::DELETE => {
            let method = match *req.method() {
                Method::GET => MethodId::GET,
                _ => MethodId::DELETE,
            };
            let exchange = gw.metrics.exchange(mount.index, method);
            let resp = relay::bodyless(gw, mount, req).await;
            exchange.finish_head(&resp);
            resp
        }
        Method::OPTIONS => cors::preflight(),
        _ => Failure::MethodNotAllowed {
            allow: "GET, POST, DELETE, OPTIONS",
            why: None,
        }
        .respond(None),
    }
}

/// A request to an endpoint at `path` that requires `auth`: its caller
/// verified and put in its extensions ([`crate::oauth::resource_server::Caller`]), its
/// token taken out unless the upstream is to get it, and its share of the
/// caller's `requests_per_minute` taken (a POST's once its body says how
/// many requests it holds, [`Rated`]); or the answer that refuses it.
pub(crate) async fn admit(
    oauth: &OAuth,
    auth: &mcp_ui_model::config::Auth,
    path: &str,
    req: &mut Request<Incoming>,
) -> Result<(), Box<Response<Body>>> {
    let Some(base) = oauth.passthrough.base(req.headers()) else {
        return Err(Box::new(mcp_ui_model::reply::text(
            http::StatusCode::BAD_REQUEST,
            "no valid Host header\n",
        )));
    };
    let metadata = crate::oauth::passthrough::prm_url(&base, path);
    use crate::oauth::resource_server::Access;
    let anonymous = auth.anonymous && req.headers().get(header::AUTHORIZATION).is_none();
    let access = match anonymous {
        // What such a caller may reach is judged per request, once read.
        true => Access::Anonymous,
        false => {
            let rs = &oauth.resource_server;
            let policy = rs.policy_for(path, auth, || audience(&oauth.passthrough, auth, path))?;
            let caller = rs.admit(auth, req.headers(), &policy, &metadata).await?;
            let caller = match &oauth.authorization_server {
                Some(a) => a.reveal(caller),
                None => caller,
            };
            // Who called is logged only where the operator asks.
            if auth.log_callers {
                let verified = &caller.verified;
                tracing::info!(
                    issuer = %verified.issuer,
                    subject = %verified.subject,
                    client = verified.client_id.as_deref().unwrap_or(""),
                    endpoint = path,
                    "caller verified"
                );
            }
            Access::Granted(caller)
        }
    };
    if let Some(per_minute) = auth.requests_per_minute {
        let rated = Rated {
            per_minute,
            path: path.to_owned(),
            caller: access.digest(),
        };
        match *req.method() {
            Method::POST => {
                req.extensions_mut().insert(rated);
            }
            _ => rated.take(&oauth.resource_server, 1)?,
        }
    }
    if !auth.forward_token {
        req.headers_mut().remove(header::AUTHORIZATION);
    }
    req.extensions_mut().insert(access);
    Ok(())
}

/// The audience tokens for the endpoint at `path` must name: `audience`,
/// else the endpoint's URL under `public_url`. Never made of the request
/// (its `Host` is the caller's word), so without either (which `check`
/// refuses) every token is refused.
fn audience(
    passthrough: &AuthState,
    auth: &mcp_ui_model::config::Auth,
    path: &str,
) -> Result<String, Box<Response<Body>>> {
    if let Some(a) = &auth.audience {
        return Ok(a.clone());
    }
    match passthrough.public_url() {
        Some(base) => Ok(crate::oauth::passthrough::resource_url(base, path)),
        None => Err(Box::new(mcp_ui_model::reply::text(
            http::StatusCode::INTERNAL_SERVER_ERROR,
            "the endpoint has no audience to check tokens against (set public_url or auth.audience)\n",
        ))),
    }
}

/// A POST's caller, whose `requests_per_minute` at the endpoint is taken
/// once its body is read: one for each request of a batch.
#[derive(Clone)]
pub(crate) struct Rated {
    per_minute: u32,
    path: String,
    caller: Option<u64>,
}

impl Rated {
    fn take(&self, rs: &ResourceServer, cost: u32) -> Result<(), Box<Response<Body>>> {
        rs.rate(self.per_minute, &self.path, self.caller, cost)
    }
}

/// What a POST body costs of its caller's rate: its JSON-RPC requests and
/// notifications (each of a batch), at least one.
fn cost_of(body: &[u8]) -> u32 {
    use mcp_ui_wire::jsonrpc::{self, Kind};
    // Only a batch costs more than one: a body that does not open one is
    // not read (the relay reads it once, next).
    if body.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'[') {
        return 1;
    }
    match jsonrpc::classify(body) {
        Ok(jsonrpc::Body::Batch(items)) => {
            let asked = items.iter().filter(|(m, _)| m.kind != Kind::Response);
            u32::try_from(asked.count()).unwrap_or(u32::MAX).max(1)
        }
        _ => 1,
    }
}

async fn post(gw: &Arc<Gateway>, mount: &MountState, req: Request<Incoming>) -> Response<Body> {
    match post_body(&gw.limits, &gw.oauth.resource_server, req).await {
        Ok((parts, bytes)) => relay::post(gw, mount, parts, bytes).await,
        Err(refused) => refused,
    }
}

/// A POST's head and body, once its media types are right and its body has
/// arrived within the limits; otherwise the answer that refuses it.
pub(crate) async fn post_body(
    limits: &Limits,
    rs: &ResourceServer,
    req: Request<Incoming>,
) -> Result<(http::request::Parts, Bytes), Response<Body>> {
    if !content_type_is_json(req.headers()) {
        return Err(Failure::UnsupportedMediaType.respond(None));
    }
    if !accepts_json_and_sse(req.headers()) {
        let refused = Failure::NotAcceptable("both application/json and text/event-stream");
        return Err(refused.respond(None));
    }
    let (parts, body) = req.into_parts();
    let patience = Duration::from_secs(limits.header_read_timeout_secs);
    let bytes = match read_body(body, limits.max_body_bytes, patience).await {
        Ok(bytes) => bytes,
        Err(failure) => return Err(failure.respond(None)),
    };
    // A batch goes whole or not at all.
    if let Some(rated) = parts.extensions.get::<Rated>() {
        rated
            .take(rs, cost_of(&bytes))
            .map_err(|refused| *refused)?;
    }
    Ok((parts, bytes))
}

/// A client's request body of at most `limit` bytes (413 past it). It must
/// arrive within `patience`, plus a second for every
/// [`BODY_FLOOR_BYTES_PER_SEC`] bytes received so far (408 otherwise).
pub(crate) async fn read_body(
    body: Incoming,
    limit: usize,
    patience: Duration,
) -> Result<Bytes, Failure> {
    let bounds = mcp_ui_model::body::Bounds {
        limit,
        patience,
        floor_bytes_per_sec: Some(BODY_FLOOR_BYTES_PER_SEC),
    };
    mcp_ui_model::body::read(body, bounds)
        .await
        .map_err(|cut| match cut {
            mcp_ui_model::body::Cut::TooLarge { limit } => Failure::BodyTooLarge { limit },
            mcp_ui_model::body::Cut::Stalled { received, patience } => Failure::BodyTimeout {
                secs: patience.as_secs(),
                received,
            },
            mcp_ui_model::body::Cut::Broken(why) => Failure::UnreadableBody(why),
        })
}

/// Whether `Content-Type` is `application/json` (its parameters aside; type
/// and subtype in any case, RFC 9110 §8.3.1).
fn content_type_is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(crate::oauth::authorization_server::media_type)
        .is_some_and(|m| m.type_() == mime::APPLICATION && m.subtype() == mime::JSON)
}

/// Whether `Accept` admits both `application/json` and `text/event-stream`,
/// as a POST's must: the usual exact value at once, anything else parsed.
pub(crate) fn accepts_json_and_sse(headers: &HeaderMap) -> bool {
    let mut all = headers.get_all(header::ACCEPT).iter();
    if let (Some(v), None) = (all.next(), all.next())
        && v.as_bytes() == b"application/json, text/event-stream"
    {
        return true;
    }
    accepts(headers, "application/json") && accepts(headers, "text/event-stream")
}

/// Whether `Accept` admits `media` (`type/subtype`): a media range of it,
/// of its type (`type/*`) or of any (`*/*`) with a weight above 0
/// (RFC 9110 §12.5.1: `q=0` is "not acceptable"). No header does not.
pub(crate) fn accepts(headers: &HeaderMap, media: &str) -> bool {
    let (ty, sub) = media.split_once('/').expect("type/subtype");
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(list_items)
        .filter_map(crate::oauth::authorization_server::media_type)
        .any(|range| {
            let weight = range
                .get_param("q")
                .map_or(Some(1.0), |q| q.as_str().parse::<f32>().ok());
            let star = |s: &str| s == "*";
            weight.is_some_and(|w| w > 0.0)
                && ((star(range.type_().as_str()) && star(range.subtype().as_str()))
                    || (range.type_().as_str().eq_ignore_ascii_case(ty)
                        && (star(range.subtype().as_str())
                            || range.subtype().as_str().eq_ignore_ascii_case(sub))))
        })
}

/// The items of a comma-separated header list (RFC 9110 §5.6.1), a comma
/// inside a quoted parameter value (§5.6.4) not ending one.
fn list_items(value: &str) -> Vec<&str> {
    let (mut items, mut start, mut quoted, mut escaped) = (Vec::new(), 0, false, false);
    for (i, b) in value.bytes().enumerate() {
        match b {
            _ if escaped => escaped = false,
            b'\\' if quoted => escaped = true,
            b'"' => quoted = !quoted,
            b',' if !quoted => {
                items.push(&value[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&value[start..]);
    items
}

#[cfg(test)]
mod tests {
    use http::HeaderValue;

    use super::*;

    #[test]
    fn content_type_is_a_media_type() {
        let mut h = HeaderMap::new();
        for (value, json) in [
            ("application/json", true),
            ("Application/JSON; charset=utf-8", true),
            ("application/json ;charset=\"utf-8\"", true),
            ("application/jsonx", false),
            ("application/json-seq", false),
            ("text/json", false),
            ("application/json, text/plain", false),
            ("", false),
        ] {
            h.insert(header::CONTENT_TYPE, HeaderValue::from_static(value));
            assert_eq!(content_type_is_json(&h), json, "{value}");
        }
    }

    #[test]
    fn accept_matching() {
        let mut h = HeaderMap::new();
        h.insert(
            header::ACCEPT,
            HeaderValue::from_static("application/json, text/event-stream"),
        );
        assert!(accepts(&h, "application/json") && accepts(&h, "text/event-stream"));
        h.insert(header::ACCEPT, HeaderValue::from_static("application/json"));
        assert!(!accepts(&h, "text/event-stream"));
        h.insert(header::ACCEPT, HeaderValue::from_static("*/*"));
        assert!(accepts(&h, "text/event-stream"));
        for (value, both) in [
            ("application/json, text/event-stream", true),
            ("text/event-stream, application/json", true),
            ("application/json,text/event-stream;q=0.9", true),
            ("application/json", false),
            ("*/*", true),
            ("application/*, text/*", true),
            ("APPLICATION/JSON, Text/Event-Stream", true),
            ("application/json, text/event-stream;q=0", false),
            ("*/*;q=0, application/json", false),
            ("application/json;x=\"a,text/event-stream\"", false),
            ("application/json;x=\"a,b\", text/event-stream;q=0.5", true),
            ("text/event-stream;q=0.001, application/json;q=1", true),
            ("application/json, text/event-stream;q=x", false),
            ("application/json ; q=1 , text/event-stream\t;q=0.9", true),
            ("", false),
        ] {
            h.insert(header::ACCEPT, HeaderValue::from_static(value));
            assert_eq!(accepts_json_and_sse(&h), both, "{value}");
        }
    }
}
