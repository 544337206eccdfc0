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

use super::answer::accepted;
use super::context::{Ctx, PROTOCOL_HEADER, SESSION_HEADER, SessionRef};
use super::deliver::{self, EndOnDrop, Reply, Waiting};
use super::finish::Finisher;
use crate::config::{ConversationKey, SessionMode, Transport};
use crate::jsonrpc::{self, Kind, Message};
use crate::outcome::Failure;
use crate::protocol::{self, Era, KNOWN_VERSIONS};
use crate::reply::{self, Body};
use crate::session::pool::{Conn, Lane, Pool, SlotKey, digest};
use crate::session::{Hello, Route, Token};
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
    if let Err(f) = not_ended(cx) {
        return f.respond(None);
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
                    let end = single_end(cx, key);
                    let resp =
                        deliver::post_batch(cx, items, c.session, peer(cx), Some(&pool(cx).mux))
                            .await;
                    end_with(end, resp)
                }
                Err(f) => f.respond(None),
            };
        }
    };
    if let Err(failure) = deliver::check_method_headers(cx, &m) {
        return failure.respond(None);
    }
    let method = m.method.as_deref().unwrap_or_default();
    let done = |r: Result<(), Failure>| match r {
        Ok(()) => accepted(),
        Err(e) => e.respond(None),
    };
    match m.kind {
        Kind::Request if method == "initialize" && pooled(cx) => initialize(cx, &m, finisher).await,
        Kind::Request => request(cx, body, &m, finisher).await,
        Kind::Response => done(answer_server(cx, body, &m)),
        Kind::Notification => done(notify(cx, body, &m).await),
    }
}

/// The client's answer to a request the upstream sent it.
pub(super) fn answer_server(cx: &Ctx<'_>, body: &Bytes, m: &Message<'_>) -> Result<(), Failure> {
    pool(cx)
        .mux
        .answer(body, m.id.expect("responses have ids"))
        .map(|_| ())
}

/// A client's notification: a cancellation reaches the connection its
/// request waits on, the others the connection picked for them.
pub(super) async fn notify(cx: &Ctx<'_>, body: &Bytes, m: &Message<'_>) -> Result<(), Failure> {
    match m.method.as_deref().unwrap_or_default() {
        // The gateway said it when it opened the connection.
        "notifications/initialized" => Ok(()),
        "notifications/cancelled" => {
            if let Some(id) = jsonrpc::params_view(m.params).request_id {
                let key = peer(cx).map(|p| p.key());
                let found = pool(cx).live().iter().any(|s| s.cancel_for(key, body, id));
                if !found {
                    tracing::debug!(upstream = %cx.upstream(), "cancellation of no request waiting on a shared connection");
                }
            }
            Ok(())
        }
        _ => {
            let conn = connect(cx, slot_key(cx, m).await?).await?;
            conn.session
                .notify(body.clone(), m.kind, m.method.as_deref(), m.params)
                .await
        }
    }
}

/// A request, on the connection picked for it, answered over HTTP.
async fn request(
    cx: &Ctx<'_>,
    body: &Bytes,
    m: &Message<'_>,
    finisher: Option<Finisher>,
) -> Response<Body> {
    let id = m.id.expect("requests have ids");
    match exchange(cx, body, m, finisher).await {
        Ok(Reply::Now(b)) => reply::json(StatusCode::OK, b),
        Ok(Reply::Waiting(w)) => deliver::answer(cx, *w, false).await,
        Err(f) => f.respond(Some(id)),
    }
}

/// A client session that its client ended stays ended.
pub(super) fn not_ended(cx: &Ctx<'_>) -> Result<(), Failure> {
    match cx.session {
        SessionRef::Pooled { client } if pool(cx).ended.contains(&client) => {
            Err(Failure::SessionNotFound)
        }
        _ => Ok(()),
    }
}

