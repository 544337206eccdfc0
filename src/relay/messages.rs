//! The relay to a message-oriented upstream (stdio child, legacy SSE): the
//! session this process owns carries each request, and the answer is JSON
//! when the response is the first thing the upstream says about it, an SSE
//! stream otherwise.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt;
use http::header::{HeaderMap, HeaderValue};
use http::{Response, StatusCode};
use serde_json::value::RawValue;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_stream::wrappers::ReceiverStream;

use super::{
    Finisher, METHOD_HEADER, NAME_HEADER, PROTOCOL_HEADER, SESSION_HEADER, SessionRef, accepted,
    message_event, method_not_allowed, not_found, sse_response,
};
use crate::gateway::{Gateway, OpenError};
use crate::jsonrpc::{self, Kind, Message, code};
use crate::reply::{self, Body};
use crate::session::{Route, Token};
use crate::sse;
use crate::upstream::UpstreamError;
use crate::upstream::messages::{Delivery, MessageSession, PendingGuard};

/// Protocol revisions a message-oriented mount accepts in `MCP-Protocol-Version`.
const KNOWN_VERSIONS: &[&str] = &[
    "2024-11-05",
    "2025-03-26",
    "2025-06-18",
    "2025-11-25",
    "2026-07-28",
];

/// Send server messages as SSE comments this often on idle streams.
const KEEPALIVE: Duration = Duration::from_secs(15);

pub(super) async fn post_messages(
    gw: &Arc<Gateway>,
    mount: usize,
    headers: &HeaderMap,
    body: &Bytes,
    parsed: jsonrpc::Body<'_>,
    sref: SessionRef,
    finisher: Option<Finisher>,
) -> Response<Body> {
    if let Some(v) = headers.get(PROTOCOL_HEADER)
        && !v.to_str().is_ok_and(|v| KNOWN_VERSIONS.contains(&v.trim()))
    {
        return reply::error(
            StatusCode::BAD_REQUEST,
            code::INVALID_REQUEST,
            &format!(
                "Bad Request: unsupported MCP-Protocol-Version (supported: {})",
                KNOWN_VERSIONS.join(", ")
            ),
        );
    }
    match parsed {
        jsonrpc::Body::Single(m) => {
            if let Err(r) = check_method_headers(headers, &m) {
                return r;
            }
            let initialize = m.kind == Kind::Request && m.method.as_deref() == Some("initialize");
            let (session, new_id) = match (sref, initialize) {
                (SessionRef::Local(id), _) => match gw.sessions.get(mount, id) {
                    Some(s) => (s, None),
                    None => return not_found(),
                },
                (SessionRef::None, true) => match gw.open_session(mount).await {
                    Ok((id, s)) => (s, Some(id)),
                    Err(e) => return open_failure(m.id, &e),
                },
                (SessionRef::None, false) => match gw.shared_session(mount).await {
                    Ok(s) => (s, None),
                    Err(e) => return open_failure(m.id.filter(|_| m.kind == Kind::Request), &e),
                },
                (SessionRef::Http { .. }, _) => return not_found(),
            };
            match m.kind {
                Kind::Request => {
                    let id = m.id.expect("requests have ids");
                    let progress = jsonrpc::params_view(m.params).request_progress_token;
                    let resp = match session.request(body, id, progress).await {
                        Ok((rx, guard)) => {
                            answer(gw, &session, rx, guard, id, finisher, new_id.is_some()).await
                        }
                        Err(e) => reply::json(
                            StatusCode::OK,
                            jsonrpc::error_response(Some(id), code::UPSTREAM_ERROR, &e.to_string()),
                        ),
                    };
                    match new_id {
                        Some(local) => finish_initialize(gw, mount, local, resp),
                        None => resp,
                    }
                }
                kind => match session
                    .notify(body.clone(), kind, m.method.as_deref(), m.params)
                    .await
                {
                    Ok(()) => accepted(),
                    Err(_) => not_found(),
                },
            }
        }
        jsonrpc::Body::Batch(items) => post_batch(gw, mount, items, sref).await,
    }
}

/// 2026-07-28: `Mcp-Method` and `Mcp-Name`, when sent, must match the body.
pub(super) fn check_method_headers(
    headers: &HeaderMap,
    m: &Message<'_>,
) -> Result<(), Response<Body>> {
    let mismatch = |what: &str| {
        Err(reply::error(
            StatusCode::BAD_REQUEST,
            code::HEADER_MISMATCH,
            &format!("Bad Request: the {what} header does not match the message body"),
        ))
    };
    if let Some(v) = headers.get(METHOD_HEADER)
        && v.to_str().ok() != m.method.as_deref()
    {
        return mismatch("Mcp-Method");
    }
    if let Some(v) = headers.get(NAME_HEADER) {
        let p = jsonrpc::params_view(m.params);
        let name = match m.method.as_deref() {
            Some("resources/read") => p.uri,
            _ => p.name,
        };
        if v.to_str().ok() != name.as_deref() {
            return mismatch("Mcp-Name");
        }
    }
    Ok(())
}

