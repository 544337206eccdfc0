//! A one-off MCP client for `check` and `init`: it opens a session with one
//! configured upstream, over whichever transport that upstream speaks, fetches
//! every page of its live `tools/list`, and ends the session.
//!
//! It speaks real MCP rather than peeking (`initialize`, then
//! `notifications/initialized`, then `tools/list` while there is a
//! `nextCursor`), because an upstream that needs the handshake answers
//! nothing useful without it, and because what the gateway will later rewrite
//! is exactly what such a client sees. Stdio and legacy SSE upstreams go
//! through the gateway's own [`MessageSession`]s; streamable HTTP is spoken
//! here, request by request, since the relay only forwards other clients'
//! exchanges. Every wait is bounded by the configured limits, and every error
//! names the upstream.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use crate::upstream::http::UpstreamBody;
use bytes::Bytes;
use http::header::{ACCEPT, CONTENT_TYPE, HeaderName, HeaderValue};
use http_body_util::{BodyExt, Full};
use serde_json::value::RawValue;
use serde_json::{Value, json};

use crate::config::{Limits, Mount, Transport};
use crate::jsonrpc::{self, Kind, code};
use crate::outcome::Failure;
use crate::sse;
use crate::upstream::messages::{Delivery, MessageSession};
use crate::upstream::{self, UpstreamError, http as up_http};

/// The protocol revision asked for in `initialize`.
pub const PROTOCOL_VERSION: &str = "2025-11-25";
/// `clientInfo.name`, so an upstream's logs say who asked.
pub const CLIENT_NAME: &str = "mcp-ui-gateway-check";
/// Most `tools/list` pages followed: an upstream whose cursors never end must
/// not keep `check` going for ever (a repeated cursor is caught sooner).
pub const MAX_PAGES: usize = 1000;

const SESSION_HEADER: HeaderName = HeaderName::from_static("mcp-session-id");
const PROTOCOL_HEADER: HeaderName = HeaderName::from_static("mcp-protocol-version");
/// How much of an HTTP error body is quoted in the error.
const ERROR_BODY_CHARS: usize = 300;

/// What an upstream said about itself and its tools.
#[derive(Debug, Clone, PartialEq)]
pub struct Listing {
    /// `serverInfo` of the `initialize` result, as sent.
    pub server_info: Option<Value>,
    /// The protocol revision the upstream chose.
    pub protocol_version: String,
    /// Every tool of every page, as sent, in order.
    pub tools: Vec<Value>,
}

impl Listing {
    /// The tool called `name`.
    pub fn tool(&self, name: &str) -> Option<&Value> {
        self.tools
            .iter()
            .find(|t| t.get("name").and_then(Value::as_str) == Some(name))
    }

    /// Every tool's name, in order (tools without a string name are skipped).
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tools
            .iter()
            .filter_map(|t| t.get("name").and_then(Value::as_str))
    }

    /// `serverInfo` as `name version`, for messages.
    pub fn server(&self) -> Option<String> {
        let info = self.server_info.as_ref()?;
        let name = info.get("name").and_then(Value::as_str)?;
        Some(match info.get("version").and_then(Value::as_str) {
            Some(version) => format!("{name} {version}"),
            None => name.to_owned(),
        })
    }
}

/// Why the tools of an upstream could not be listed. Every message names the
/// upstream.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    #[error(transparent)]
    Upstream(#[from] UpstreamError),
    #[error("upstream '{upstream}' answered `{method}` with error {code}: {message}")]
    Rpc {
        upstream: String,
        method: String,
        code: i64,
        message: String,
    },
    /// The session ended under the request (a stdio child that exited, a
    /// dropped SSE stream); the message says how, naming the upstream.
    #[error("{message}")]
    Ended { message: String },
}

impl From<Failure> for ProbeError {
    fn from(e: Failure) -> Self {
        ProbeError::Ended {
            message: e.to_string(),
        }
    }
}

/// Lists every tool of `mount`'s upstream: one MCP session, opened and ended
/// here.
pub async fn list_tools(mount: &Mount, limits: &Limits) -> Result<Listing, ProbeError> {
    let connect = Duration::from_secs(limits.connect_timeout_secs);
    let client = up_http::client(connect);
    let conn = match &mount.transport {
        Transport::Http { url } => Conn::Http(Box::new(HttpConn {
            client,
            url: url.clone(),
            session: None,
            protocol: None,
        })),
        Transport::Stdio(_) | Transport::Sse { .. } => {
            Conn::Messages(upstream::open_session(mount, limits, &client, false).await?)
        }
    };
    let mut probe = Probe {
        upstream: mount.name.clone(),
        conn,
        next_id: 0,
        timeout: Duration::from_secs(limits.request_timeout_secs),
        connect,
        limit: limits.max_message_bytes,
    };
    let listing = probe.run().await;
    probe.end().await;
    listing
}

