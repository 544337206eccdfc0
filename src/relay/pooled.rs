//! The relay for client sessions that own no upstream connection: every
//! session of a mount with `sessions = "shared"` or `"conversation"`, and
//! every request that comes without a session on any mount whose upstream
//! needs one the gateway holds (stdio, legacy SSE, a stateful HTTP server).
//!
//! A client's `initialize` starts nothing: it is answered from the
//! upstream's own answer to the gateway's `initialize` of the connection,
//! and the client's capabilities travel in the session id it gets. Each
//! request then goes to a connection picked for it (a pool place, its
//! conversation's, one of its own) in the protocol era it names: a request
//! under the 2026-07-28 envelope goes to a connection of that era when the
//! upstream speaks it, and otherwise to one the gateway initialized.

use std::sync::Arc;

use bytes::Bytes;
use http::{Response, StatusCode};
use http_body_util::BodyExt;
use tokio::sync::mpsc;

use super::answer::{accepted, message_event, sse_response};
use super::context::{Ctx, PROTOCOL_HEADER, SESSION_HEADER, SessionRef};
use super::deliver::{self, KEEPALIVE, Pending};
use super::finish::Finisher;
use crate::config::{ConversationKey, SessionMode, Transport};
use crate::jsonrpc::{self, Kind, Message};
use crate::outcome::{Failure, KNOWN_VERSIONS};
use crate::protocol::{self, Era};
use crate::reply::{self, Body};
use crate::session::pool::{Conn, Lane, Pool, SlotKey, digest};
use crate::session::{Hello, Route, Token};
use crate::sse;
use crate::upstream::handshake;
use crate::upstream::messages::peer::level_rank;
use crate::upstream::messages::{MessageSession, Peer};

/// Whether a mount's client sessions are pooled (own no connection).
pub fn pooled(cx: &Ctx<'_>) -> bool {
    cx.mount.config.sessions.mode != SessionMode::Client
}

fn pool<'a>(cx: &Ctx<'a>) -> &'a Pool {
    &cx.gw.pools[cx.mount.index]
}

/// The client session the request belongs to, as the pool knows it.
fn peer(cx: &Ctx<'_>) -> Option<Arc<Peer>> {
    let SessionRef::Pooled { client } = cx.session else {
        return None;
    };
    let caps = cx.hello.as_ref().map(|h| h.caps).unwrap_or_default();
    Some(pool(cx).peers().get_or_insert(client, caps))
}

/// Relay one POST through the pool. A held HTTP session's refusal of the
/// client's credentials reaches it pointing at the gateway's metadata.
pub async fn post(
    cx: &Ctx<'_>,
    body: &Bytes,
    parsed: jsonrpc::Body<'_>,
    finisher: Option<Finisher>,
) -> Response<Body> {
    let mut resp = post_pooled(cx, body, parsed, finisher).await;
    if matches!(
        resp.status(),
        StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN
    ) {
        let (gw, mount) = (cx.gw, cx.mount);
        crate::auth::rewrite_challenges(
            &gw.auth,
            mount.index,
            &mount.config,
            cx.headers,
            resp.headers_mut(),
        );
    }
    resp
}

async fn post_pooled(
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
    if let SessionRef::Pooled { client } = cx.session
        && pool(cx).ended.contains(&client)
    {
        return Failure::SessionNotFound.respond(None);
    }
    let m = match parsed {
        jsonrpc::Body::Single(m) => m,
        jsonrpc::Body::Batch(items) => {
            let first = items
                .iter()
                .map(|(m, _)| m)
                .find(|m| m.kind == Kind::Request);
            let key = match first {
                Some(m) => slot_key(cx, m).await,
                None => Ok(default_key(cx, Era::Handshake, None)),
            };
            let conn = match key {
                Ok(key) => connect(cx, key).await.map(|c| (c, key)),
                Err(f) => Err(f),
            };
            return match conn {
                Ok((c, key)) => {
                    let resp =
                        deliver::post_batch(cx, items, c.session, peer(cx), Some(&pool(cx).mux))
                            .await;
                    single_end(cx, key, resp)
                }
                Err(f) => f.respond(None),
            };
        }
    };
    if let Err(failure) = deliver::check_method_headers(cx, &m) {
        return failure.respond(None);
    }
    let peer = peer(cx);
    let method = m.method.as_deref().unwrap_or_default();
    match m.kind {
        Kind::Request if method == "initialize" && pooled(cx) => initialize(cx, &m, finisher).await,
        Kind::Request => request(cx, body, &m, peer, finisher).await,
        Kind::Response => match pool(cx).mux.answer(body, m.id.expect("responses have ids")) {
            Ok(_) => accepted(),
            Err(e) => e.respond(None),
        },
        // The gateway said it when it opened the connection.
        Kind::Notification if method == "notifications/initialized" => accepted(),
        Kind::Notification if method == "notifications/cancelled" => {
            if let Some(id) = jsonrpc::params_view(m.params).request_id {
                let key = peer.as_ref().map(|p| p.key());
                let found = pool(cx).live().iter().any(|s| s.cancel_for(key, body, id));
                if !found {
                    tracing::debug!(upstream = %cx.upstream(), "cancellation of no request waiting on a shared connection");
                }
            }
            accepted()
        }
        Kind::Notification => {
            let conn = match slot_key(cx, &m).await {
                Ok(key) => connect(cx, key).await,
                Err(f) => Err(f),
            };
            match conn {
                Ok(c) => match c
                    .session
                    .notify(body.clone(), m.kind, m.method.as_deref(), m.params)
                    .await
                {
                    Ok(()) => accepted(),
                    Err(e) => e.respond(None),
                },
                Err(e) => e.respond(None),
            }
        }
    }
}

