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
//!
//! - `connection`: the connection a request goes to;
//! - `client`: a client session's opening, its GET stream and its end.

mod client;
mod connection;

use bytes::Bytes;
use http::{Response, StatusCode};
use http_body_util::BodyExt;

use super::answer::accepted;
use super::context::{Ctx, PROTOCOL_HEADER};
use super::deliver;
use crate::pending::finish::Finisher;
use crate::pending::waiting::{EndOnDrop, Reply, Waiting};
use client::{initialize, peer};
use connection::{connect, default_key, pool, slot_key};
use mcp_ui_model::config::SessionMode;
use mcp_ui_model::outcome::Failure;
use mcp_ui_model::reply::{self, Body};
use mcp_ui_upstream::session::pool::{Lane, SlotKey};
use mcp_ui_upstream::upstream::messages::peer::level_rank;
use mcp_ui_upstream::upstream::messages::{MessageSession, Peer};
use mcp_ui_wire::jsonrpc::{self, Kind, Message};
use mcp_ui_wire::protocol::{Era, KNOWN_VERSIONS};

pub(crate) use client::{Listener, new_client};
pub use client::{Mailbox, delete, get};
pub(super) use client::{end, mailbox, not_ended, open};
pub use connection::creds;

/// The upstream's answer to the gateway's `initialize` under the request's
/// credentials: the one a live connection had, else that of a connection
/// opened for it.
pub(super) async fn handshake(
    cx: &Ctx<'_>,
) -> Result<std::sync::Arc<mcp_ui_upstream::upstream::handshake::Handshake>, Failure> {
    let creds = creds(cx);
    if let Some(h) = pool(cx)
        .handshake(creds)
        .filter(|_| pool(cx).has_live(Era::Handshake, creds))
    {
        return Ok(h);
    }
    let conn = connect(cx, default_key(cx, Era::Handshake, None)).await?;
    Ok(conn
        .handshake
        .expect("a handshake-era connection has its handshake"))
}

/// The connection a request of the handshake era without a session would
/// go to (the one a listener's subscriptions are made on).
pub(super) async fn shared_connection(
    cx: &Ctx<'_>,
) -> Result<std::sync::Arc<MessageSession>, Failure> {
    Ok(connect(cx, default_key(cx, Era::Handshake, None))
        .await?
        .session)
}

/// Whether the upstream speaks the 2026-07-28 envelope itself (asked once
/// with `server/discover`; `Err` when it could not be asked).
pub(super) async fn speaks_envelope(cx: &Ctx<'_>) -> Result<bool, Failure> {
    connection::speaks_envelope(cx).await
}

/// Whether a mount's client sessions are pooled (own no connection).
pub fn pooled(cx: &Ctx<'_>) -> bool {
    cx.mount.config.sessions.mode != SessionMode::Client
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
        crate::oauth::passthrough::rewrite_challenges(
            &gw.oauth.passthrough,
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
                        super::batch::post(cx, items, c.session, peer(cx), Some(&pool(cx).mux))
                            .await;
                    end_with(end, resp)
                }
                Err(f) => f.respond(None),
            };
        }
    };
    if let Err(failure) = deliver::check_method_headers(cx, &m) {
        return failure.respond(m.id.filter(|_| m.kind == Kind::Request));
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
        Ok(Reply::Waiting(w)) => super::rounds::answer(cx, *w).await,
        Err(f) => f.respond(Some(id)),
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
    // A request of the 2026-07-28 revision that the gateway stands in for
    // is told what the upstream asks (its client's capabilities are judged
    // when the round is given).
    let bridged = finisher
        .as_ref()
        .and_then(|f| f.revision.as_ref())
        .is_some_and(|a| a.bridged);
    let peer = match peer(cx) {
        None if bridged => Some(Peer::new(
            rand::random::<u64>() | 1,
            mcp_ui_wire::protocol::Caps::ALL,
        )),
        p => p,
    };
    if let Some(local) = by_client(&session, m, peer.as_deref()) {
        return Ok(Reply::Now(local));
    }
    let progress = jsonrpc::params_view(m.params).request_progress_token;
    let sent = session
        .request_as(body, id, progress, peer.as_ref())
        .await?;
    Ok(Reply::Waiting(Box::new(
        Waiting::new(
            cx.gw.limits.request_timeout_secs,
            session,
            sent,
            id,
            finisher,
        )
        .ending(end),
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
        gw.upstreams.pools[index].end(&key, "its one request was answered");
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
