//! An upstream's SSE answer to a POST, relayed event by event: the planned
//! rewrite applied to the request's response event, the spans of the
//! upstream's requests watched, and a request's stream that breaks off or
//! outlives the request ended with an error for it.

use http::Response;
use http_body_util::BodyExt;
use serde_json::value::RawValue;

use crate::jsonrpc;
use crate::outcome::OutcomeSlot;
use crate::relay::context::Ctx;
use crate::relay::finish::Finisher;
use crate::relay::{stream, watch};
use crate::reply::Body;
use crate::upstream::client::UpstreamBody;

/// The client's response made of the upstream's SSE `body` under `head`,
/// for the request `id` (`None`: notifications and responses only).
pub(super) fn relay(
    cx: &Ctx<'_>,
    head: Response<()>,
    body: UpstreamBody,
    finisher: Option<Finisher>,
    id: Option<&RawValue>,
) -> Response<Body> {
    let gw = cx.gw;
    // A request's SSE answer ends with an error event for it at the
    // request's deadline (below), in place of a cut.
    let deadline = body.deadline();
    let body = match id {
        Some(_) => body.unbounded(),
        None => body,
    };
    let body = match (&finisher, id) {
        (Some(finisher), Some(id)) => {
            let limit = gw.limits.max_message_bytes;
            let key = jsonrpc::id_key(id);
            stream::rewrite_response_events(body, key, finisher.clone(), limit, watch::watch(cx))
        }
        _ => match watch::watch(cx) {
            Some(watch) => stream::watched(body, gw.limits.max_message_bytes, watch),
            None => body.map_err(Into::into).boxed_unsync(),
        },
    };
    match id {
        // A request's SSE answer that breaks off, or is still open at the
        // request timeout, ends with an error for it.
        Some(id) => {
            let slot = OutcomeSlot::new();
            let end = stream::FailureEnd {
                upstream: cx.upstream().to_owned(),
                id: id.to_owned(),
                slot: slot.clone(),
                timeout_secs: gw.limits.request_timeout_secs,
            };
            let deadline =
                deadline.unwrap_or_else(|| tokio::time::Instant::now() + gw.request_timeout());
            let mut r = head.map(|()| stream::end_on_failure(body, end, deadline));
            r.extensions_mut().insert(slot);
            r
        }
        None => head.map(|()| body),
    }
}