pub(super) fn open_failure(id: Option<&RawValue>, e: &OpenError) -> Response<Body> {
    tracing::warn!(error = %e, "could not open an upstream session");
    match (e, id) {
        (OpenError::Full(_) | OpenError::Upstream(UpstreamError::ChildLimit { .. }), _) => {
            reply::error(
                StatusCode::SERVICE_UNAVAILABLE,
                code::UPSTREAM_ERROR,
                &e.to_string(),
            )
        }
        (_, Some(id)) => reply::json(
            StatusCode::OK,
            jsonrpc::error_response(Some(id), code::UPSTREAM_ERROR, &e.to_string()),
        ),
        (_, None) => reply::error(
            StatusCode::BAD_GATEWAY,
            code::UPSTREAM_ERROR,
            &e.to_string(),
        ),
    }
}

/// Give a successful `initialize` its session id; a failed one ends the
/// session it started.
pub(super) fn finish_initialize(
    gw: &Gateway,
    mount: usize,
    local: u64,
    mut resp: Response<Body>,
) -> Response<Body> {
    let failed =
        resp.status() != StatusCode::OK || resp.extensions().get::<ErrorAnswer>().is_some();
    if failed {
        if let Some(s) = gw.sessions.remove(local) {
            s.close("initialize failed");
        }
        return resp;
    }
    let token = Token {
        mount: gw.mounts[mount].mount.name.clone(),
        route: Route::Local {
            instance: gw.instance,
            id: local,
        },
    };
    let id =
        HeaderValue::from_str(&gw.key.seal(&token)).expect("base64url is a valid header value");
    resp.headers_mut().insert(SESSION_HEADER, id);
    resp
}

/// Marks a JSON answer that is a JSON-RPC error.
#[derive(Clone, Copy)]
pub(super) struct ErrorAnswer;

/// Answer one request: as JSON when its response is the first thing the
/// upstream says about it, otherwise as an SSE stream that carries the
/// related messages and ends with the response.
async fn answer(
    gw: &Arc<Gateway>,
    session: &Arc<MessageSession>,
    mut rx: mpsc::Receiver<Delivery>,
    guard: PendingGuard,
    id: &RawValue,
    finisher: Option<Finisher>,
    // Only a new session's initialize needs to know (see `finish_initialize`).
    mark_errors: bool,
) -> Response<Body> {
    let deadline = Instant::now() + gw.request_timeout();
    let timeout_error = || {
        jsonrpc::error_response(
            Some(id),
            code::UPSTREAM_ERROR,
            &format!(
                "upstream '{}' did not answer within {} s",
                session.upstream(),
                gw.limits.request_timeout_secs
            ),
        )
    };
    match tokio::time::timeout_at(deadline, rx.recv()).await {
        Ok(Some(Delivery::Final(b))) => {
            let b = finish(finisher.as_ref(), b);
            let is_error =
                mark_errors && jsonrpc::classify_one(&b).is_ok_and(|m| m.error.is_some());
            let mut r = reply::json(StatusCode::OK, b);
            if is_error {
                r.extensions_mut().insert(ErrorAnswer);
            }
            r
        }
        Ok(Some(Delivery::Related(first))) => {
            let timeout_body = timeout_error();
            let (tx, out) = mpsc::channel::<Bytes>(16);
            // A call in flight outlives a shutdown's start: it ends with its
            // response, its deadline, or its session (closed after the grace).
            tokio::spawn(async move {
                let _guard = guard;
                if tx.send(message_event(&first)).await.is_err() {
                    return;
                }
                loop {
                    let next = tokio::select! {
                        d = tokio::time::timeout_at(deadline, rx.recv()) => d,
                        _ = tokio::time::sleep(KEEPALIVE) => {
                            if tx.send(Bytes::from_static(sse::KEEPALIVE)).await.is_err() { return }
                            continue;
                        }
                    };
                    let (bytes, last) = match next {
                        Ok(Some(Delivery::Related(b))) => (b, false),
                        Ok(Some(Delivery::Final(b))) => (finish(finisher.as_ref(), b), true),
                        Ok(None) => return,
                        Err(_) => (timeout_body.clone(), true),
                    };
                    if tx.send(message_event(&bytes)).await.is_err() || last {
                        return;
                    }
                }
            });
            sse_response(out)
        }
        Ok(None) => reply::json(
            StatusCode::OK,
            jsonrpc::error_response(
                Some(id),
                code::UPSTREAM_ERROR,
                &format!("upstream '{}' ended the session", session.upstream()),
            ),
        ),
        Err(_) => {
            drop(guard);
            reply::json(StatusCode::OK, timeout_error())
        }
    }
}