/// A request, on the connection picked for it: answered here when it
/// concerns its client alone, else sent and waiting for the upstream's
/// answer. The typed exchange of every session that owns no connection,
/// the mount's own clients' and an app endpoint's alike.
pub(super) async fn exchange(
    cx: &Ctx<'_>,
    body: &Bytes,
    m: &Message<'_>,
    finisher: Option<Finisher>,
) -> Result<Reply, Failure> {
    not_ended(cx)?;
    let id = m.id.expect("requests have ids");
    let key = slot_key(cx, m).await?;
    let conn = connect(cx, key).await?;
    let end = single_end(cx, key);
    let session = conn.session;
    let peer = peer(cx);
    if let Some(local) = by_client(&session, m, peer.as_deref()) {
        return Ok(Reply::Now(local));
    }
    let progress = jsonrpc::params_view(m.params).request_progress_token;
    let sent = session
        .request_as(body, id, progress, peer.as_ref())
        .await?;
    Ok(Reply::Waiting(Box::new(
        Waiting::new(cx, session, sent, id, finisher).ending(end),
    )))
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

/// A connection of one request only ends with its answer: what ends it
/// when dropped.
fn single_end(cx: &Ctx<'_>, key: SlotKey) -> Option<EndOnDrop> {
    if !matches!(key.lane, Lane::Single(_)) {
        return None;
    }
    let gw = cx.gw.clone();
    let index = cx.mount.index;
    Some(EndOnDrop::new(move || {
        gw.pools[index].end(&key, "its one request was answered");
    }))
}

/// `resp`, ending the request's own connection with its body.
fn end_with(end: Option<EndOnDrop>, resp: Response<Body>) -> Response<Body> {
    let Some(end) = end else {
        return resp;
    };
    resp.map(|b| {
        b.map_frame(move |f| {
            let _held = &end;
            f
        })
        .boxed_unsync()
    })
}

/// A client's `initialize`, answered from the upstream's answer to the
/// gateway's own, with a session id that names no connection.
async fn initialize(cx: &Ctx<'_>, m: &Message<'_>, finisher: Option<Finisher>) -> Response<Body> {
    let id = m.id.expect("requests have ids");
    let params = m
        .params
        .and_then(|p| serde_json::from_str::<serde_json::Value>(p.get()).ok());
    let hello = Hello::of_initialize(params.as_ref());
    let client = new_client();
    let bytes = match open(cx, client, &hello, id, finisher).await {
        Ok(b) => b,
        Err(f) => return f.respond(Some(id)),
    };
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

/// A new client session's number (never 0).
pub fn new_client() -> u64 {
    loop {
        let n: u64 = rand::random();
        if n != 0 {
            break n;
        }
    }
}

/// Client session `client` opened: the answer to its `initialize` (`id`),
/// made from the upstream's answer to the gateway's own while a connection
/// is open; otherwise one is opened first, so that an upstream that is not
/// there is said so now, not at the first call.
pub(super) async fn open(
    cx: &Ctx<'_>,
    client: u64,
    hello: &Hello,
    id: &serde_json::value::RawValue,
    finisher: Option<Finisher>,
) -> Result<Bytes, Failure> {
    let creds = creds(cx);
    let cached = pool(cx)
        .handshake(creds)
        .filter(|_| pool(cx).has_live(Era::Handshake, creds));
    let handshake = match cached {
        Some(h) => h,
        None => {
            let key = match cx.mount.config.sessions.mode {
                SessionMode::Shared => pool(cx).pick(Era::Handshake, creds, hello.caps),
                _ => SlotKey {
                    era: Era::Handshake,
                    creds,
                    caps: hello.caps,
                    lane: Lane::Client(client),
                },
            };
            connect(cx, key)
                .await?
                .handshake
                .expect("a handshake-era connection has its handshake")
        }
    };
    pool(cx).peers().get_or_insert(client, hello.caps);
    Ok(Finisher::apply(
        finisher.as_ref(),
        handshake.answer(id, &hello.version),
    ))
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
        // An app endpoint's session with a member whose clients own their
        // connections.
        (SessionMode::Client, _, SessionRef::Pooled { client }) => SlotKey {
            caps,
            ..key(Lane::Client(*client))
        },
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
    let mailbox = match mailbox(cx) {
        Ok(m) => m,
        Err(f) => return f.respond(None),
    };
    // Ends with the client, the gateway's shutdown, or the peer's removal.
    let messages = futures_util::stream::unfold(mailbox, |mut mb| async move {
        mb.rx.recv().await.map(|m| (m, mb))
    });
    deliver::event_stream(cx.gw, super::watch::watch(cx), Box::pin(messages))
}

/// What the upstream says to a client session on its own (and to every
/// client), as it comes: a GET stream's content. A client with no session
/// gets what is said to every client, for as long as it holds this.
pub struct Mailbox {
    pub rx: mpsc::Receiver<Bytes>,
    /// The peer made for a client with no session, forgotten with this.
    own: Option<(Arc<crate::upstream::messages::Peers>, u64)>,
}

impl Drop for Mailbox {
    fn drop(&mut self) {
        if let Some((peers, key)) = self.own.take() {
            peers.remove(key);
        }
    }
}

/// The session's mailbox; one reader at a time.
pub(super) fn mailbox(cx: &Ctx<'_>) -> Result<Mailbox, Failure> {
    not_ended(cx)?;
    let pool = pool(cx);
    let (peer, own) = match peer(cx) {
        Some(p) => (p, None),
        None => {
            let key = rand::random::<u64>() | 1;
            let peer = pool.peers().get_or_insert(key, Default::default());
            (peer, Some((pool.peers().clone(), key)))
        }
    };
    let mailbox = |rx| Mailbox { rx, own };
    peer.attach_stream()
        .map(mailbox)
        .ok_or(Failure::StreamConflict)
}

/// The end of a pooled client session: it is forgotten, its own
/// connections end, and the upstream is told of subscriptions no client
/// holds any more.
pub fn delete(cx: &Ctx<'_>) -> Response<Body> {
    match end(cx) {
        Ok(()) => reply::status(StatusCode::OK),
        Err(f) => f.respond(None),
    }
}

/// [`delete`], typed.
pub(super) fn end(cx: &Ctx<'_>) -> Result<(), Failure> {
    let SessionRef::Pooled { client } = cx.session else {
        return Err(Failure::MethodNotAllowed {
            allow: "POST",
            why: Some("DELETE needs a session"),
        });
    };
    let pool = pool(cx);
    pool.ended.insert(client);
    if let Some(peer) = pool.peers().remove(client) {
        peer.close();
    }
    pool.end_client(client, "its client ended the session");
    for s in pool.live() {
        for uri in s.forget_peer(client) {
            unsubscribe(&s, &uri);
        }
    }
    Ok(())
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
