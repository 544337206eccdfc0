//! With tracing on, what sees each message relayed to the client: the
//! requests an upstream sends the client get their spans
//! ([`mcp_ui_upstream::telemetry::outbound`]).

use super::context::{Ctx, SESSION_HEADER};
use super::stream::Watch;

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
