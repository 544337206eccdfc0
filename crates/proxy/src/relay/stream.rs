//! Transforms of an HTTP upstream's SSE stream, event by event: every event
//! the gateway does not touch goes out as the exact bytes that came in
//! (ids, comments, field order), so resumption with `Last-Event-ID` sees the
//! same stream through the gateway as direct.

use bytes::{Bytes, BytesMut};
use futures_util::stream;
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use serde_json::value::RawValue;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::answer::message_event;
use crate::live::LIST_CHANGED;
use crate::pending::finish::Finisher;
use mcp_ui_model::outcome::{Failure, Outcome, StreamCause};
use mcp_ui_model::reply::{Body, BoxError};
use mcp_ui_upstream::upstream::client::UpstreamBody;
use mcp_ui_wire::jsonrpc::{self, Kind};
use mcp_ui_wire::sse::{self, Event, Parser};

/// Sees the data of each event on its way to the client (the spans of the
/// requests an upstream sends the client: [`mcp_ui_upstream::telemetry::outbound`]).
pub type Watch = Box<dyn FnMut(&[u8]) + Send>;

fn look(watch: &mut Option<Watch>, ev: &Event) {
    if let Some(w) = watch
        && ev.has_data
    {
        w(ev.data.as_bytes());
    }
}

/// Pass an SSE answer through as received, `watch` seeing each event.
pub fn watched(body: UpstreamBody, limit: usize, watch: Watch) -> Body {
    let mut watch = Some(watch);
    events(
        body,
        limit,
        move |ev: Event| {
            look(&mut watch, &ev);
            ev.raw
        },
        None,
    )
}

/// Rewrite the response to request `key` inside a POST's SSE answer.
pub(crate) fn rewrite_response_events(
    body: UpstreamBody,
    key: String,
    finisher: Finisher,
    limit: usize,
    mut watch: Option<Watch>,
) -> Body {
    let transform = move |ev: Event| -> Bytes {
        look(&mut watch, &ev);
        // Most events stay as they are, which the finisher can tell from
        // their text alone.
        if !ev.has_data || finisher.keeps(ev.data.as_bytes()) {
            return ev.raw;
        }
        let ours = jsonrpc::classify_one(ev.data.as_bytes()).is_ok_and(|m| {
            m.kind == Kind::Response && m.id.is_some_and(|id| jsonrpc::id_key(id) == key)
        });
        if !ours {
            return ev.raw;
        }
        match finisher.finish(ev.data.as_bytes()) {
            Some(new) => sse::frame(ev.id.as_deref(), ev.event.as_deref(), &new),
            None => ev.raw,
        }
    };
    events(body, limit, transform, None)
}

/// Pass a GET stream through, adding the gateway's list-changed
/// notifications between events whenever the overlays change.
/// The stream ends when `stop` fires (the gateway is shutting down).
pub(crate) fn with_announcements(
    body: UpstreamBody,
    changes: watch::Receiver<u64>,
    limit: usize,
    stop: CancellationToken,
    mut watch: Option<Watch>,
) -> Body {
    let transform = move |ev: Event| {
        look(&mut watch, &ev);
        ev.raw
    };
    let announce: Announce = Box::new(|| {
        let mut out = BytesMut::new();
        for m in LIST_CHANGED {
            out.extend_from_slice(&message_event(m));
        }
        out.freeze()
    });
    events(body, limit, transform, Some((changes, stop, announce)))
}

/// Pass an upstream's `subscriptions/listen` stream through (2026-07-28),
/// adding, whenever the overlays change, the list changes its `filter`
/// asks for, tagged with its subscription id `id`. The stream ends when
/// `stop` fires (the gateway is shutting down).
pub(crate) fn with_subscription(
    body: UpstreamBody,
    changes: watch::Receiver<u64>,
    limit: usize,
    stop: CancellationToken,
    subscription: (mcp_ui_rewrite::bridge::Filter, Box<RawValue>),
    mut watch: Option<Watch>,
) -> Body {
    let transform = move |ev: Event| {
        look(&mut watch, &ev);
        ev.raw
    };
    let (filter, id) = subscription;
    let announce: Announce = Box::new(move || {
        let mut out = BytesMut::new();
        for m in LIST_CHANGED {
            if let Some(tagged) = filter.deliver(m, &id) {
                out.extend_from_slice(&message_event(&tagged));
            }
        }
        out.freeze()
    });
    events(body, limit, transform, Some((changes, stop, announce)))
}

/// What an overlay reload adds to a stream, as SSE events.
type Announce = Box<dyn FnMut() -> Bytes + Send>;

/// How a POST's SSE answer ends when its upstream stream fails: an error
/// event for request `id`, its outcome recorded in `slot`.
pub(crate) struct FailureEnd {
    pub upstream: String,
    pub id: Box<RawValue>,
    pub slot: mcp_ui_model::outcome::OutcomeSlot,
    pub timeout_secs: u64,
}

