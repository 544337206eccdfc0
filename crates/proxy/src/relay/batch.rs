//! A batch (2025-03-26) on a message session: each message goes upstream
//! on its own (stdio servers need not know batches), and the answers to
//! its requests come back as one SSE answer, in the order they arrive,
//! within the request timeout.

use std::sync::Arc;

use bytes::Bytes;
use futures_util::StreamExt;
use futures_util::stream::BoxStream;
use http::Response;
use serde_json::value::RawValue;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_stream::wrappers::ReceiverStream;

use super::answer::{accepted, message_event, sse_response};
use super::context::Ctx;
use super::deliver::Events;
use mcp_ui_model::outcome::{Failure, OutcomeSlot};
use mcp_ui_model::reply::Body;
use mcp_ui_upstream::upstream::messages::{Delivery, MessageSession, Mux, Peer};
use mcp_ui_wire::jsonrpc::{self, Kind, Message};

/// A batch on `session`; `peer` and `mux` for a connection shared by
/// several clients.
pub(super) async fn post(
    cx: &Ctx<'_>,
    items: Vec<(Message<'_>, &RawValue)>,
    session: Arc<MessageSession>,
    peer: Option<Arc<Peer>>,
    mux: Option<&Mux>,
) -> Response<Body> {
    if items
        .iter()
        .any(|(m, _)| m.method.as_deref() == Some("initialize"))
    {
        return Failure::InitializeInBatch.respond(None);
    }
    let slot = OutcomeSlot::new();
    let mut streams = Vec::new();
    for (m, raw) in &items {
        let bytes = raw.get().as_bytes();
        if m.kind == Kind::Request {
            streams.push(request(&session, m, bytes, &slot, peer.as_ref()).await);
        } else if let (Some(mux), Kind::Response, Some(id)) = (mux, m.kind, m.id) {
            if let Err(f) = mux.answer(bytes, id) {
                return f.respond(None);
            }
        } else if session
            .notify(
                Bytes::copy_from_slice(bytes),
                m.kind,
                m.method.as_deref(),
                m.params,
            )
            .await
            .is_err()
        {
            return Failure::SessionNotFound.respond(None);
        }
    }
    if streams.is_empty() {
        return accepted();
    }
    let deadline = Instant::now() + cx.gw.request_timeout();
    let timeout = Failure::timeout(session.upstream(), cx.gw.limits.request_timeout_secs);
    let (tx, out) = mpsc::channel::<Bytes>(16);
    tokio::spawn(merge(streams, deadline, timeout, slot.clone(), tx));
    let mut r = sse_response(out);
    r.extensions_mut().insert(slot);
    r
}

/// One request of the batch sent: what the upstream says about it, its
/// failure as its response.
async fn request(
    session: &Arc<MessageSession>,
    m: &Message<'_>,
    bytes: &[u8],
    slot: &OutcomeSlot,
    peer: Option<&Arc<Peer>>,
) -> BoxStream<'static, Delivery> {
    let progress = jsonrpc::params_view(m.params).request_progress_token;
    let id = m.id.expect("requests have ids");
    let events = Events {
        id: id.to_owned(),
        slot: slot.clone(),
    };
    match session.request_as(bytes, id, progress, peer).await {
        Ok((rx, guard)) => ReceiverStream::new(rx)
            .map(move |d| {
                let _keep = &guard;
                match d {
                    Delivery::Failed(f) => Delivery::Final(events.failed(&f)),
                    d => d,
                }
            })
            .boxed(),
        Err(f) => {
            let err = Delivery::Final(events.failed(&f));
            futures_util::stream::iter([err]).boxed()
        }
    }
}

/// The requests' deliveries as SSE events, until each has its response or
/// the deadline passes (then the timeout ends the answer).
async fn merge(
    streams: Vec<BoxStream<'static, Delivery>>,
    deadline: Instant,
    timeout: Failure,
    end: OutcomeSlot,
    tx: mpsc::Sender<Bytes>,
) {
    let expected = streams.len();
    let mut merged = futures_util::stream::select_all(streams);
    let mut finals = 0;
    while finals < expected {
        let d = match tokio::time::timeout_at(deadline, merged.next()).await {
            Ok(Some(d)) => d,
            Ok(None) => return,
            Err(_) => {
                end.set(timeout.outcome());
                let _ = tx.send(message_event(&timeout.body(None))).await;
                return;
            }
        };
        let b = match d {
            Delivery::Related(b) => b,
            Delivery::Final(b) => {
                finals += 1;
                b
            }
            // Each request's stream maps its failure to a response.
            Delivery::Failed(f) => {
                finals += 1;
                f.body(None)
            }
        };
        if tx.send(message_event(&b)).await.is_err() {
            return;
        }
    }
}
