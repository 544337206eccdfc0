//! The spans of requests an upstream sends the client through the gateway
//! (`sampling/createMessage`, `elicitation/create`, `roots/list`, …): a
//! CLIENT span (the gateway asks the client) from the moment the request is
//! relayed to the moment the client's answer is, with the answer's JSON-RPC
//! error code on error. Its parent is the upstream's
//! `params._meta.traceparent` when the request carries one, else the server
//! span of the client request whose answer stream carried it, else none (a
//! new trace).
//!
//! Open spans wait in a bounded table keyed by the client's session and the
//! request's id ([`super::pending`]); when it is full the oldest is ended
//! as unanswered.

use std::sync::Arc;

use super::context::{self, new_span_id, new_trace_id};
use super::data::{SpanData, Value};
use super::meta;
use super::span::{Kind, Parent, Span};
use super::tracer::Tracer;
use mcp_ui_wire::jsonrpc::{self, Kind as MessageKind, Message};

impl Tracer {
    /// The upstream's message `data` is being relayed to the client of
    /// `session` (`""` for none): a request starts its span. `parent` is the
    /// server span of the client request whose answer carries it, if any.
    pub fn relaying(
        self: &Arc<Self>,
        session: &str,
        data: &[u8],
        parent: Option<&Parent>,
        upstream: &str,
    ) {
        // Most events are not requests: tell them by their text first.
        if !memchr_method(data) {
            return;
        }
        let Ok(m) = jsonrpc::classify_one(data) else {
            return;
        };
        let (MessageKind::Request, Some(method), Some(id)) = (m.kind, m.method.as_deref(), m.id)
        else {
            return;
        };
        let seen = meta::read(m.params);
        let remote = meta::string(seen.traceparent)
            .and_then(|tp| context::remote(&tp, meta::string(seen.tracestate).as_deref()));
        let (trace_id, parent_id, sampled) = match (&remote, parent) {
            (Some(r), _) => (r.trace_id, Some(r.span_id), Some(r.sampled)),
            (None, Some(p)) => (p.trace_id, Some(p.span_id), Some(true)),
            (None, None) => (new_trace_id(), None, None),
        };
        if !self.sample(&trace_id, sampled) {
            return;
        }
        let mut span = Span::start(
            self.clone(),
            trace_id,
            new_span_id(),
            parent_id,
            method.to_owned(),
            Kind::Client,
        );
        span.set_tracestate(remote.and_then(|r| r.tracestate));
        let id = jsonrpc::id_key(id);
        span.set("mcp.method.name", method.to_owned());
        span.set("jsonrpc.request.id", request_id_text(&id));
        if !session.is_empty() {
            span.set("mcp.session.id", session.to_owned());
        }
        span.set("network.transport", "tcp");
        span.set("network.protocol.name", "http");
        span.set("mcp_ui_gateway.upstream", upstream.to_owned());
        let Some(data) = span.into_data() else {
            return;
        };
        for mut pushed in self.outbound.insert((session.into(), id), data) {
            fail(&mut pushed, "unanswered".into(), "no answer relayed".into());
            self.end_data(pushed);
        }
    }

    /// The client of `session` answered: the span of the request it answers
    /// ends, with the answer's error code on error.
    pub fn answered_by_client(&self, session: &str, m: &Message<'_>) {
        let (MessageKind::Response, Some(id)) = (m.kind, m.id) else {
            return;
        };
        let key = (Box::<str>::from(session), jsonrpc::id_key(id));
        let Some(mut data) = self.outbound.take(&key) else {
            return;
        };
        if let Some(code) = m
            .error
            .and_then(|e| super::request_spans::error_code_of(e.get()))
        {
            let code = code.to_string();
            data.attributes
                .push(("rpc.response.status_code", Value::from(code.clone())));
            fail(
                &mut data,
                code.clone(),
                format!("the client answered {code}"),
            );
        }
        self.end_data(data);
    }

    /// End a span taken from the table, now.
    fn end_data(&self, mut data: SpanData) {
        data.end_nanos = mcp_ui_model::clock::unix_nanos().max(data.start_nanos);
        self.queue(data);
    }
}

/// Mark a span failed: `error.type` and its status message.
fn fail(data: &mut SpanData, error_type: String, message: String) {
    data.attributes
        .push(("error.type", Value::from(error_type)));
    data.error = Some(message);
}

/// Whether `data` may be a request: it names a method.
fn memchr_method(data: &[u8]) -> bool {
    data.windows(8).any(|w| w == b"\"method\"")
}

/// A request id key as an attribute: a string's text, a number as written.
fn request_id_text(key: &str) -> String {
    serde_json::from_str::<String>(key).unwrap_or_else(|_| key.to_owned())
}