/// A request, on the connection picked for it.
async fn request(
    cx: &Ctx<'_>,
    body: &Bytes,
    m: &Message<'_>,
    peer: Option<Arc<Peer>>,
    finisher: Option<Finisher>,
) -> Response<Body> {
    let id = m.id.expect("requests have ids");
    let key = match slot_key(cx, m).await {
        Ok(k) => k,
        Err(f) => return f.respond(Some(id)),
    };
    let conn = match connect(cx, key).await {
        Ok(c) => c,
        Err(f) => return f.respond(Some(id)),
    };
    let session = conn.session;
    if let Some(local) = by_client(&session, m, peer.as_deref()) {
        return reply::json(StatusCode::OK, local);
    }
    let progress = jsonrpc::params_view(m.params).request_progress_token;
    let resp = match session.request_as(body, id, progress, peer.as_ref()).await {
        Ok((rx, guard)) => {
            let pending = Pending { rx, guard, id };
            deliver::answer(cx, &session, pending, finisher, false).await
        }
        Err(e) => e.respond(Some(id)),
    };
    single_end(cx, key, resp)
}

/// What a client of a shared connection asks that concerns it alone: its
/// log level (the upstream is asked only for more than it sends already)
/// and its subscriptions (the upstream is told of an unsubscription only
/// once no client is subscribed). `Some` answers it here.
fn by_client(session: &MessageSession, m: &Message<'_>, peer: Option<&Peer>) -> Option<Bytes> {
    let peer = peer?;
    let id = m.id?;
    let empty = || {
        Bytes::from(format!(
            r#"{{"jsonrpc":"2.0","id":{},"result":{{}}}}"#,
            id.get()
        ))
    };
    match m.method.as_deref()? {
        "logging/setLevel" => {
            let level: serde_json::Value = serde_json::from_str(m.params?.get()).ok()?;
            let rank = level_rank(level.get("level")?.as_str()?)?;
            peer.set_level(rank);
            (!session.lower_level(rank)).then(empty)
        }
        "resources/subscribe" => {
            let uri = jsonrpc::params_view(m.params).uri?;
            session.subscribe(peer.key(), &uri);
            None
        }
        "resources/unsubscribe" => {
            let uri = jsonrpc::params_view(m.params).uri?;
            (!session.unsubscribe(peer.key(), &uri)).then(empty)
        }
        _ => None,
    }
}

/// A connection of one request only ends with its answer.
fn single_end(cx: &Ctx<'_>, key: SlotKey, resp: Response<Body>) -> Response<Body> {
    if !matches!(key.lane, Lane::Single(_)) {
        return resp;
    }
    let gw = cx.gw.clone();
    let index = cx.mount.index;
    let end = EndOnDrop(Some(Box::new(move || {
        gw.pools[index].end(&key, "its one request was answered");
    })));
    resp.map(|b| {
        b.map_frame(move |f| {
            let _held = &end;
            f
        })
        .boxed_unsync()
    })
}

struct EndOnDrop(Option<Box<dyn FnOnce() + Send>>);

impl Drop for EndOnDrop {
    fn drop(&mut self) {
        if let Some(f) = self.0.take() {
            f();
        }
    }
}