/// How requests reach the upstream.
enum Conn {
    /// Stdio or legacy SSE: whole messages both ways, routed by the session.
    Messages(Arc<MessageSession>),
    /// Streamable HTTP: one POST per message. Boxed: the client is large.
    Http(Box<HttpConn>),
}

struct HttpConn {
    client: up_http::Client,
    url: http::Uri,
    /// `Mcp-Session-Id` from the `initialize` response, sent on every later
    /// request and on the closing DELETE.
    session: Option<HeaderValue>,
    /// `MCP-Protocol-Version`, once negotiated.
    protocol: Option<HeaderValue>,
}

struct Probe {
    upstream: String,
    conn: Conn,
    next_id: u64,
    /// Bound on each request, response body included.
    timeout: Duration,
    /// Bound on the closing DELETE, which nobody waits for the result of.
    connect: Duration,
    /// Largest message accepted.
    limit: usize,
}

impl Probe {
    async fn run(&mut self) -> Result<Listing, ProbeError> {
        let params = json!({
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": { "name": CLIENT_NAME, "version": env!("CARGO_PKG_VERSION") },
        });
        let init = self.request("initialize", params).await?;
        let Some(version) = init.get("protocolVersion").and_then(Value::as_str) else {
            return Err(self.protocol("its initialize result has no protocolVersion".into()));
        };
        let version = version.to_owned();
        if let Conn::Http(_) = &self.conn {
            let header = HeaderValue::from_str(&version).map_err(|_| {
                self.protocol(format!("protocolVersion {version:?} is not a header value"))
            })?;
            if let Conn::Http(http) = &mut self.conn {
                http.protocol = Some(header);
            }
        }
        self.notify("notifications/initialized").await?;

        let mut tools = Vec::new();
        let mut cursor: Option<String> = None;
        let mut seen = HashSet::new();
        loop {
            if seen.len() == MAX_PAGES {
                return Err(self.protocol(format!(
                    "tools/list had more than {MAX_PAGES} pages; gave up"
                )));
            }
            let params = match &cursor {
                Some(cursor) => json!({ "cursor": cursor }),
                None => json!({}),
            };
            let mut page = self.request("tools/list", params).await?;
            match page.get_mut("tools").map(Value::take) {
                Some(Value::Array(list)) => tools.extend(list),
                _ => {
                    return Err(self.protocol("a tools/list result without a `tools` array".into()));
                }
            }
            match page.get("nextCursor") {
                // Some servers send an empty cursor to mean "no more"; no
                // server can mean a real page by it, so either way it ends.
                None | Some(Value::Null) => break,
                Some(Value::String(next)) if next.is_empty() => break,
                Some(Value::String(next)) => {
                    if !seen.insert(next.clone()) {
                        return Err(self.protocol(format!(
                            "tools/list sent the cursor {next:?} twice; its pages never end"
                        )));
                    }
                    cursor = Some(next.clone());
                }
                Some(other) => {
                    return Err(self.protocol(format!("nextCursor {other} is not a string")));
                }
            }
        }
        Ok(Listing {
            server_info: init.get("serverInfo").cloned(),
            protocol_version: version,
            tools,
        })
    }

    /// Ends the session: the DELETE a streamable HTTP server expects (its
    /// answer does not matter, 405 included), or closing the pipe, which
    /// stops a stdio child.
    async fn end(&mut self) {
        match &self.conn {
            Conn::Messages(session) => session.close("ended by the check"),
            Conn::Http(http) => {
                let Some(session) = &http.session else {
                    return;
                };
                let mut req = http::Request::delete(http.url.clone())
                    .header(SESSION_HEADER, session.clone())
                    .body(Full::new(Bytes::new()))
                    .expect("valid request");
                if let Some(v) = &http.protocol {
                    req.headers_mut().insert(PROTOCOL_HEADER, v.clone());
                }
                let sent = up_http::send(&http.client, &self.upstream, req, self.connect).await;
                if let Err(e) = sent {
                    tracing::debug!(error = %e, "closing the session failed");
                }
            }
        }
    }

