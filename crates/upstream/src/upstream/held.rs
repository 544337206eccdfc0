//! A streamable HTTP upstream reached through a session the gateway holds
//! itself, for clients that keep none (hosts that drop the session id, or
//! start a new one per call): each message goes out as one POST carrying
//! the held session's id, and whatever comes back (a JSON answer, the
//! events of an SSE answer, the session's GET stream) is routed by the
//! [`MessageSession`]. What an answer's stream carries besides the answer is
//! routed to the request it came with.
//!
//! The session is opened by the first message (the gateway's `initialize`):
//! its answer gives the session id and the revision later requests name in
//! `MCP-Protocol-Version`. When the upstream forgets the session (a 404 for
//! its id: a restart, an expiry) it is opened again with the same
//! `initialize`, and the message it refused is sent again: it never reached
//! the upstream. It is ended with a DELETE when the session ends.
//!
//! The credentials of the request that opened it (`Authorization` and the
//! mount's forwarded headers) and its caller's claims (`claims_to_headers`)
//! go with every message, and with its stream: the pool never gives a held
//! session to a request with other credentials, or whose caller's token
//! says other claims (that one gets a session opened with its own).
//!
//! - `get_stream`: the session's GET stream, what the upstream says on its
//!   own;
//! - `read`: reading an answer, whole or as the events of an SSE body.

mod get_stream;
mod read;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::{Method, StatusCode};
use http_body_util::Full;
use serde_json::Value;

use super::client::{Client, UpstreamBody, send};
use super::messages::{MessageSession, Mux};
use mcp_ui_model::config::Limits;
use mcp_ui_model::outcome::{Failure, UpstreamError};
use mcp_ui_wire::jsonrpc::{self, Kind};
use read::{Events, read};

const SESSION: HeaderName = HeaderName::from_static("mcp-session-id");
const PROTOCOL: HeaderName = HeaderName::from_static("mcp-protocol-version");

/// Wait before opening the GET stream again after it ended.
const GET_RETRY: Duration = Duration::from_secs(1);

/// Called when the upstream forgot the session and it was opened again.
pub type OnReopen = Arc<dyn Fn() + Send + Sync>;

struct Pipe {
    name: String,
    url: http::Uri,
    client: Client,
    limit: usize,
    timeout: Duration,
    /// Sent with every request: the opener's credentials and claims.
    headers: HeaderMap,
    sid: Mutex<Option<HeaderValue>>,
    version: Mutex<Option<HeaderValue>>,
    /// The `initialize` that opened the session, to open it again.
    init: Mutex<Option<Bytes>>,
    reopening: tokio::sync::Mutex<()>,
    get_started: AtomicBool,
    on_reopen: Option<OnReopen>,
}

