//! Transforms of an HTTP upstream's SSE stream, event by event: every event
//! the gateway does not touch goes out as the exact bytes that came in
//! (ids, comments, field order), so resumption with `Last-Event-ID` sees the
//! same stream through the gateway as direct.

use bytes::{Bytes, BytesMut};
use futures_util::stream;
use http_body_util::{BodyExt, StreamBody};
use hyper::body::{Frame, Incoming};
use tokio::sync::watch;

use super::{Finisher, LIST_CHANGED};
use crate::jsonrpc::{self, Kind};
use crate::server::{Body, BoxError};
use crate::sse::{self, Event, Parser};

/// Rewrite the response to request `key` inside a POST's SSE answer.
pub(super) fn rewrite_response_events(
    body: Incoming,
    key: String,
    finisher: Finisher,
    limit: usize,
) -> Body {
    let transform = move |ev: Event| -> Bytes {
        if !ev.has_data {
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
pub(super) fn with_announcements(
    body: Incoming,
    changes: watch::Receiver<u64>,
    limit: usize,
) -> Body {
    events(body, limit, |ev: Event| ev.raw, Some(changes))
}

struct State<F> {
    body: Incoming,
    parser: Parser,
    transform: F,
    changes: Option<watch::Receiver<u64>>,
    done: bool,
}

fn events<F>(
    body: Incoming,
    limit: usize,
    transform: F,
    changes: Option<watch::Receiver<u64>>,
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
                Some(changes) => tokio::select! {
                    f = st.body.frame() => f,
                    changed = changes.changed() => {
                        if changed.is_err() {
                            st.changes = None;
                            continue;
                        }
                        let mut out = BytesMut::new();
                        for m in LIST_CHANGED {
                            out.extend_from_slice(&sse::frame(None, Some("message"), m));
                        }
                        return Some((Ok(Frame::data(out.freeze())), st));
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