fn finish(finisher: Option<&Finisher>, response: Bytes) -> Bytes {
    finisher
        .and_then(|f| f.finish(&response))
        .unwrap_or(response)
}

async fn post_batch(
    gw: &Arc<Gateway>,
    mount: usize,
    items: Vec<(Message<'_>, &RawValue)>,
    sref: SessionRef,
) -> Response<Body> {
    if items
        .iter()
        .any(|(m, _)| m.method.as_deref() == Some("initialize"))
    {
        return reply::error(
            StatusCode::BAD_REQUEST,
            code::INVALID_REQUEST,
            "Invalid Request: initialize cannot be part of a batch",
        );
    }
    let session = match sref {
        SessionRef::Local(id) => match gw.sessions.get(mount, id) {
            Some(s) => s,
            None => return not_found(),
        },
        SessionRef::None => match gw.shared_session(mount).await {
            Ok(s) => s,
            Err(e) => return open_failure(None, &e),
        },
        SessionRef::Http { .. } => return not_found(),
    };
    // Each message goes upstream on its own; stdio servers need not know batches.
    let mut streams = Vec::new();
    for (m, raw) in &items {
        let bytes = raw.get().as_bytes();
        if m.kind == Kind::Request {
            let progress = jsonrpc::params_view(m.params).request_progress_token;
            let id = m.id.expect("requests have ids");
            match session.request(bytes, id, progress).await {
                Ok((rx, guard)) => streams.push(
                    ReceiverStream::new(rx)
                        .map(move |d| {
                            let _keep = &guard;
                            d
                        })
                        .boxed(),
                ),
                Err(e) => {
                    let err =
                        jsonrpc::error_response(Some(id), code::UPSTREAM_ERROR, &e.to_string());
                    streams.push(futures_util::stream::iter([Delivery::Final(err)]).boxed());
                }
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
            return not_found();
        }
    }
    if streams.is_empty() {
        return accepted();
    }
    let expected = streams.len();
    let deadline = Instant::now() + gw.request_timeout();
    let upstream_name = session.upstream().to_owned();
    let timeout_secs = gw.limits.request_timeout_secs;
    let (tx, out) = mpsc::channel::<Bytes>(16);
    tokio::spawn(async move {
        let mut merged = futures_util::stream::select_all(streams);
        let mut finals = 0;
        while finals < expected {
            let d = match tokio::time::timeout_at(deadline, merged.next()).await {
                Ok(Some(d)) => d,
                Ok(None) => return,
                Err(_) => {
                    let msg = format!(
                        "upstream '{upstream_name}' did not answer within {timeout_secs} s"
                    );
                    let _ = tx
                        .send(message_event(&jsonrpc::error_response(
                            None,
                            code::UPSTREAM_ERROR,
                            &msg,
                        )))
                        .await;
                    return;
                }
            };
            let b = match d {
                Delivery::Related(b) => b,
                Delivery::Final(b) => {
                    finals += 1;
                    b
                }
            };
            if tx.send(message_event(&b)).await.is_err() {
                return;
            }
        }
    });
    sse_response(out)
}

/// The client's GET stream of a session this process owns.
pub(super) fn get(gw: &Arc<Gateway>, mount: usize, sref: SessionRef) -> Response<Body> {
    let SessionRef::Local(id) = sref else {
        return method_not_allowed(
            "GET needs a session (sessionless clients have no server stream)",
        );
    };
    let Some(session) = gw.sessions.get(mount, id) else {
        return not_found();
    };
    let Some(mut rx) = session.attach_stream() else {
        return reply::error(
            StatusCode::CONFLICT,
            code::INVALID_REQUEST,
            "Conflict: this session already has a GET stream open",
        );
    };
    let (tx, out) = mpsc::channel::<Bytes>(16);
    let stop = gw.shutdown.clone();
    tokio::spawn(async move {
        loop {
            let bytes = tokio::select! {
                m = rx.recv() => match m { Some(m) => message_event(&m), None => return },
                _ = tokio::time::sleep(KEEPALIVE) => Bytes::from_static(sse::KEEPALIVE),
                _ = stop.cancelled() => return,
            };
            if tx.send(bytes).await.is_err() {
                return;
            }
        }
    });
    sse_response(out)
}

/// End a session this process owns (its child is stopped).
pub(super) fn delete(gw: &Arc<Gateway>, sref: SessionRef) -> Response<Body> {
    match sref {
        SessionRef::Local(id) => match gw.sessions.remove(id) {
            Some(s) => {
                s.close("ended by the client");
                let mut r = Response::new(reply::empty());
                *r.status_mut() = StatusCode::OK;
                r
            }
            None => not_found(),
        },
        _ => method_not_allowed("DELETE needs a session"),
    }
}
