//! One request and its response, over whichever transport the upstream
//! speaks: whole messages through a session, or a streamable HTTP POST.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::header::{ACCEPT, CONTENT_TYPE, HeaderName, HeaderValue};
use http_body_util::{BodyExt, Full};
use serde_json::Value;
use serde_json::value::RawValue;

use super::outcome::{ProbeError, protocol};
use crate::upstream::client::{self, UpstreamBody};
use crate::upstream::messages::{Delivery, MessageSession};
use mcp_ui_wire::jsonrpc::{self, Kind, code};
use mcp_ui_wire::sse;

/// The protocol revision asked for in `initialize`.
pub const PROTOCOL_VERSION: &str = "2025-11-25";

/// `clientInfo.name`, so an upstream's logs say who asked.
pub(crate) const CLIENT_NAME: &str = "mcp-ui-gateway-check";

pub(super) const SESSION_HEADER: HeaderName = HeaderName::from_static("mcp-session-id");

pub(super) const PROTOCOL_HEADER: HeaderName = HeaderName::from_static("mcp-protocol-version");

/// How much of an HTTP error body is quoted in the error.
pub(super) const ERROR_BODY_CHARS: usize = 300;

/// How requests reach the upstream.
pub(super) enum Conn {
    /// Stdio or legacy SSE: whole messages both ways, routed by the session.
    Messages(Arc<MessageSession>),
    /// Streamable HTTP: one POST per message. Boxed: the client is large.
    Http(Box<HttpConn>),
}

pub(super) struct HttpConn {
    pub(super) client: client::Client,
    pub(super) url: http::Uri,
    /// `Mcp-Session-Id` from the `initialize` response, sent on every later
    /// request and on the closing DELETE.
    pub(super) session: Option<HeaderValue>,
    /// `MCP-Protocol-Version`, once negotiated.
    pub(super) protocol: Option<HeaderValue>,
}

/// A request over a message session: waits for its response, answering
/// what the server asks meanwhile.
pub(super) async fn messages_exchange(
    session: &Arc<MessageSession>,
    upstream: &str,
    id: u64,
    body: &[u8],
) -> Result<Value, ProbeError> {
    let raw_id = RawValue::from_string(id.to_string()).expect("an integer is JSON");
    let (mut rx, _guard) = session.request(body, &raw_id, None).await?;
    while let Some(delivery) = rx.recv().await {
        match delivery {
            Delivery::Final(bytes) => {
                let reply: Value = serde_json::from_slice(&bytes).map_err(|e| {
                    protocol(upstream, format!("a response that is not JSON ({e})"))
                })?;
                return Ok(reply);
            }
            // The session ended under the request (or the upstream refused
            // it): say how, rather than "error -32000".
            Delivery::Failed(failure) => return Err(failure.into()),
            Delivery::Related(bytes) => {
                if let Some(answer) = answer_server_request(&bytes) {
                    session.notify(answer, Kind::Response, None, None).await?;
                }
            }
        }
    }
    Err(ProbeError::Ended {
        message: format!("upstream '{upstream}' ended the session"),
    })
}

/// A request over streamable HTTP: the response comes as a JSON body or in
/// an SSE stream, possibly after other messages.
pub(super) async fn http_exchange(
    http: &mut HttpConn,
    upstream: &str,
    timeout: Duration,
    limit: usize,
    id: u64,
    body: Bytes,
) -> Result<Value, ProbeError> {
    let resp = http_post(http, upstream, timeout, body).await?;
    let status = resp.status();
    if !status.is_success() || status == http::StatusCode::ACCEPTED {
        let url = http.url.clone();
        let text = error_text(resp).await;
        let detail = format!("POST {url} answered {status} to a request{text}");
        if matches!(status.as_u16(), 401 | 403) {
            let upstream = upstream.to_owned();
            return Err(ProbeError::Unauthorized { upstream, detail });
        }
        return Err(protocol(upstream, detail));
    }
    if http.session.is_none()
        && let Some(session) = resp.headers().get(SESSION_HEADER)
    {
        http.session = Some(session.clone());
    }
    let is_sse = resp
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().starts_with("text/event-stream"));
    let mut body = resp.into_body();
    if !is_sse {
        let bytes = read_body(&mut body, limit)
            .await
            .map_err(|detail| protocol(upstream, detail))?;
        let reply: Value = serde_json::from_slice(&bytes)
            .map_err(|e| protocol(upstream, format!("a response that is not JSON ({e})")))?;
        return response_for(reply, id).ok_or_else(|| {
            protocol(
                upstream,
                format!("its JSON answer is not the response to request {id}"),
            )
        });
    }
    sse_response(http, upstream, timeout, limit, id, body).await
}

