//! Asking one member of an app: a message relayed to the member's mount
//! exactly as a client of that mount would send it (so its overlays,
//! sessions, limits and metrics apply as on its own path), with the
//! member's own session id in place of the app's.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::header::{self, HeaderMap, HeaderValue};
use http::{Method, Request, Response, StatusCode};
use http_body_util::BodyExt;
use serde_json::Value;

use crate::combine::AppState;
use crate::gateway::{Gateway, MountState};
use crate::outcome::Failure;
use crate::relay;
use crate::relay::context::{NAME_HEADER, SESSION_HEADER};
use crate::reply::Body;
use crate::session::app::{AppSession, MemberSession};

/// A member's answer to one request, read whole.
pub struct Answer {
    pub status: StatusCode,
    pub headers: HeaderMap,
    /// The JSON-RPC response, when the answer held one.
    pub message: Option<Value>,
}

impl Answer {
    /// The `result`, when the member answered one.
    pub fn result(&self) -> Option<&Value> {
        self.message.as_ref()?.get("result")
    }

    /// Why there is no result, for messages: the member's error or the
    /// HTTP status.
    pub fn problem(&self) -> String {
        match self.message.as_ref().and_then(|m| m.get("error")) {
            Some(e) => e
                .get("message")
                .and_then(Value::as_str)
                .map_or_else(|| e.to_string(), str::to_owned),
            None if !self.status.is_success() => format!("HTTP {}", self.status),
            None => "no JSON-RPC response".to_owned(),
        }
    }
}

/// The headers of a member's request: the client's, with the member's
/// session in place of the app's, and `Mcp-Name` as the member knows it.
pub fn headers_for(client: &HeaderMap, session: &MemberSession, name: Option<&str>) -> HeaderMap {
    let mut h = client.clone();
    h.remove(SESSION_HEADER);
    if let MemberSession::Id(id) = session
        && let Ok(v) = HeaderValue::from_str(id)
    {
        h.insert(SESSION_HEADER, v);
    }
    if let Some(name) = name
        && h.contains_key(NAME_HEADER)
        && let Ok(v) = HeaderValue::from_str(name)
    {
        h.insert(NAME_HEADER, v);
    }
    h
}

/// Relay `body` to `mount` as a POST with `headers`; its response as the
/// mount answers it.
pub async fn post(
    gw: &Arc<Gateway>,
    mount: &MountState,
    headers: HeaderMap,
    body: Bytes,
) -> Response<Body> {
    let mut req = Request::new(());
    *req.method_mut() = Method::POST;
    *req.uri_mut() = mount
        .config
        .path
        .parse()
        .unwrap_or_else(|_| http::Uri::from_static("/"));
    *req.headers_mut() = headers;
    let (parts, ()) = req.into_parts();
    relay::post(gw, mount, parts, body).await
}

/// Relay a request and read its answer whole (bounded by
/// `limits.max_message_bytes` and the request timeout).
pub async fn ask(gw: &Arc<Gateway>, mount: &MountState, headers: HeaderMap, body: Bytes) -> Answer {
    let resp = post(gw, mount, headers, body).await;
    read(gw, resp).await
}

/// Read a member's response whole: its JSON-RPC response, from a JSON body
/// or the first response event of an SSE body.
pub async fn read(gw: &Gateway, resp: Response<Body>) -> Answer {
    let (parts, body) = resp.into_parts();
    let limit = gw.limits.max_message_bytes;
    let patience = gw.request_timeout() + Duration::from_secs(5);
    let sse = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    let message = tokio::time::timeout(patience, async {
        let mut body = body;
        let mut parser = crate::sse::Parser::new(limit);
        let mut whole = Vec::new();
        while let Some(frame) = body.frame().await {
            let Ok(data) = frame.ok()?.into_data() else {
                continue;
            };
            if sse {
                parser.push(&data);
                while let Some(event) = parser.next_event().ok()? {
                    if let Some(m) = response_in(event.data.as_bytes()) {
                        return Some(m);
                    }
                }
            } else {
                whole.extend_from_slice(&data);
                if whole.len() > limit {
                    return None;
                }
            }
        }
        if sse {
            return parser.finish().and_then(|e| response_in(e.data.as_bytes()));
        }
        response_in(&whole)
    })
    .await
    .ok()
    .flatten();
    Answer {
        status: parts.status,
        headers: parts.headers,
        message,
    }
}

/// The JSON-RPC response `bytes` hold (not a request or notification).
fn response_in(bytes: &[u8]) -> Option<Value> {
    let v: Value = serde_json::from_slice(bytes).ok()?;
    (v.get("method").is_none() && (v.get("result").is_some() || v.get("error").is_some()))
        .then_some(v)
}

/// The app session the headers name; a client with none is sessionless with
/// every member.
pub fn session_of(
    gw: &Gateway,
    app: &AppState,
    headers: &HeaderMap,
) -> Result<AppSession, Failure> {
    let n = app.config.members.len();
    let Some(value) = headers.get(SESSION_HEADER) else {
        return Ok(AppSession {
            app: app.config.name.clone(),
            members: vec![MemberSession::Sessionless; n],
        });
    };
    value
        .to_str()
        .ok()
        .and_then(|v| AppSession::open(&gw.key, v, n))
        .filter(|s| s.app == app.config.name && s.members.len() == n)
        .ok_or(Failure::SessionNotFound)
}
