//! The connection a pooled request goes to: its mount's pool, the
//! credentials it carries, its protocol era (the 2026-07-28 envelope only
//! where the upstream speaks it) and its lane (a pool place, its
//! conversation's, its client session's, one of its own).

use serde_json::value::RawValue;

use crate::relay::context::{Ctx, PROTOCOL_HEADER, SessionRef};
use mcp_ui_model::config::{ConversationKey, SessionMode, Transport};
use mcp_ui_model::outcome::Failure;
use mcp_ui_upstream::session::pool::{Conn, Lane, Pool, SlotKey, digest};
use mcp_ui_upstream::upstream::handshake;
use mcp_ui_wire::jsonrpc::{self, Message};
use mcp_ui_wire::protocol::{self, Era};

/// The mount's pool.
pub(super) fn pool<'a>(cx: &Ctx<'a>) -> &'a Pool {
    &cx.gw.upstreams.pools[cx.mount.index]
}

/// The credentials a connection for this request carries: an HTTP
/// upstream's held session is the requester's alone, and so is a process
/// started with its claims in its environment. Either carries the claim
/// values it was opened with, and serves only requests whose caller's
/// claims are the same ([`carried`]).
pub fn creds(cx: &Ctx<'_>) -> u64 {
    let http = matches!(cx.mount.config.transport, Transport::Http { .. });
    let env = cx
        .mount
        .config
        .auth
        .as_ref()
        .is_some_and(|a| !a.claims_to_env.is_empty());
    match http || env {
        true => carried(cx),
        false => 0,
    }
}

/// The caller and the claims its connection would carry to the upstream
/// (`claims_to_headers` with every request, `claims_to_env` in a process's
/// environment), as a digest. Claims are fixed when a connection opens: a
/// held HTTP session's headers go with each of its requests and its stream,
/// a process keeps its environment. So a caller whose new token says other
/// claims (a group dropped) gets a connection opened with them, never one
/// carrying the old ones; a token that still says the old ones keeps the
/// old connection.
fn carried(cx: &Ctx<'_>) -> u64 {
    let claimed =
        crate::oauth::resource_server::Claimed::of(cx.mount.config.auth.as_ref(), &cx.access, true);
    let caller = cx.credentials().to_le_bytes();
    let mut parts: Vec<&[u8]> = vec![b"caller", &caller];
    for (name, value) in &claimed.headers {
        parts.push(b"header");
        parts.push(name.as_str().as_bytes());
        parts.push(value.as_bytes());
    }
    for (var, value) in &claimed.env {
        parts.push(b"env");
        parts.push(var.as_bytes());
        parts.push(value.as_bytes());
    }
    digest(parts)
}

/// The conversation a request names, by the mount's `conversation_key`,
/// and the caller's credentials: the key is the caller's word, so it picks
/// among the caller's own conversations only.
fn conversation(cx: &Ctx<'_>, m: &Message<'_>) -> Option<u64> {
    let named = named_conversation(cx, m)?;
    Some(digest([
        named.to_le_bytes().as_slice(),
        cx.credentials().to_le_bytes().as_slice(),
    ]))
}

/// The conversation a request names, by the mount's `conversation_key`.
fn named_conversation(cx: &Ctx<'_>, m: &Message<'_>) -> Option<u64> {
    match &cx.mount.config.sessions.key {
        ConversationKey::Header(h) => {
            let v = cx.headers.get(h)?;
            Some(digest([h.as_str().as_bytes(), v.as_bytes()]))
        }
        ConversationKey::Meta(k) => {
            let v: serde_json::Value =
                serde_json::from_str(meta_member(m.params?, k)?.get()).ok()?;
            let text = match &v {
                serde_json::Value::String(s) if !s.is_empty() => s.clone(),
                serde_json::Value::String(_) | serde_json::Value::Null => return None,
                other => other.to_string(),
            };
            Some(digest([k.as_bytes(), text.as_bytes()]))
        }
    }
}

/// `params._meta[key]`, unparsed; nothing else of the params is parsed.
fn meta_member<'a>(params: &'a RawValue, key: &str) -> Option<&'a RawValue> {
    let meta = jsonrpc::members(jsonrpc::members(params)?.get("_meta")?)?;
    meta.get(key).copied()
}

/// The requests a server asks its client while serving one of the client's.
const ASKS: [&str; 3] = ["elicitation/create", "sampling/createMessage", "roots/list"];

/// The connection of a request in era `era` with conversation `talk`: a
/// client session's shares a connection with those that declared the same
/// capabilities; a request without one goes to any (it declared nothing);
/// a request of the envelope era declares its own in each request.
pub(super) fn default_key(cx: &Ctx<'_>, era: Era, talk: Option<u64>) -> SlotKey {
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
        // A request of the 2026-07-28 revision goes to a connection that
        // declared what its client declares, as a client session's does:
        // servers offer tools, and ask, by them.
        _ if era == Era::Handshake => match cx.declared {
            Some(declared) => {
                let place = pool(cx).pick(era, creds, declared);
                // The upstream asks its client about the request it serves
                // with nothing on the wire to say which: a client that can
                // be asked gets a connection where no other request waits
                // (a round left open keeps its request waiting), one of its
                // own, ended with its answer, while every place is busy.
                let askable = ASKS.iter().any(|m| declared.answers(m));
                match askable && pool(cx).busy(&place) {
                    true => SlotKey {
                        caps: declared,
                        ..key(Lane::Single(rand::random()))
                    },
                    false => place,
                }
            }
            None => pool(cx).pick_any(era, creds),
        },
        _ => pool(cx).pick(era, creds, Default::default()),
    }
}

/// The connection a message goes to: its era (the envelope only where the
/// upstream speaks it, learned once by asking), its credentials, its lane.
pub(super) async fn slot_key(cx: &Ctx<'_>, m: &Message<'_>) -> Result<SlotKey, Failure> {
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
pub(super) async fn speaks_envelope(cx: &Ctx<'_>) -> Result<bool, Failure> {
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

pub(super) async fn connect(cx: &Ctx<'_>, key: SlotKey) -> Result<Conn, Failure> {
    // A process of the caller's own may know its user; a shared one never.
    let own = matches!(
        key.lane,
        Lane::Conversation(_) | Lane::Client(_) | Lane::Single(_)
    );
    let claimed =
        crate::oauth::resource_server::Claimed::of(cx.mount.config.auth.as_ref(), &cx.access, own);
    // Whose connection it is, for the limits on what one caller holds: a
    // caller's own, or a place of the pool (one held with the caller's
    // credentials or claims is theirs, whatever the claims; the others are
    // everyone's).
    let owner = match own || key.creds != 0 {
        true => cx.credentials(),
        false => 0,
    };
    cx.gw
        .connect(cx.mount, key, owner, cx.headers, &claimed)
        .await
}