    /// One request; its result, or the error it got.
    async fn request(&mut self, method: &str, params: Value) -> Result<Value, ProbeError> {
        self.next_id += 1;
        let id = self.next_id;
        let body = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
        let body = Bytes::from(serde_json::to_vec(&body).expect("JSON values serialise"));
        let (timeout, limit) = (self.timeout, self.limit);
        let Probe { upstream, conn, .. } = self;
        let exchange = async {
            match conn {
                Conn::Messages(session) => messages_exchange(session, upstream, id, &body).await,
                Conn::Http(http) => http_exchange(http, upstream, timeout, limit, id, body).await,
            }
        };
        let reply = tokio::time::timeout(timeout, exchange)
            .await
            .map_err(|_| UpstreamError::Timeout {
                upstream: self.upstream.clone(),
                seconds: self.timeout.as_secs(),
            })??;
        if let Some(error) = reply.get("error") {
            return Err(ProbeError::Rpc {
                upstream: self.upstream.clone(),
                method: method.to_owned(),
                code: error.get("code").and_then(Value::as_i64).unwrap_or(0),
                message: error
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("(no message)")
                    .to_owned(),
            });
        }
        match reply.get("result") {
            Some(result) if result.is_object() => Ok(result.clone()),
            _ => Err(self.protocol(format!("its answer to `{method}` has no result object"))),
        }
    }

    async fn notify(&mut self, method: &str) -> Result<(), ProbeError> {
        let body = json!({ "jsonrpc": "2.0", "method": method });
        let body = Bytes::from(serde_json::to_vec(&body).expect("JSON values serialise"));
        let sent = async {
            match &self.conn {
                Conn::Messages(session) => {
                    session
                        .notify(body, Kind::Notification, Some(method), None)
                        .await?;
                }
                Conn::Http(http) => {
                    let resp = http_post(http, &self.upstream, self.timeout, body).await?;
                    let status = resp.status();
                    let text = error_text(resp).await;
                    if !status.is_success() {
                        let detail =
                            format!("POST {} answered {status} to {method}{text}", http.url);
                        return Err(self.protocol(detail));
                    }
                }
            }
            Ok(())
        };
        tokio::time::timeout(self.timeout, sent)
            .await
            .map_err(|_| UpstreamError::Timeout {
                upstream: self.upstream.clone(),
                seconds: self.timeout.as_secs(),
            })?
    }

    fn protocol(&self, detail: String) -> ProbeError {
        protocol(&self.upstream, detail)
    }
}

fn protocol(upstream: &str, detail: String) -> ProbeError {
    ProbeError::Upstream(UpstreamError::Protocol {
        upstream: upstream.to_owned(),
        detail,
    })
}

/// A request over a message session: waits for its response, answering
/// what the server asks meanwhile.
async fn messages_exchange(
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
async fn http_exchange(
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
        return Err(protocol(
            upstream,
            format!("POST {url} answered {status} to a request{text}"),
        ));
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
fn response_for(message: Value, id: u64) -> Option<Value> {
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

async fn http_post(
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
    Ok(up_http::send(&http.client, upstream, req, timeout).await?)
}

/// The whole body, refused beyond `limit` bytes.
async fn read_body(body: &mut UpstreamBody, limit: usize) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| format!("the response body failed: {e}"))?;
        if let Some(data) = frame.data_ref() {
            if out.len() + data.len() > limit {
                return Err(format!("a response over the {limit}-byte message limit"));
            }
            out.extend_from_slice(data);
        }
    }
    Ok(out)
}

/// The start of an error response's body, as `: text` (empty when there is
/// none), so the operator sees what the server said.
async fn error_text(resp: http::Response<UpstreamBody>) -> String {
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
fn answer_server_request(message: &[u8]) -> Option<Bytes> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::StdioCommand;

    fn limits(request_timeout_secs: u64) -> Limits {
        Limits {
            request_timeout_secs,
            connect_timeout_secs: 5,
            ..Limits::default()
        }
    }

    fn sh(name: &str, script: &str) -> Mount {
        Mount {
            name: name.into(),
            path: "/mcp".into(),
            transport: Transport::Stdio(StdioCommand {
                program: "sh".into(),
                args: vec!["-c".into(), script.into()],
                env: Default::default(),
                cwd: None,
            }),
            forward_headers: Vec::new(),
            auth_challenge: Default::default(),
        }
    }

    /// A stdio server in sh: answers `initialize`, then serves two pages of
    /// tools, and pings the client once to see it answered.
    const PAGED: &str = r#"
while IFS= read -r line; do
  id=$(printf '%s\n' "$line" | sed -n 's/.*"id":\([0-9][0-9]*\).*/\1/p')
  case "$line" in
    *'"method":"initialize"'*)
      printf '{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"paged","version":"1.0"}}}\n' "$id" ;;
    *'"cursor":"two"'*)
      printf '{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"second","inputSchema":{"type":"object"}}]}}\n' "$id" ;;
    *'"method":"tools/list"'*)
      printf '{"jsonrpc":"2.0","id":"srv","method":"ping"}\n'
      IFS= read -r pong
      case "$pong" in *'"id":"srv","result"'*) ;; *) exit 3 ;; esac
      printf '{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"first","inputSchema":{"type":"object"}}],"nextCursor":"two"}}\n' "$id" ;;
  esac