/// A message session over a held streamable HTTP session to `url`;
/// `headers` go with every request.
pub fn open(
    name: &str,
    url: &http::Uri,
    limits: &Limits,
    client: &Client,
    mux: Option<Arc<Mux>>,
    headers: HeaderMap,
    on_reopen: Option<OnReopen>,
) -> Arc<MessageSession> {
    let session = MessageSession::new(name.into(), mux);
    let pipe = Arc::new(Pipe {
        name: name.to_owned(),
        url: url.clone(),
        client: client.clone(),
        limit: limits.max_message_bytes,
        timeout: Duration::from_secs(limits.request_timeout_secs),
        headers,
        sid: Mutex::default(),
        version: Mutex::default(),
        init: Mutex::default(),
        reopening: tokio::sync::Mutex::new(()),
        get_started: AtomicBool::new(false),
        on_reopen,
    });
    tokio::spawn(write(pipe, session.clone()));
    session
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Send what the session queues, in order: a notification or a response is
/// delivered before the next message is taken, a request's answer is read
/// on its own (a long call holds nothing else up).
async fn write(pipe: Arc<Pipe>, session: Arc<MessageSession>) {
    loop {
        let message = tokio::select! {
            m = session.outgoing() => m,
            _ = session.closed().cancelled() => break,
        };
        let is_request = jsonrpc::classify_one(&message).is_ok_and(|m| m.kind == Kind::Request);
        if is_request {
            let (pipe, session) = (pipe.clone(), session.clone());
            tokio::spawn(async move { pipe.post(&session, message).await });
        } else {
            pipe.post(&session, message).await;
        }
    }
    pipe.end().await;
}

impl Pipe {
    fn request(
        &self,
        method: Method,
        body: Bytes,
        sid: Option<&HeaderValue>,
    ) -> http::Request<Full<Bytes>> {
        let mut req = http::Request::new(Full::new(body));
        *req.method_mut() = method;
        *req.uri_mut() = self.url.clone();
        let h = req.headers_mut();
        for (name, v) in &self.headers {
            h.append(name.clone(), v.clone());
        }
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        h.insert(
            header::ACCEPT,
            HeaderValue::from_static("application/json, text/event-stream"),
        );
        h.insert(
            header::USER_AGENT,
            HeaderValue::from_static(concat!("mcp-ui-gateway/", env!("CARGO_PKG_VERSION"))),
        );
        if let Some(sid) = sid {
            h.insert(SESSION, sid.clone());
        }
        if let Some(v) = lock(&self.version).clone() {
            h.insert(PROTOCOL, v);
        }
        req
    }

    /// POST one message and route what comes back.
    async fn post(&self, session: &Arc<MessageSession>, message: Bytes) {
        let Ok(m) = jsonrpc::classify_one(&message) else {
            return;
        };
        let key =
            m.id.filter(|_| m.kind == Kind::Request)
                .map(jsonrpc::id_key);
        let initialize = m.method.as_deref() == Some("initialize");
        if initialize {
            *lock(&self.init) = Some(message.clone());
        }
        let fail = |failure: Failure| {
            if let Some(k) = &key {
                session.fail(k, failure);
            }
        };
        // A request of the 2026-07-28 envelope on a connection the gateway
        // did not initialize says so in its headers, as that revision
        // requires (the probe that asks whether the upstream speaks it).
        let envelope = (lock(&self.version).is_none())
            .then(|| mcp_ui_wire::protocol::meta_version(m.params))
            .flatten()
            .filter(|v| mcp_ui_wire::protocol::is_envelope(v))
            .and_then(|v| HeaderValue::from_str(&v).ok())
            .zip(
                m.method
                    .as_deref()
                    .and_then(|v| HeaderValue::from_str(v).ok()),
            );
        for attempt in 0..2 {
            let sid = lock(&self.sid).clone();
            let mut req = self.request(Method::POST, message.clone(), sid.as_ref());
            if let Some((version, method)) = &envelope {
                req.headers_mut().insert(PROTOCOL, version.clone());
                req.headers_mut()
                    .insert(HeaderName::from_static("mcp-method"), method.clone());
            }
            let resp = match send(&self.client, &self.name, req, self.timeout).await {
                Ok(r) => r,
                Err(e) => return fail(Failure::Upstream(e)),
            };
            let status = resp.status();
            let may_reopen = sid.is_some() && attempt == 0 && !initialize;
            // A 400 is read to tell a forgotten session from a refusal.
            let (resp, body) = match status {
                StatusCode::BAD_REQUEST if may_reopen => {
                    let (parts, body) = resp.into_parts();
                    let (read, body) = body.read_whole(4096).await;
                    (http::Response::from_parts(parts, body), read)
                }
                _ => (resp, None),
            };
            if may_reopen && mcp_ui_wire::protocol::forgot_session(status, body.as_deref()) {
                // The upstream forgot the session: it never saw this message.
                if let Err(f) = self.reopen(session, sid.as_ref()).await {
                    session.close(format!(
                        "forgot its session and would not open another: {f}"
                    ));
                    return;
                }
                continue;
            }
            if initialize && status.is_success() {
                *lock(&self.sid) = resp.headers().get(SESSION).cloned();
            }
            return self.answer(session, resp, key.as_deref(), initialize).await;
        }
    }

    /// Route an answer to the request `key` (none for a notification).
    async fn answer(
        &self,
        session: &Arc<MessageSession>,
        resp: http::Response<UpstreamBody>,
        key: Option<&str>,
        initialize: bool,
    ) {
        let (parts, body) = resp.into_parts();
        let status = parts.status;
        let fail = |failure: Failure| {
            if let Some(k) = key {
                session.fail(k, failure);
            }
        };
        if matches!(status, StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN) {
            return fail(Failure::Refused {
                upstream: self.name.clone(),
                status,
                challenges: parts
                    .headers
                    .get_all(header::WWW_AUTHENTICATE)
                    .iter()
                    .cloned()
                    .collect(),
            });
        }
        if status == StatusCode::ACCEPTED || (status.is_success() && key.is_none()) {
            return;
        }
        let sse = parts
            .headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.trim_start().starts_with("text/event-stream"));
        if status.is_success() && sse {
            let mut events = Events::new(body.unbounded(), self.limit);
            while let Some(data) = events.next().await {
                match data {
                    Ok(data) => {
                        if initialize {
                            self.learn_version(&data);
                        }
                        session.deliver_for(data, key).await;
                    }
                    Err(detail) => {
                        return fail(protocol(&self.name, detail));
                    }
                }
            }
            if initialize {
                self.start_get(session);
            }
            return;
        }
        let bytes = match read(body, self.limit).await {
            Ok(b) => b,
            Err(detail) => return fail(protocol(&self.name, detail)),
        };
        let answers_it = jsonrpc::classify_one(&bytes)
            .is_ok_and(|m| m.kind == Kind::Response && m.id.map(jsonrpc::id_key).as_deref() == key);
        if answers_it {
            if initialize && status.is_success() {
                self.learn_version(&bytes);
                self.start_get(session);
            }
            session.deliver_for(bytes, key).await;
            return;
        }
        let excerpt: String = String::from_utf8_lossy(&bytes).chars().take(200).collect();
        fail(protocol(
            &self.name,
            format!("answered HTTP {status} to the held session's request: {excerpt}"),
        ));
    }

    /// Note the revision an `initialize` answer settled on.
    fn learn_version(&self, answer: &[u8]) {
        let v = serde_json::from_slice::<Value>(answer).ok();
        let version = v
            .as_ref()
            .and_then(|v| v.get("result")?.get("protocolVersion")?.as_str())
            .and_then(|v| HeaderValue::from_str(v).ok());
        if let Some(version) = version {
            *lock(&self.version) = Some(version);
        }
    }

    /// Open the session again with the `initialize` that opened it, unless
    /// another request did so since `stale` was refused.
    async fn reopen(
        &self,
        session: &Arc<MessageSession>,
        stale: Option<&HeaderValue>,
    ) -> Result<(), String> {
        let _one = self.reopening.lock().await;
        if lock(&self.sid).as_ref() != stale {
            return Ok(());
        }
        let init = lock(&self.init)
            .clone()
            .ok_or("no initialize to open it with")?;
        let resp = send(
            &self.client,
            &self.name,
            self.request(Method::POST, init, None),
            self.timeout,
        )
        .await
        .map_err(|e| e.to_string())?;
        if !resp.status().is_success() {
            return Err(format!(
                "its initialize was answered HTTP {}",
                resp.status()
            ));
        }
        let sid = resp.headers().get(SESSION).cloned();
        let sse = resp
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        // The answer is the gateway's: read and dropped.
        if sse {
            let mut events = Events::new(resp.into_body(), self.limit);
            while let Some(e) = events.next().await {
                if e.is_ok_and(|d| {
                    jsonrpc::classify_one(&d).is_ok_and(|m| m.kind == Kind::Response)
                }) {
                    break;
                }
            }
        } else {
            let _ = read(resp.into_body(), self.limit).await;
        }
        *lock(&self.sid) = sid.clone();
        let initialized =
            Bytes::from_static(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        let req = self.request(Method::POST, initialized, sid.as_ref());
        if let Ok(resp) = send(&self.client, &self.name, req, self.timeout).await {
            let _ = read(resp.into_body(), self.limit).await;
        }
        tracing::info!(upstream = %self.name, "the upstream forgot the session the gateway holds; opened another");
        if let Some(f) = &self.on_reopen {
            f();
        }
        self.get_started.store(false, Ordering::Release);
        self.start_get(session);
        Ok(())
    }

    /// End the held session upstream (best effort).
    async fn end(&self) {
        let Some(sid) = lock(&self.sid).take() else {
            return;
        };
        let req = self.request(Method::DELETE, Bytes::new(), Some(&sid));
        let bound = self.timeout.min(Duration::from_secs(10));
        let (client, name) = (self.client.clone(), self.name.clone());
        tokio::spawn(async move {
            let _ = send(&client, &name, req, bound).await;
        });
    }
}

fn protocol(upstream: &str, detail: String) -> Failure {
    Failure::Upstream(UpstreamError::Protocol {
        upstream: upstream.to_owned(),
        detail,
    })
}