/// The response to request `id` in an SSE answer, the server's requests
/// before it answered.
async fn sse_response(
    http: &mut HttpConn,
    upstream: &str,
    timeout: Duration,
    limit: usize,
    id: u64,
    mut body: UpstreamBody,
) -> Result<Value, ProbeError> {
    let mut parser = sse::Parser::new(limit);
    let mut ended = false;
    loop {
        let event = match parser.next_event() {
            Ok(Some(event)) => event,
            Ok(None) if ended => match parser.finish() {
                Some(event) => event,
                None => {
                    return Err(protocol(
                        upstream,
                        format!("its SSE stream ended before the response to request {id}"),
                    ));
                }
            },
            Ok(None) => {
                match body.frame().await {
                    Some(Ok(frame)) => {
                        if let Some(data) = frame.data_ref() {
                            parser.push(data);
                        }
                    }
                    Some(Err(e)) => {
                        return Err(protocol(upstream, format!("its SSE stream failed: {e}")));
                    }
                    None => ended = true,
                }
                continue;
            }
            Err(e) => return Err(protocol(upstream, e.to_string())),
        };
        if !event.has_data || event.data.trim().is_empty() {
            continue;
        }
        let Ok(message) = serde_json::from_str::<Value>(&event.data) else {
            tracing::debug!(upstream, "skipped an SSE event that is not JSON");
            continue;
        };
        if let Some(answer) = answer_server_request(event.data.as_bytes()) {
            let resp = http_post(http, upstream, timeout, answer).await?;
            let _ = error_text(resp).await;
            continue;
        }
        if let Some(reply) = response_for(message, id) {
            return Ok(reply);
        }
    }
}

/// `message` if it is the response to request `id` (alone or in a batch).
pub(super) fn response_for(message: Value, id: u64) -> Option<Value> {
    let is_ours = |m: &Value| {
        m.get("id").and_then(Value::as_u64) == Some(id)
            && (m.get("result").is_some() || m.get("error").is_some())
    };
    match message {
        Value::Array(batch) => batch.into_iter().find(is_ours),
        message if is_ours(&message) => Some(message),
        _ => None,
    }
}

pub(super) async fn http_post(
    http: &HttpConn,
    upstream: &str,
    timeout: Duration,
    body: Bytes,
) -> Result<http::Response<UpstreamBody>, ProbeError> {
    let mut req = http::Request::post(http.url.clone())
        .header(CONTENT_TYPE, "application/json")
        .header(ACCEPT, "application/json, text/event-stream")
        .body(Full::new(body))
        .expect("valid request");
    if let Some(session) = &http.session {
        req.headers_mut().insert(SESSION_HEADER, session.clone());
    }
    if let Some(version) = &http.protocol {
        req.headers_mut().insert(PROTOCOL_HEADER, version.clone());
    }
    Ok(client::send(&http.client, upstream, req, timeout).await?)
}

/// The whole body, refused beyond `limit` bytes (the body's own deadline,
/// from [`client::send`], bounds its time).
pub(super) async fn read_body(body: &mut UpstreamBody, limit: usize) -> Result<Vec<u8>, String> {
    let bounds = mcp_ui_model::body::Bounds::within(limit, Duration::MAX);
    match mcp_ui_model::body::read(body, bounds).await {
        Ok(bytes) => Ok(bytes.to_vec()),
        Err(mcp_ui_model::body::Cut::TooLarge { limit }) => {
            Err(format!("a response over the {limit}-byte message limit"))
        }
        Err(cut) => Err(format!("the response body failed: {cut}")),
    }
}

/// The start of an error response's body, as `: text` (empty when there is
/// none), so the operator sees what the server said.
pub(super) async fn error_text(resp: http::Response<UpstreamBody>) -> String {
    let mut body = resp.into_body();
    let bytes = read_body(&mut body, 64 * 1024).await.unwrap_or_default();
    let text = String::from_utf8_lossy(&bytes);
    let text: String = text
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .chars()
        .take(ERROR_BODY_CHARS)
        .collect();
    if text.is_empty() {
        text
    } else {
        format!(": {text}")
    }
}

/// The answer to a request the server sends us (ping, sampling, roots,
/// elicitation), so it does not wait on a client that will never answer:
/// `ping` succeeds, anything else is refused. `None` for anything that is
/// not a server request.
pub(super) fn answer_server_request(message: &[u8]) -> Option<Bytes> {
    let parsed = jsonrpc::classify_one(message).ok()?;
    if parsed.kind != Kind::Request {
        return None;
    }
    let id = parsed.id?;
    let method = parsed.method.as_deref().unwrap_or_default();
    Some(if method == "ping" {
        Bytes::from(format!(
            r#"{{"jsonrpc":"2.0","id":{},"result":{{}}}}"#,
            id.get()
        ))
    } else {
        let reason = format!("{CLIENT_NAME} only lists tools; it does not support `{method}`");
        jsonrpc::error_response(Some(id), code::METHOD_NOT_FOUND, &reason)
    })
}