done
"#;

    #[tokio::test]
    async fn stdio_pages_are_followed_and_server_requests_answered() {
        let listing = list_tools(&sh("paged", PAGED), &limits(10)).await.unwrap();
        assert_eq!(listing.names().collect::<Vec<_>>(), ["first", "second"]);
        assert_eq!(listing.protocol_version, "2025-06-18");
        assert_eq!(listing.server().as_deref(), Some("paged 1.0"));
    }

    #[tokio::test]
    async fn an_exiting_child_is_named() {
        let err = list_tools(&sh("gone", "exit 7"), &limits(10))
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("upstream 'gone'"), "{err}");
    }

    #[tokio::test]
    async fn a_silent_child_times_out() {
        let err = list_tools(&sh("mute", "sleep 30"), &limits(1))
            .await
            .unwrap_err()
            .to_string();
        assert_eq!(err, "upstream 'mute' did not answer within 1 s");
    }

    #[tokio::test]
    async fn a_looping_cursor_is_refused() {
        let script = r#"
while IFS= read -r line; do
  id=$(printf '%s\n' "$line" | sed -n 's/.*"id":\([0-9][0-9]*\).*/\1/p')
  case "$line" in
    *initialize*) printf '{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{}}}\n' "$id" ;;
    *tools/list*) printf '{"jsonrpc":"2.0","id":%s,"result":{"tools":[],"nextCursor":"again"}}\n' "$id" ;;
  esac
done
"#;
        let err = list_tools(&sh("loop", script), &limits(10))
            .await
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("upstream 'loop'") && err.contains("twice"),
            "{err}"
        );
    }

    #[tokio::test]
    async fn streamable_http_with_a_session() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let stop = tokio_util::sync::CancellationToken::new();
        let server = tokio::spawn(crate::demo::serve_http(listener, stop.clone()));
        let mount = Mount {
            name: "demo".into(),
            path: "/mcp".into(),
            transport: Transport::Http {
                url: url.parse().unwrap(),
            },
            forward_headers: Vec::new(),
            auth_challenge: Default::default(),
        };
        let listing = list_tools(&mount, &limits(10)).await.unwrap();
        let mut names: Vec<&str> = listing.names().collect();
        names.sort_unstable();
        assert_eq!(
            names,
            ["add_task", "complete_task", "list_tasks", "refresh_tasks"]
        );
        stop.cancel();
        let _ = tokio::time::timeout(Duration::from_secs(10), server).await;
    }

    #[tokio::test]
    async fn an_http_refusal_is_named() {
        // A port nothing listens on: bind one, then let it go.
        let addr = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let mount = Mount {
            name: "nobody".into(),
            path: "/mcp".into(),
            transport: Transport::Http {
                url: format!("http://{addr}/mcp").parse().unwrap(),
            },
            forward_headers: Vec::new(),
            auth_challenge: Default::default(),
        };
        let err = list_tools(&mount, &limits(5))
            .await
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("upstream 'nobody' is unreachable"), "{err}");
    }

    #[test]
    fn server_requests_get_answers() {
        let ping = answer_server_request(br#"{"jsonrpc":"2.0","id":4,"method":"ping"}"#).unwrap();
        assert_eq!(&ping[..], br#"{"jsonrpc":"2.0","id":4,"result":{}}"#);
        let other =
            answer_server_request(br#"{"jsonrpc":"2.0","id":"a","method":"roots/list"}"#).unwrap();
        assert!(std::str::from_utf8(&other).unwrap().contains("-32601"));
        assert!(
            answer_server_request(br#"{"jsonrpc":"2.0","method":"notifications/x"}"#).is_none()
        );
    }
}
