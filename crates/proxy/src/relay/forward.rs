//! The request an HTTP upstream gets for a client's: the mount's URL, the
//! client's headers the upstream may see, the upstream session, the
//! envelope's headers when the body says more than the client's did, and the
//! trace context.

use bytes::Bytes;
use http::Request;
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http_body_util::Full;

use super::context::{Ctx, METHOD_HEADER, NAME_HEADER, PROTOCOL_HEADER, SESSION_HEADER};
use mcp_ui_model::config::Transport;

/// Request headers the mount's own upstream receives when the client sent
/// them (with the mount's `forward_headers`); never any other upstream's, and
/// never logged: `Authorization` carries the client's token.
static FORWARDED_REQUEST_HEADERS: [HeaderName; 8] = [
    header::CONTENT_TYPE,
    header::ACCEPT,
    header::AUTHORIZATION,
    header::USER_AGENT,
    PROTOCOL_HEADER,
    HeaderName::from_static("last-event-id"),
    METHOD_HEADER,
    NAME_HEADER,
];

/// A request to the mount's upstream with the client's forwarded headers
/// and the upstream session `sid`.
pub(super) fn request_for(
    cx: &Ctx<'_>,
    method: http::Method,
    body: Bytes,
    sid: Option<&HeaderValue>,
) -> Request<Full<Bytes>> {
    let Transport::Http { url } = &cx.mount.config.transport else {
        unreachable!("only HTTP mounts are relayed request by request")
    };
    let mut req = Request::new(Full::new(body));
    *req.method_mut() = method;
    *req.uri_mut() = url.clone();
    let out = req.headers_mut();
    let extra = &cx.mount.config.forward_headers;
    // One pass over the client's headers, in their order.
    for (name, v) in cx.headers {
        let own = extra.contains(name);
        if !own && !FORWARDED_REQUEST_HEADERS.contains(name) {
            continue;
        }
        let mut v = v.clone();
        // Debug output of a sensitive value (and HPACK indexing) hides it.
        if own || name == header::AUTHORIZATION {
            v.set_sensitive(true);
        }
        out.append(name.clone(), v);
    }
    // The verified caller's claims, never a client's header of their names.
    if let Some(auth) = &cx.mount.config.auth {
        for (name, _) in &auth.claims_to_headers {
            out.remove(name);
        }
        let claimed = crate::oauth::resource_server::Claimed::of(Some(auth), &cx.access, false);
        for (name, v) in &claimed.headers {
            let mut v = v.clone();
            v.set_sensitive(true);
            out.insert(name.clone(), v);
        }
    }
    if let Some(sid) = sid {
        out.insert(SESSION_HEADER, sid.clone());
    }
    if let Some(e) = &cx.envelope {
        e.apply(out);
    }
    if let Some(trace) = cx.trace.as_ref().and_then(|t| t.outgoing()) {
        trace_headers(out, trace);
    }
    req
}

/// The trace context an HTTP upstream receives in its headers too.
fn trace_headers(out: &mut HeaderMap, trace: &mcp_ui_upstream::telemetry::request_spans::Outgoing) {
    use mcp_ui_upstream::telemetry::request_spans::{TRACEPARENT, TRACESTATE};
    if let Ok(v) = HeaderValue::from_str(&trace.traceparent) {
        out.insert(TRACEPARENT, v);
    }
    match trace.tracestate.as_deref().map(HeaderValue::from_str) {
        Some(Ok(v)) => {
            out.insert(TRACESTATE, v);
        }
        _ => {
            out.remove(TRACESTATE);
        }
    }
}
