//! An upstream's SSE answer to a POST, relayed event by event: the planned
//! rewrite applied to the request's response event, the spans of the
//! upstream's requests watched, and a request's stream that breaks off or
//! outlives the request ended with an error for it.

use http::Response;
use http_body_util::BodyExt;
use serde_json::value::RawValue;

use crate::pending::finish::Finisher;
use crate::relay::context::Ctx;
use crate::relay::{stream, watch};
use mcp_ui_model::outcome::OutcomeSlot;
use mcp_ui_model::reply::Body;
use mcp_ui_rewrite::bridge::Filter;
use mcp_ui_upstream::upstream::client::UpstreamBody;
use mcp_ui_wire::jsonrpc;

/// How long a `subscriptions/listen` stream may last: as long as its client
/// keeps it (the bound only keeps the deadline's arithmetic finite).
const SUBSCRIPTION_BOUND: std::time::Duration =
    std::time::Duration::from_secs(10 * 365 * 24 * 3600);

/// The client's response made of the upstream's SSE `body` under `head`,
/// for the request `id` (`None`: notifications and responses only).
pub(super) fn relay(
    cx: &Ctx<'_>,
    head: Response<()>,
    body: UpstreamBody,
    finisher: Option<Finisher>,
    id: Option<&RawValue>,
    subscription: Option<Filter>,
) -> Response<Body> {
    let gw = cx.gw;
    // A request's SSE answer ends with an error event for it at the
    // request's deadline (below), in place of a cut; a subscription's
    // lasts until its client or the gateway ends it.
    let deadline = match subscription {
        Some(_) => Some(tokio::time::Instant::now() + SUBSCRIPTION_BOUND),
        None => body.deadline(),
    };
    let body = match id {
        Some(_) => body.unbounded(),
        None => body,
    };
    let body = match (&finisher, id, subscription) {
        // A subscription hears the overlays' reloads too, as it asked.
        (_, Some(id), Some(filter)) => stream::with_subscription(
            body,
            gw.live.subscribe(),
            gw.limits.max_message_bytes,
            gw.shutdown.clone(),
            (filter, id.to_owned()),
            watch::watch(cx),
        ),
        (Some(finisher), Some(id), None) => {
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