/// A client's `initialize`, answered from the upstream's answer to the
/// gateway's own, with a session id that names no connection.
async fn initialize(cx: &Ctx<'_>, m: &Message<'_>, finisher: Option<Finisher>) -> Response<Body> {
    let id = m.id.expect("requests have ids");
    let params = m
        .params
        .and_then(|p| serde_json::from_str::<serde_json::Value>(p.get()).ok());
    let hello = Hello::of_initialize(params.as_ref());
    let client = loop {
        let n: u64 = rand::random();
        if n != 0 {
            break n;
        }
    };
    // Answered from the upstream's own answer while a connection is open;
    // otherwise one is opened first, so that an upstream that is not there
    // is said so now, not at the first call.
    let creds = creds(cx);
    let cached = pool(cx)
        .handshake(creds)
        .filter(|_| pool(cx).has_live(Era::Handshake, creds));
    let handshake = match cached {
        Some(h) => h,
        None => {
            let key = match cx.mount.config.sessions.mode {
                SessionMode::Conversation => SlotKey {
                    era: Era::Handshake,
                    creds,
                    caps: hello.caps,
                    lane: Lane::Client(client),
                },
                _ => pool(cx).pick(Era::Handshake, creds, hello.caps),
            };
            match connect(cx, key).await.map(|c| c.handshake) {
                Ok(Some(h)) => h,
                Ok(None) => unreachable!("a handshake-era connection has its handshake"),
                Err(f) => return f.respond(Some(id)),
            }
        }
    };
    pool(cx).peers().get_or_insert(client, hello.caps);
    let bytes = Finisher::apply(finisher.as_ref(), handshake.answer(id, &hello.version));
    let token = Token {
        mount: cx.upstream().to_owned(),
        route: Route::Pooled { client },
        host: Some(cx.host),
        started: Some(crate::session::id::now_millis()),
        hello: Some(hello),
    };
    let sid = cx.gw.key.seal(&token);
    let mut r = reply::json(StatusCode::OK, bytes);
    r.headers_mut().insert(
        SESSION_HEADER,
        http::HeaderValue::from_str(&sid).expect("base64url is a valid header value"),
    );
    r
}

/// The credentials a connection for this request carries: an HTTP
/// upstream's held session is the requester's alone.
pub fn creds(cx: &Ctx<'_>) -> u64 {
    if !matches!(cx.mount.config.transport, Transport::Http { .. }) {
        return 0;
    }
    let mut parts: Vec<&[u8]> = Vec::new();
    for name in
        std::iter::once(&http::header::AUTHORIZATION).chain(&cx.mount.config.forward_headers)
    {
        parts.push(name.as_str().as_bytes());
        for v in cx.headers.get_all(name) {
            parts.push(v.as_bytes());
        }
    }
    digest(parts)
}

/// The conversation a request names, by the mount's `conversation_key`.
fn conversation(cx: &Ctx<'_>, m: &Message<'_>) -> Option<u64> {
    match &cx.mount.config.sessions.key {
        ConversationKey::Header(h) => {
            let v = cx.headers.get(h)?;
            Some(digest([h.as_str().as_bytes(), v.as_bytes()]))
        }
        ConversationKey::Meta(k) => {
            let params: serde_json::Value = serde_json::from_str(m.params?.get()).ok()?;
            let v = params.get("_meta")?.get(k)?;
            let text = match v {
                serde_json::Value::String(s) if !s.is_empty() => s.clone(),
                serde_json::Value::String(_) | serde_json::Value::Null => return None,
                other => other.to_string(),
            };
            Some(digest([k.as_bytes(), text.as_bytes()]))
        }
    }
}

/// The connection of a request in era `era` with conversation `talk`: a
/// client session's shares a connection with those that declared the same
/// capabilities; a request without one goes to any (it declared nothing);
/// a request of the envelope era declares its own in each request.
fn default_key(cx: &Ctx<'_>, era: Era, talk: Option<u64>) -> SlotKey {
    let creds = creds(cx);
    let caps = match (era, &cx.session) {
        (Era::Handshake, SessionRef::Pooled { .. }) => {
            cx.hello.as_ref().map(|h| h.caps).unwrap_or_default()
        }
        _ => Default::default(),
    };
    let key = |lane| SlotKey {
        era,
        creds,
        caps: Default::default(),
        lane,
    };
    match (cx.mount.config.sessions.mode, talk, &cx.session) {
        (SessionMode::Conversation, Some(t), _) => key(Lane::Conversation(t)),
        (SessionMode::Conversation, None, SessionRef::Pooled { client }) => SlotKey {
            caps,
            ..key(Lane::Client(*client))
        },
        (SessionMode::Conversation, None, _) => key(Lane::Single(rand::random())),
        (_, _, SessionRef::Pooled { .. }) if era == Era::Handshake => {
            pool(cx).pick(era, creds, caps)
        }
        _ if era == Era::Handshake => pool(cx).pick_any(era, creds),
        _ => pool(cx).pick(era, creds, Default::default()),
    }
}

