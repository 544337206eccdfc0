//! With tracing on, the spans of an exchange: the server span of a message
//! or of each request of a batch, the client span of the request that goes
//! upstream, and what sees each message relayed to the client (the requests
//! an upstream sends the client get their spans,
//! [`mcp_ui_upstream::telemetry::outbound`]).

use std::sync::Arc;

use serde_json::value::RawValue;

use super::context::{Ctx, SESSION_HEADER};
use super::stream::Watch;
use crate::gateway::MountState;
use mcp_ui_model::config::Transport;
use mcp_ui_upstream::telemetry::{self, Traced, Tracer, request_spans::Place};
use mcp_ui_wire::jsonrpc::{self, Kind};

/// The client's session id, `""` for none.
pub(crate) fn session_of(headers: &http::HeaderMap) -> &str {
    headers
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
}

/// The watch of the messages relayed to `cx`'s client, children of its
/// server span when sampled; `None` with tracing off.
pub fn watch(cx: &Ctx<'_>) -> Option<Watch> {
    let tracer = cx.gw.telemetry.clone()?;
    let session = session_of(cx.headers).to_owned();
    let parent = cx.trace.as_ref().and_then(|t| t.parent.clone());
    let upstream = cx.upstream().to_owned();
    Some(Box::new(move |data: &[u8]| {
        tracer.relaying(&session, data, parent.as_ref(), &upstream);
    }))
}

/// Start the trace of a single message: its server span is ended with the
/// exchange (by the metrics, which know how it ended).
pub(super) fn start_trace(
    tracer: &Arc<Tracer>,
    mount: &MountState,
    headers: &http::HeaderMap,
    m: &jsonrpc::Message<'_>,
    exchange: &mut crate::metrics::Exchange,
) -> Traced {
    let place = Place {
        path: &mount.config.path,
        upstream: &mount.config.name,
    };
    let (span, traced) = tracer.server(headers, m, &place);
    exchange.set_span(span);
    traced
}

/// A server span for each request of a batch (sampled ones), each from its
/// own `params._meta` context or the headers'. A batch goes upstream as
/// received: no context is added to its messages.
pub(super) fn batch_spans(
    tracer: &Arc<Tracer>,
    mount: &MountState,
    headers: &http::HeaderMap,
    items: &[(jsonrpc::Message<'_>, &RawValue)],
) -> Vec<telemetry::Span> {
    let place = Place {
        path: &mount.config.path,
        upstream: &mount.config.name,
    };
    items
        .iter()
        .filter(|(m, _)| m.kind == Kind::Request)
        .filter_map(|(m, _)| tracer.server(headers, m, &place).0)
        .collect()
}

/// `network.transport` of the mount's upstream.
pub(super) fn network_transport(cx: &Ctx<'_>) -> &'static str {
    match cx.mount.config.transport {
        Transport::Stdio(_) => "pipe",
        _ => "tcp",
    }
}
