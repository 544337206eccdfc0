//! Members' SSE streams on their way to the client: each event passes as
//! received, except a member's request to the client, whose id is tagged
//! with the member ([`crate::combine::ids`]); the GET stream is the members'
//! streams merged, event by event.

use std::sync::Arc;

use bytes::Bytes;
use http::header::{self, HeaderValue};
use http::{Method, Response, StatusCode};
use http_body::Frame;
use http_body_util::{BodyExt, StreamBody};
use tokio::sync::mpsc;

use super::member::{self, session_of};
use crate::combine::{AppState, ids};
use crate::gateway::Gateway;
use crate::outcome::Failure;
use crate::relay;
use crate::reply::{Body, BoxError};
use crate::session::app::MemberSession;

/// Whether a response is an SSE stream.
pub fn is_event_stream(resp: &Response<Body>) -> bool {
    resp.headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"))
}

/// `body`, an SSE stream from `member`, with the member's requests' ids
/// tagged (and, given the app's and the gateway's metadata URLs, in-band
/// challenges pointed at the app's), sent on `tx` until either side ends.
async fn pump(
    member: usize,
    mut body: Body,
    limit: usize,
    challenges: Option<(String, String)>,
    tx: mpsc::Sender<Result<Frame<Bytes>, BoxError>>,
) {
    let mut parser = crate::sse::Parser::new(limit);
    loop {
        let frame = tokio::select! {
            f = body.frame() => f,
            _ = tx.closed() => return,
        };
        let data = match frame {
            Some(Ok(f)) => match f.into_data() {
                Ok(d) => d,
                Err(_) => continue,
            },
            Some(Err(e)) => {
                let _ = tx.send(Err(e)).await;
                return;
            }
            None => {
                let rest = parser.take_remaining();
                if !rest.is_empty() {
                    let _ = tx.send(Ok(Frame::data(rest))).await;
                }
                return;
            }
        };
        parser.push(&data);
        loop {
            let event = match parser.next_event() {
                Ok(Some(e)) => e,
                Ok(None) => break,
                Err(e) => {
                    let _ = tx.send(Err(Box::new(e) as BoxError)).await;
                    return;
                }
            };
            let data = event.data.as_bytes();
            let out = match ids::tag_request(member, data) {
                Some(json) => crate::sse::frame(None, event.event.as_deref(), &json),
                None => match challenges
                    .as_ref()
                    .and_then(|(prm, base)| super::oauth::in_band_event(data, prm, base))
                {
                    Some(json) => {
                        crate::sse::frame(event.id.as_deref(), event.event.as_deref(), &json)
                    }
                    None => event.raw,
                },
            };
            if tx.send(Ok(Frame::data(out))).await.is_err() {
                return;
            }
        }
    }
}

/// A body fed by the returned sender.
fn channel_body() -> (mpsc::Sender<Result<Frame<Bytes>, BoxError>>, Body) {
    let (tx, rx) = mpsc::channel(16);
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    });
    (tx, StreamBody::new(stream).boxed_unsync())
}

/// A member's SSE answer with its requests' ids tagged and in-band
/// challenges pointed at the app's metadata (`challenges`: its URL and the
/// gateway's base).
pub fn tagged(
    gw: &Gateway,
    member: usize,
    challenges: Option<(String, String)>,
    resp: Response<Body>,
) -> Response<Body> {
    let (parts, body) = resp.into_parts();
    let (tx, out) = channel_body();
    tokio::spawn(pump(
        member,
        body,
        gw.limits.max_message_bytes,
        challenges,
        tx,
    ));
    Response::from_parts(parts, out)
}

/// The app's GET stream: every member's, merged.
pub async fn get(gw: &Arc<Gateway>, app: &AppState, headers: &http::HeaderMap) -> Response<Body> {
    let session = match session_of(gw, app, headers) {
        Ok(s) => s,
        Err(f) => return f.respond(None),
    };
    let (tx, out) = channel_body();
    let mut open = 0;
    for (i, m) in app.config.members.iter().enumerate() {
        let Some(s) = session
            .members
            .get(i)
            .filter(|s| **s != MemberSession::Failed)
        else {
            continue;
        };
        let Some(mount) = gw.mounts.get(m.mount) else {
            continue;
        };
        let h = member::headers_for(headers, s, None);
        let resp = relay::bodyless_parts(gw, mount, &Method::GET, &h).await;
        if resp.status().is_success() && is_event_stream(&resp) {
            open += 1;
            tokio::spawn(pump(
                i,
                resp.into_body(),
                gw.limits.max_message_bytes,
                None,
                tx.clone(),
            ));
        } else {
            tracing::debug!(app = %app.config.name, member = %m.upstream, status = %resp.status(), "member offers no GET stream");
        }
    }
    if open == 0 {
        return Failure::MethodNotAllowed {
            allow: "POST, DELETE, OPTIONS",
            why: Some("no member of this app offers a stream"),
        }
        .respond(None);
    }
    drop(tx);
    let mut r = Response::new(out);
    *r.status_mut() = StatusCode::OK;
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    r
}