impl FailureEnd {
    /// The failure for `cause`, as an SSE event (and the outcome recorded).
    fn event(&self, cause: StreamCause) -> Bytes {
        let failure = Failure::Stream {
            upstream: self.upstream.clone(),
            cause,
        };
        tracing::warn!(error = %failure, "upstream stream failed during a request");
        self.slot.set(failure.outcome());
        message_event(&failure.body(Some(&self.id)))
    }
}

/// End a POST's SSE answer with a JSON-RPC error event for its request when
/// the upstream stream fails (a reset, an event over the size limit) or is
/// still open at `deadline`. Only on an event boundary: a half-sent event
/// cannot be taken back, so the stream is then cut as it was.
pub(crate) fn end_on_failure(body: Body, end: FailureEnd, deadline: tokio::time::Instant) -> Body {
    struct Failing {
        body: Body,
        boundary: bool,
        done: bool,
        end: FailureEnd,
        // One timer for the whole answer, not one per frame.
        timer: std::pin::Pin<Box<tokio::time::Sleep>>,
    }
    let st = Failing {
        body,
        boundary: true,
        done: false,
        end,
        timer: Box::pin(tokio::time::sleep_until(deadline)),
    };
    let s = stream::unfold(st, move |mut st| async move {
        if st.done {
            return None;
        }
        let frame = tokio::select! {
            biased;
            f = st.body.frame() => Some(f),
            () = &mut st.timer => None,
        };
        let Some(frame) = frame else {
            st.done = true;
            let cause = StreamCause::Timeout {
                secs: st.end.timeout_secs,
            };
            if st.boundary {
                return Some((Ok(Frame::data(st.end.event(cause))), st));
            }
            st.end.slot.set(Outcome::Timeout);
            return Some((Err(cause.to_string().into()), st));
        };
        match frame {
            Some(Ok(f)) => {
                if let Some(d) = f.data_ref().filter(|d| !d.is_empty()) {
                    st.boundary = d.ends_with(b"\n\n") || d.ends_with(b"\r\n\r\n");
                }
                Some((Ok(f), st))
            }
            Some(Err(e)) => {
                st.done = true;
                if st.boundary {
                    let event = st.end.event(StreamCause::Broken(e.to_string()));
                    Some((Ok(Frame::data(event)), st))
                } else {
                    tracing::warn!(error = %e, "upstream stream failed during a request");
                    Some((Err(e), st))
                }
            }
            None => None,
        }
    });
    StreamBody::new(s).boxed_unsync()
}

struct State<F> {
    body: UpstreamBody,
    parser: Parser,
    transform: F,
    changes: Option<(watch::Receiver<u64>, CancellationToken, Announce)>,
    done: bool,
}

fn events<F>(
    body: UpstreamBody,
    limit: usize,
    transform: F,
    changes: Option<(watch::Receiver<u64>, CancellationToken, Announce)>,
) -> Body
where
    F: FnMut(Event) -> Bytes + Send + 'static,
{
    let state = State {
        body,
        parser: Parser::new(limit),
        transform,
        changes,
        done: false,
    };
    let s = stream::unfold(state, |mut st| async move {
        if st.done {
            return None;
        }
        loop {
            // Complete events first, so each frame ends on an event boundary.
            let mut out = BytesMut::new();
            loop {
                match st.parser.next_event() {
                    Ok(Some(ev)) => out.extend_from_slice(&(st.transform)(ev)),
                    Ok(None) => break,
                    Err(e) => {
                        st.done = true;
                        return Some((Err(Box::new(e) as BoxError), st));
                    }
                }
            }
            if !out.is_empty() {
                return Some((Ok(Frame::data(out.freeze())), st));
            }
            let frame = match st.changes.as_mut() {
                Some((changes, stop, announce)) => tokio::select! {
                    f = st.body.frame() => f,
                    _ = stop.cancelled() => return None,
                    changed = changes.changed() => {
                        if changed.is_err() {
                            st.changes = None;
                            continue;
                        }
                        let out = announce();
                        if out.is_empty() {
                            continue;
                        }
                        return Some((Ok(Frame::data(out)), st));
                    }
                },
                None => st.body.frame().await,
            };
            match frame {
                Some(Ok(f)) => {
                    if let Some(d) = f.data_ref() {
                        st.parser.push(d);
                    }
                }
                Some(Err(e)) => {
                    st.done = true;
                    return Some((Err(Box::new(e) as BoxError), st));
                }
                None => {
                    st.done = true;
                    let rest = st.parser.take_remaining();
                    return (!rest.is_empty()).then(|| (Ok(Frame::data(rest)), st));
                }
            }
        }
    });
    StreamBody::new(s).boxed_unsync()
}