/// The connection a message goes to: its era (the envelope only where the
/// upstream speaks it, learned once by asking), its credentials, its lane.
async fn slot_key(cx: &Ctx<'_>, m: &Message<'_>) -> Result<SlotKey, Failure> {
    let header = cx
        .headers
        .get(PROTOCOL_HEADER)
        .and_then(|v| v.to_str().ok());
    let mut era = protocol::era(header, m.params);
    // An HTTP upstream gets envelope requests as they are (they need no
    // session): those that come here are for a session the gateway holds.
    let http = matches!(cx.mount.config.transport, Transport::Http { .. });
    if era == Era::Envelope && (http || !speaks_envelope(cx).await?) {
        era = Era::Handshake;
    }
    Ok(default_key(cx, era, conversation(cx, m)))
}

/// Whether the upstream speaks the 2026-07-28 envelope: asked once with
/// `server/discover` on a connection of that era (kept when it does).
async fn speaks_envelope(cx: &Ctx<'_>) -> Result<bool, Failure> {
    let pool = pool(cx);
    if let Some(known) = pool.speaks_envelope() {
        return Ok(known);
    }
    let key = SlotKey {
        era: Era::Envelope,
        creds: creds(cx),
        caps: Default::default(),
        lane: Lane::Pool(0),
    };
    let conn = connect(cx, key).await?;
    let yes = handshake::discover(&conn.session, cx.gw.handshake_timeout())
        .await?
        .is_some();
    pool.set_speaks_envelope(yes);
    if !yes {
        pool.end(&key, "the upstream does not speak the 2026-07-28 envelope");
        tracing::info!(upstream = %cx.upstream(), "upstream speaks only the handshake era: requests under the 2026-07-28 envelope go to a connection the gateway initialized");
    }
    Ok(yes)
}

async fn connect(cx: &Ctx<'_>, key: SlotKey) -> Result<Conn, Failure> {
    cx.gw.connect(cx.mount, key, cx.headers).await
}

/// A pooled client session's GET stream: what the upstream says to it (or
/// to every client) on its own, and the gateway's own announcements. A
/// client with no session gets a stream of what is said to every client.
pub fn get(cx: &Ctx<'_>) -> Response<Body> {
    let pool = pool(cx);
    if let SessionRef::Pooled { client } = cx.session
        && pool.ended.contains(&client)
    {
        return Failure::SessionNotFound.respond(None);
    }
    let (peer, own) = match peer(cx) {
        Some(p) => (p, false),
        None => {
            let key = rand::random::<u64>() | 1;
            (pool.peers().get_or_insert(key, Default::default()), true)
        }
    };
    let Some(mut rx) = peer.attach_stream() else {
        return Failure::StreamConflict.respond(None);
    };
    let (tx, out) = mpsc::channel::<Bytes>(16);
    let stop = cx.gw.shutdown.clone();
    let peers = pool.peers().clone();
    let mut watch = super::watch::watch(cx);
    // Ends with the client, the gateway's shutdown, or the peer's removal.
    tokio::spawn(async move {
        loop {
            let bytes = tokio::select! {
                m = rx.recv() => match m {
                    Some(m) => {
                        if let Some(w) = &mut watch {
                            w(&m);
                        }
                        message_event(&m)
                    }
                    None => break,
                },
                _ = tokio::time::sleep(KEEPALIVE) => Bytes::from_static(sse::KEEPALIVE),
                _ = stop.cancelled() => break,
            };
            if tx.send(bytes).await.is_err() {
                break;
            }
        }
        if own {
            peers.remove(peer.key());
        }
    });
    sse_response(out)
}

/// The end of a pooled client session: it is forgotten, and the upstream
/// is told of subscriptions no client holds any more.
pub fn delete(cx: &Ctx<'_>) -> Response<Body> {
    let SessionRef::Pooled { client } = cx.session else {
        return Failure::MethodNotAllowed {
            allow: "POST",
            why: Some("DELETE needs a session"),
        }
        .respond(None);
    };
    let pool = pool(cx);
    pool.ended.insert(client);
    if let Some(peer) = pool.peers().remove(client) {
        peer.close();
    }
    for s in pool.live() {
        for uri in s.forget_peer(client) {
            unsubscribe(&s, &uri);
        }
    }
    reply::status(StatusCode::OK)
}

/// Tell the upstream no client is subscribed to `uri` any more. Its answer
/// is not awaited: it reaches no waiting request and is dropped.
fn unsubscribe(session: &Arc<MessageSession>, uri: &str) {
    let uri = serde_json::to_string(uri).expect("strings serialise");
    let n: u32 = rand::random();
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":"mcp-ui-gateway/unsubscribe-{n}","method":"resources/unsubscribe","params":{{"uri":{uri}}}}}"#
    );
    let _ = session.send_raw(Bytes::from(body));
}
