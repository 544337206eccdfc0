//! The relay to a message-oriented upstream (stdio child, legacy SSE): the
//! session this process owns carries each request, and the answer is JSON
//! when the response is the first thing the upstream says about it, an SSE
//! stream otherwise.

use std::sync::Arc;

use bytes::Bytes;
use http::header::HeaderValue;
use http::{Response, StatusCode};

use super::answer::accepted;
use super::context::{Ctx, PROTOCOL_HEADER, SESSION_HEADER, SessionRef};
use super::deliver::{answer, check_method_headers};
use crate::pending::finish::Finisher;
use crate::pending::waiting::Waiting;
use mcp_ui_model::outcome::{Failure, Outcome};
use mcp_ui_model::reply::{self, Body};
use mcp_ui_model::session_id::{Hello, Route, Token};
use mcp_ui_upstream::upstream::messages::{EndedBy, MessageSession};
use mcp_ui_wire::jsonrpc::{self, Kind};
use mcp_ui_wire::protocol::KNOWN_VERSIONS;

/// Relay one POST of a client session that owns its connection (`sessions
/// = "client"`): through the session its headers name, opened again when
/// its connection is gone, or a new one for `initialize`. (Requests without
/// a session go to the mount's pool, [`super::pooled`].)
pub async fn post(
    cx: &Ctx<'_>,
    body: &Bytes,
    parsed: jsonrpc::Body<'_>,
    finisher: Option<Finisher>,
) -> Response<Body> {
    if let Some(v) = cx.headers.get(PROTOCOL_HEADER)
        && !v.to_str().is_ok_and(|v| KNOWN_VERSIONS.contains(&v.trim()))
    {
        return Failure::UnsupportedVersion.respond(None);
    }
    let initialize = matches!(&parsed, jsonrpc::Body::Single(m)
        if m.kind == Kind::Request && m.method.as_deref() == Some("initialize"));
    let m = match parsed {
        jsonrpc::Body::Single(m) => m,
        jsonrpc::Body::Batch(items) => {
            return match local_session(cx).await {
                Ok((s, revived)) => {
                    let resp = super::batch::post(cx, items, s, None, None).await;
                    say_session(cx, revived, resp)
                }
                Err(f) => f.respond(None),
            };
        }
    };
    if let Err(failure) = check_method_headers(cx, &m) {
        return failure.respond(m.id.filter(|_| m.kind == Kind::Request));
    }
    let request_id = m.id.filter(|_| m.kind == Kind::Request);
    let (session, new_id, revived) = match (&cx.session, initialize) {
        (SessionRef::None, true) => match cx.gw.open_session(cx.mount).await {
            Ok((id, s)) => {
                super::ended::watch(cx.gw.metrics.clone(), s.clone());
                (s, Some(id), false)
            }
            Err(e) => return e.respond(m.id),
        },
        _ => match local_session(cx).await {
            Ok((s, revived)) => (s, None, revived),
            Err(e) => return e.respond(request_id),
        },
    };
    let Some(id) = request_id else {
        let resp = match session
            .notify(body.clone(), m.kind, m.method.as_deref(), m.params)
            .await
        {
            Ok(()) => accepted(),
            Err(_) if session.is_closed() => Failure::SessionNotFound.respond(None),
            Err(e) => e.respond(None),
        };
        return say_session(cx, revived, resp);
    };
    let progress = jsonrpc::params_view(m.params).request_progress_token;
    let resp = match session.request(body, id, progress).await {
        Ok(sent) => {
            let waiting = Waiting::new(
                cx.gw.limits.request_timeout_secs,
                session.clone(),
                sent,
                id,
                finisher,
            );
            answer(cx, waiting, new_id.is_some()).await
        }
        Err(e) => e.respond(Some(id)),
    };
    match new_id {
        Some(local) => {
            let params = m
                .params
                .and_then(|p| serde_json::from_str::<serde_json::Value>(p.get()).ok());
            finish_initialize(cx, local, Hello::of_initialize(params.as_ref()), resp)
        }
        None => say_session(cx, revived, resp),
    }
}

/// The answer of a request whose session was opened again in this process
/// names the session, as an `initialize` answer does: a load balancer that
/// learns where a session lives from the answers (HAProxy's
/// `stick store-response`) sends its next requests here.
fn say_session(cx: &Ctx<'_>, revived: bool, mut resp: Response<Body>) -> Response<Body> {
    if revived && let Some(sid) = cx.headers.get(SESSION_HEADER) {
        resp.headers_mut().insert(SESSION_HEADER, sid.clone());
    }
    resp
}

