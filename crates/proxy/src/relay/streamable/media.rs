//! What an HTTP upstream's answer is by its Content-Type: JSON, an SSE
//! stream, or something that is not an MCP answer at all.

use http::StatusCode;
use http::header::{self, HeaderMap};

use crate::relay::context::Ctx;
use mcp_ui_model::outcome::{Failure, UpstreamError};

/// A request's answer is JSON or an SSE stream; anything else (an HTML
/// error page from a proxy, a misconfigured URL) is not an MCP answer: the
/// failure that answers the request (`request` says there is one) instead.
pub(super) fn refuse_unknown(
    cx: &Ctx<'_>,
    parts: &http::response::Parts,
    request: bool,
) -> Result<(), Failure> {
    if parts.status.is_success()
        && parts.status != StatusCode::ACCEPTED
        && request
        && !is_event_stream(&parts.headers)
        && !is_json(&parts.headers)
    {
        let found = parts
            .headers
            .get(header::CONTENT_TYPE)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
            .unwrap_or_else(|| "none".into());
        let detail = format!(
            "answered {} with Content-Type {found:?}, not application/json or text/event-stream",
            parts.status
        );
        return Err(protocol_failure(cx, detail));
    }
    Ok(())
}

/// The upstream answered something that is not an MCP answer.
pub(super) fn protocol_failure(cx: &Ctx<'_>, detail: String) -> Failure {
    Failure::Upstream(UpstreamError::Protocol {
        upstream: cx.upstream().to_owned(),
        detail,
    })
}

fn is_json(h: &HeaderMap) -> bool {
    h.get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"))
}

pub(super) fn is_event_stream(h: &HeaderMap) -> bool {
    h.get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().starts_with("text/event-stream"))
}
