//! A pooled client session's life: its `initialize` answered from the
//! connection's handshake, its GET stream of what the upstream says to it on
//! its own, and its end.

use std::sync::Arc;

use bytes::Bytes;
use http::{Response, StatusCode};
use tokio::sync::mpsc;

use super::connection::{connect, creds, pool};
use crate::pending::finish::Finisher;
use crate::relay::context::{Ctx, SESSION_HEADER, SessionRef};
use crate::relay::{deliver, watch};
use mcp_ui_model::config::SessionMode;
use mcp_ui_model::outcome::Failure;
use mcp_ui_model::reply::{self, Body};
use mcp_ui_model::session_id::{Hello, Route, Token};
use mcp_ui_upstream::session::pool::{Lane, SlotKey};
use mcp_ui_upstream::upstream::messages::{MessageSession, Peer};
use mcp_ui_wire::jsonrpc::Message;
use mcp_ui_wire::protocol::Era;

/// The client session the request belongs to, as the pool knows it.
pub(super) fn peer(cx: &Ctx<'_>) -> Option<Arc<Peer>> {
    let SessionRef::Pooled { client } = cx.session else {
        return None;
    };
    let caps = cx.hello.as_ref().map(|h| h.caps).unwrap_or_default();
    Some(pool(cx).peers().get_or_insert(client, caps))
}

/// A client session that its client ended stays ended.
pub(crate) fn not_ended(cx: &Ctx<'_>) -> Result<(), Failure> {
    match cx.session {
        SessionRef::Pooled { client } if pool(cx).ended.contains(&client, cx.session_started) => {
            Err(Failure::SessionNotFound)
        }
        _ => Ok(()),
    }
}

/// A client's `initialize`, answered from the upstream's answer to the
/// gateway's own, with a session id that names no connection.
pub(super) async fn initialize(
    cx: &Ctx<'_>,
    m: &Message<'_>,
    finisher: Option<Finisher>,
) -> Response<Body> {
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
        owner: cx.owner,
        host: Some(cx.host),
        started: Some(mcp_ui_model::clock::unix_millis()),
        hello: Some(hello),
    };
    let sid = cx.gw.ids.key.seal(&token);
    let mut r = reply::json(StatusCode::OK, bytes);
    r.headers_mut().insert(
        SESSION_HEADER,
        http::HeaderValue::from_str(&sid).expect("base64url is a valid header value"),
    );
    r
}

/// A new client session's number (never 0).
pub(crate) fn new_client() -> u64 {
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
pub(crate) async fn open(
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
    deliver::event_stream(&cx.gw.shutdown, watch::watch(cx), Box::pin(messages))
}

/// What the upstream says to a client session on its own (and to every
/// client), as it comes: a GET stream's content. A client with no session
/// gets what is said to every client, for as long as it holds this.
pub struct Mailbox {
    pub rx: mpsc::Receiver<Bytes>,
    /// The peer made for a client with no session, forgotten with this.
    own: Option<(Arc<mcp_ui_upstream::upstream::messages::Peers>, u64)>,
}

impl Drop for Mailbox {
    fn drop(&mut self) {
        if let Some((peers, key)) = self.own.take() {
            peers.remove(key);
        }
    }
}

/// The session's mailbox; one reader at a time.
pub(crate) fn mailbox(cx: &Ctx<'_>) -> Result<Mailbox, Failure> {
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

/// A `subscriptions/listen` of the 2026-07-28 revision, for an upstream
/// the gateway stands in for: a client of its own, with no session, that
/// hears what is said to every client and the updates of the resources it
/// subscribes to, for as long as it listens.
pub(crate) struct Listener {
    pub mailbox: Mailbox,
    key: u64,
    pool_index: usize,
    pools: std::sync::Weak<Vec<mcp_ui_upstream::session::pool::Pool>>,
}

impl Listener {
    pub(crate) fn open(cx: &Ctx<'_>) -> Result<Listener, Failure> {
        let pool = pool(cx);
        let key = rand::random::<u64>() | 1;
        let peer = pool.peers().get_or_insert(key, Default::default());
        let rx = peer.attach_stream().ok_or(Failure::StreamConflict)?;
        Ok(Listener {
            mailbox: Mailbox {
                rx,
                own: Some((pool.peers().clone(), key)),
            },
            key,
            pool_index: cx.mount.index,
            pools: Arc::downgrade(&cx.gw.upstreams.pools),
        })
    }

    /// Subscribe to `uri` on `session`, telling the upstream.
    pub(crate) fn subscribe(&self, session: &Arc<MessageSession>, uri: &str) {
        session.subscribe(self.key, uri);
        let uri = serde_json::to_string(uri).expect("strings serialise");
        let n: u32 = rand::random();
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":"mcp-ui-gateway/subscribe-{n}","method":"resources/subscribe","params":{{"uri":{uri}}}}}"#
        );
        let _ = session.send_raw(Bytes::from(body));
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        let Some(pools) = self.pools.upgrade() else {
            return;
        };
        for s in pools[self.pool_index].live() {
            for uri in s.forget_peer(self.key) {
                unsubscribe(&s, &uri);
            }
        }
    }
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
pub(crate) fn end(cx: &Ctx<'_>) -> Result<(), Failure> {
    let SessionRef::Pooled { client } = cx.session else {
        return Err(Failure::MethodNotAllowed {
            allow: "POST",
            why: Some("DELETE needs a session"),
        });
    };
    let pool = pool(cx);
    pool.ended.insert(client, cx.session_started);
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
