//! The spans of one client request through the relay: a SERVER span from
//! its arrival to the end of its answer, a CLIENT span for the request sent
//! upstream, INTERNAL spans for a rewrite or an answer the gateway writes
//! itself; attributes from the MCP semantic conventions. And the trace
//! context sent upstream:
//!
//! - a sampled request: the CLIENT span's `traceparent` (sampled), with the
//!   client's `tracestate`;
//! - a request not sampled that came with a context: that context as
//!   received (the upstream stays in the client's trace);
//! - otherwise nothing: the message goes upstream untouched.
//!
//! The context read is `params._meta.traceparent` (and `tracestate`) when
//! present, else the `traceparent` (and `tracestate`) HTTP headers.

use std::borrow::Cow;
use std::sync::Arc;

use bytes::Bytes;
use http::StatusCode;
use http::header::{HeaderMap, HeaderName};
use serde::Deserialize;
use serde_json::value::RawValue;

use super::context::{self, Remote, SpanId, new_span_id, new_trace_id};
use super::meta;
use super::span::{Kind, Parent, Span};
use super::tracer::Tracer;
use mcp_ui_model::outcome::Outcome;
use mcp_ui_wire::jsonrpc::{Kind as MessageKind, Message};

pub const TRACEPARENT: HeaderName = HeaderName::from_static("traceparent");
pub const TRACESTATE: HeaderName = HeaderName::from_static("tracestate");

/// The trace context sent upstream.
#[derive(Debug, Clone)]
pub struct Outgoing {
    pub traceparent: String,
    pub tracestate: Option<String>,
}

/// Where the mount is and what it fronts, for span attributes.
pub struct Place<'a> {
    pub path: &'a str,
    pub upstream: &'a str,
}

/// One traced client request: the server span's context (sampled requests
/// only) and what goes upstream.
pub struct Traced {
    /// The server span, for its children; `None` when not sampled.
    pub parent: Option<Parent>,
    outgoing: Option<Outgoing>,
    client_span: SpanId,
    name: String,
    method: String,
    /// `gen_ai.tool.name`, `gen_ai.prompt.name` or `mcp.resource.uri`.
    target: Option<(&'static str, String)>,
    request_id: Option<String>,
    upstream: String,
}

impl Tracer {
    /// Start tracing a single message the client sent: its server span
    /// (when sampled) and what its trace sends upstream.
    pub fn server(
        self: &Arc<Self>,
        headers: &HeaderMap,
        m: &Message<'_>,
        place: &Place<'_>,
    ) -> (Option<Span>, Traced) {
        let seen = meta::read(m.params);
        let remote = remote_of(&seen, headers);
        let method = m.method.as_deref().unwrap_or("response").to_owned();
        let target = target_of(&method, seen);
        let name = match &target {
            Some((_, t)) => format!("{method} {t}"),
            None => method.clone(),
        };
        let request_id =
            m.id.filter(|_| m.kind == MessageKind::Request)
                .map(request_id_text);
        let trace_id = remote.as_ref().map_or_else(new_trace_id, |r| r.trace_id);
        let sampled = self.sample(&trace_id, remote.as_ref().map(|r| r.sampled));
        let client_span = new_span_id();
        let mut traced = Traced {
            parent: None,
            outgoing: None,
            client_span,
            name,
            method,
            target,
            request_id,
            upstream: place.upstream.to_owned(),
        };
        if !sampled {
            traced.outgoing = remote.map(|r| Outgoing {
                traceparent: context::traceparent(&r.trace_id, &r.span_id, r.sampled),
                tracestate: r.tracestate,
            });
            return (None, traced);
        }
        let Remote {
            span_id: parent_id,
            tracestate,
            ..
        } = remote.unwrap_or(Remote {
            trace_id,
            span_id: [0; 8],
            sampled: true,
            tracestate: None,
        });
        let parent_id = (parent_id != [0; 8]).then_some(parent_id);
        let mut span = Span::start(
            self.clone(),
            trace_id,
            new_span_id(),
            parent_id,
            traced.name.clone(),
            Kind::Server,
        );
        span.set_tracestate(tracestate.clone());
        traced.attributes(&mut span);
        http_attributes(&mut span, headers, place);
        traced.parent = span.parent();
        traced.outgoing = Some(Outgoing {
            traceparent: context::traceparent(&trace_id, &client_span, true),
            tracestate,
        });
        (Some(span), traced)
    }
}

/// The client's trace context: `params._meta`'s, else the headers'.
fn remote_of(seen: &meta::ParamsTrace<'_>, headers: &HeaderMap) -> Option<Remote> {
    let from_meta = meta::string(seen.traceparent)
        .and_then(|tp| context::remote(&tp, meta::string(seen.tracestate).as_deref()));
    from_meta.or_else(|| {
        let header = |n: &HeaderName| headers.get(n).and_then(|v| v.to_str().ok());
        context::remote(header(&TRACEPARENT)?, header(&TRACESTATE))
    })
}

/// What a request of `method` acts on, as its span names it: the tool, the
/// prompt or the resource.
fn target_of(method: &str, seen: meta::ParamsTrace<'_>) -> Option<(&'static str, String)> {
    match method {
        "tools/call" => seen.name.map(|n| ("gen_ai.tool.name", n.into_owned())),
        "prompts/get" => seen.name.map(|n| ("gen_ai.prompt.name", n.into_owned())),
        "resources/read" | "resources/subscribe" | "resources/unsubscribe" => {
            seen.uri.map(|u| ("mcp.resource.uri", u.into_owned()))
        }
        _ => None,
    }
}

/// The server span's attributes of the HTTP exchange and the mount.
fn http_attributes(span: &mut Span, headers: &HeaderMap, place: &Place<'_>) {
    let header = |n: &'static str| {
        headers
            .get(n)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    if let Some(session) = header("mcp-session-id") {
        span.set("mcp.session.id", session);
    }
    if let Some(version) = header("mcp-protocol-version") {
        span.set("mcp.protocol.version", version);
    }
    span.set("network.transport", "tcp");
    span.set("network.protocol.name", "http");
    span.set("mcp_ui_gateway.mount", place.path.to_owned());
}

impl Traced {
    fn attributes(&self, span: &mut Span) {
        span.set("mcp.method.name", self.method.clone());
        if let Some(id) = &self.request_id {
            span.set("jsonrpc.request.id", id.clone());
        }
        if let Some((key, value)) = &self.target {
            span.set(key, value.clone());
            if *key == "gen_ai.tool.name" {
                span.set("gen_ai.operation.name", "execute_tool");
            }
        }
        span.set("mcp_ui_gateway.upstream", self.upstream.clone());
    }