/// The session this process owns that the client's id names: the one it
/// numbers, or the one opened again in its place; opened again now (as the
/// client's id says the client opened it) when there is none, so that a
/// client whose connection is gone (a crashed child, a restarted gateway)
/// carries on instead of being told to start over, which hosts do not do.
/// Whether it was opened now.
async fn local_session(cx: &Ctx<'_>) -> Result<(Arc<MessageSession>, bool), Failure> {
    let SessionRef::Local { instance, id } = cx.session else {
        return Err(Failure::SessionNotFound);
    };
    let sessions = &cx.gw.upstreams.sessions;
    let own = instance == cx.gw.ids.instance;
    if own && let Some(s) = sessions.get(cx.mount.index, id) {
        return Ok((s, false));
    }
    if sessions.ended.contains(&(instance, id), cx.session_started) {
        return Err(Failure::SessionNotFound);
    }
    if let Some(s) = sessions.revived(cx.mount.index, instance, id) {
        return Ok((s, false));
    }
    // One revival per id: the client's other requests that found it gone
    // at the same moment wait for it, then use what it opened.
    let _turn = cx
        .gw
        .pending
        .reviving
        .turn((cx.mount.index, instance, id))
        .await;
    if let Some(s) = sessions.revived(cx.mount.index, instance, id) {
        return Ok((s, false));
    }
    let hello = cx.hello.clone().unwrap_or_default();
    let s = cx.gw.revive_session(cx.mount, instance, id, &hello).await?;
    super::ended::watch(cx.gw.metrics.clone(), s.clone());
    Ok((s, true))
}

/// Give a successful `initialize` its session id; a failed one ends the
/// session it started.
fn finish_initialize(
    cx: &Ctx<'_>,
    local: u64,
    hello: Hello,
    mut resp: Response<Body>,
) -> Response<Body> {
    let failed = resp.status() != StatusCode::OK
        || resp
            .extensions()
            .get::<Outcome>()
            .is_some_and(|o| *o != Outcome::Ok);
    if failed {
        if let Some(s) = cx.gw.upstreams.sessions.remove(local) {
            s.end(EndedBy::Unopened, "initialize failed");
        }
        return resp;
    }
    let token = Token {
        mount: cx.upstream().to_owned(),
        route: Route::Local {
            instance: cx.gw.ids.instance,
            id: local,
        },
        owner: cx.owner,
        host: Some(cx.host),
        started: Some(mcp_ui_model::clock::unix_millis()),
        hello: Some(hello),
    };
    let id = HeaderValue::from_str(&cx.gw.ids.key.seal(&token))
        .expect("base64url is a valid header value");
    resp.headers_mut().insert(SESSION_HEADER, id);
    resp
}

/// The client's GET stream of a session this process owns (opened again
/// when its connection is gone).
pub async fn get(cx: &Ctx<'_>) -> Response<Body> {
    let session = match local_session(cx).await {
        Ok((s, _)) => s,
        Err(f) => return f.respond(None),
    };
    let Some(rx) = session.attach_stream() else {
        return Failure::StreamConflict.respond(None);
    };
    // Ends with the session, the client, or the gateway's shutdown.
    let messages = tokio_stream::wrappers::ReceiverStream::new(rx);
    super::deliver::event_stream(&cx.gw.shutdown, super::watch::watch(cx), messages)
}

/// End a session this process owns (its child is stopped).
pub fn delete(cx: &Ctx<'_>) -> Response<Body> {
    let SessionRef::Local { instance, id } = cx.session else {
        return Failure::MethodNotAllowed {
            allow: "POST",
            why: Some("DELETE needs a session"),
        }
        .respond(None);
    };
    let sessions = &cx.gw.upstreams.sessions;
    let number = match instance == cx.gw.ids.instance {
        true => Some(id),
        false => sessions.revived_number(cx.mount.index, instance, id),
    };
    sessions.ended.insert((instance, id), cx.session_started);
    match number.and_then(|n| sessions.remove(n)) {
        Some(s) => {
            s.end(EndedBy::Client, "ended by the client");
            reply::status(StatusCode::OK)
        }
        None => Failure::SessionNotFound.respond(None),
    }
}