    /// The trace context to send upstream, if any.
    pub fn outgoing(&self) -> Option<&Outgoing> {
        self.outgoing.as_ref()
    }

    /// The message with the outgoing context in `params._meta` (requests
    /// only; `None` leaves it as received).
    pub fn inject(&self, body: &[u8], m: &Message<'_>) -> Option<Bytes> {
        let out = self.outgoing.as_ref()?;
        if m.kind != MessageKind::Request {
            return None;
        }
        let seen = meta::read(m.params);
        meta::inject(
            body,
            m.params,
            &seen,
            &out.traceparent,
            out.tracestate.as_deref(),
        )
        .map(Bytes::from)
    }

    /// Start the client span of the request sent upstream over `transport`
    /// (`network.transport`: `tcp` or `pipe`).
    pub fn client(&self, transport: &'static str) -> Option<Span> {
        let p = self.parent.as_ref()?;
        let mut span = Span::start(
            p.tracer.clone(),
            p.trace_id,
            self.client_span,
            Some(p.span_id),
            self.name.clone(),
            Kind::Client,
        );
        self.attributes(&mut span);
        span.set("network.transport", transport);
        Some(span)
    }

    /// Record an answer the gateway wrote itself (a render tool, a widget
    /// resource) that took from `started` (Unix nanoseconds) to now.
    pub fn answered(&self, started: u64) {
        if let Some(p) = &self.parent {
            let mut span = p.child(format!("answer {}", self.name), Kind::Internal);
            span.set_start(started);
            self.attributes(&mut span);
            span.end();
        }
    }
}

/// A request id as an attribute: a string id's text, a number as written.
fn request_id_text(id: &RawValue) -> String {
    serde_json::from_str::<Cow<'_, str>>(id.get())
        .map_or_else(|_| id.get().to_owned(), Cow::into_owned)
}

/// End a client span with what the upstream call came to: a status and, for
/// a failure the gateway answered, its outcome.
pub fn end_client(mut span: Span, status: StatusCode, said: Option<Outcome>) {
    let outcome = said.unwrap_or_else(|| Outcome::of_answer(status, false));
    if outcome != Outcome::Ok {
        span.fail(outcome.label(), format!("{} ({status})", outcome.label()));
    }
    span.end();
}

/// End a server span with the exchange's outcome; `answer` is the JSON
/// answer, when kept, whose JSON-RPC error code is recorded.
pub fn end_server(mut span: Span, outcome: Outcome, answer: Option<&[u8]>) {
    if outcome != Outcome::Ok {
        let code = answer.and_then(error_code);
        match code {
            Some(code) => {
                span.set("rpc.response.status_code", code.to_string());
                span.fail(code.to_string(), outcome.label().to_owned());
            }
            None => span.fail(outcome.label(), outcome.label().to_owned()),
        }
    }
    span.end();
}

/// The code of a JSON-RPC error response.
fn error_code(answer: &[u8]) -> Option<i64> {
    let m = mcp_ui_wire::jsonrpc::classify_one(answer).ok()?;
    error_code_of(m.error?.get())
}

/// The code of a JSON-RPC error object.
pub(super) fn error_code_of(error: &str) -> Option<i64> {
    #[derive(Deserialize)]
    struct Error {
        code: i64,
    }
    serde_json::from_str::<Error>(error).ok().map(|e| e.code)
}
