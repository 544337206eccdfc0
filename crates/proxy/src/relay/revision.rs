//! The 2026-07-28 revision for every upstream. A request of that revision
//! is validated as it requires before anything else (`bridge::check`); an
//! upstream that speaks it gets the request as it is, and one of the
//! handshake era is stood in for: its `server/discover` is written from its
//! `initialize` answer, the request goes to a connection the gateway
//! initialized, and the answer comes back in the revision's form
//! (`bridge::answer`, through the request's [`Finisher`]).

use bytes::Bytes;
use http::{Response, StatusCode};
use serde_json::value::RawValue;

use super::context::{Ctx, METHOD_HEADER, NAME_HEADER, PROTOCOL_HEADER};
use super::pooled;
use crate::gateway::MountState;
use mcp_ui_model::reply::{self, Body};
use mcp_ui_overlay::overlay::OverlaySet;
use mcp_ui_rewrite::bridge::{self, Answering, Headers, Hints, Seen};
use mcp_ui_rewrite::rewrite::{self as rw, ListChanged};
use mcp_ui_wire::jsonrpc::{self, Message};

/// A request of the revision, admitted.
#[derive(Debug, Clone)]
pub(super) struct Revision {
    pub method: String,
    pub uri: Option<String>,
    pub name: Option<String>,
    /// The capabilities the client declared in the request's `_meta`.
    caps: mcp_ui_wire::protocol::Caps,
}

impl Revision {
    /// What answering it needs, for an upstream that speaks the revision
    /// (`bridged` false) or one the gateway stands in for.
    pub fn answering(&self, cx: &Ctx<'_>, overlays: &OverlaySet, bridged: bool) -> Answering {
        Answering {
            method: self.method.clone(),
            uri: self.uri.clone(),
            name: self.name.clone(),
            caps: self.caps,
            hints: hints(cx.mount, overlays, &self.method),
            bridged,
        }
    }
}

/// The freshness the gateway announces for `method`'s answers on `mount`:
/// the mount file's `tools_list` for its tool listing (which changes with
/// the overlays), else the mount's `cache_ttl_ms` and `cache_scope`.
pub(crate) fn hints(mount: &MountState, overlays: &OverlaySet, method: &str) -> Hints {
    let listing = (method == "tools/list")
        .then(|| overlays.mount(&mount.config.name)?.tools_list())
        .flatten();
    match listing {
        Some(l) => Hints {
            ttl_ms: l.ttl_ms,
            scope: match l.cache_scope {
                mcp_ui_overlay::overlay::CacheScope::Public => bridge::CacheScope::Public,
                mcp_ui_overlay::overlay::CacheScope::Private => bridge::CacheScope::Private,
            },
        },
        None => mount.config.cache,
    }
}

/// `Ok(Some)` for a request of the revision that may be served, `Ok(None)`
/// for a request of the handshake era, `Err` with the refusal of one the
/// revision does not allow.
pub(super) fn admit(
    cx: &Ctx<'_>,
    m: &Message<'_>,
) -> Result<Option<Revision>, Box<Response<Body>>> {
    // `declared` is set, once, for a request of the revision.
    let Some(caps) = cx.declared else {
        return Ok(None);
    };
    let method = m.method.as_deref().unwrap_or_default();
    if let Err(refusal) = bridge::check(method, m.params, &headers_of(cx.headers)) {
        tracing::debug!(upstream = %cx.upstream(), method, code = refusal.code, "{}", refusal.message);
        return Err(Box::new(refused(&refusal, m.id)));
    }
    let view = jsonrpc::params_view(m.params);
    Ok(Some(Revision {
        method: method.to_owned(),
        uri: view.uri.map(std::borrow::Cow::into_owned),
        name: view.name.map(std::borrow::Cow::into_owned),
        caps,
    }))
}

/// The capabilities a request of the revision declares, `None` for a
/// request of the handshake era.
pub(crate) fn declared(
    method: Option<&str>,
    headers: &http::HeaderMap,
    params: Option<&RawValue>,
) -> Option<mcp_ui_wire::protocol::Caps> {
    let header = headers.get(PROTOCOL_HEADER).and_then(|v| v.to_str().ok());
    bridge::is_revision_request(method.unwrap_or_default(), header, params)
        .then(|| client_caps(params))
}

/// The capabilities a request's `_meta` declares.
fn client_caps(params: Option<&RawValue>) -> mcp_ui_wire::protocol::Caps {
    #[derive(serde::Deserialize)]
    struct P {
        #[serde(rename = "_meta")]
        meta: Option<serde_json::Map<String, serde_json::Value>>,
    }
    let meta = params.and_then(|p| serde_json::from_str::<P>(p.get()).ok()?.meta);
    mcp_ui_wire::protocol::Caps::of(
        meta.as_ref()
            .and_then(|m| m.get(mcp_ui_rewrite::bridge::check::META_CLIENT_CAPABILITIES)),
    )
}

/// How the request's headers that repeat its body were sent.
pub(crate) fn headers_of(headers: &http::HeaderMap) -> Headers<'_> {
    Headers {
        version: seen(headers, &PROTOCOL_HEADER),
        method: seen(headers, &METHOD_HEADER),
        name: seen(headers, &NAME_HEADER),
    }
}

fn seen<'h>(headers: &'h http::HeaderMap, name: &http::HeaderName) -> Seen<'h> {
    let mut values = headers.get_all(name).iter();
    match (values.next(), values.next()) {
        (None, _) => Seen::Absent,
        (Some(v), None) => Seen::Once(v.as_bytes()),
        _ => Seen::Repeated,
    }
}

pub(crate) fn refused(refusal: &bridge::Refusal, id: Option<&RawValue>) -> Response<Body> {
    let status = StatusCode::from_u16(refusal.status).unwrap_or(StatusCode::BAD_REQUEST);
    reply::json(status, refusal.response(id))
}

/// Whether the gateway stands in for the revision: the upstream speaks
/// only the handshake era. An upstream that cannot be asked now is relayed
/// to as it is (and asked again next time).
pub(super) async fn bridged(cx: &Ctx<'_>) -> bool {
    match pooled::speaks_envelope(cx).await {
        Ok(speaks) => !speaks,
        // An HTTP upstream of the handshake era refuses the question with
        // something that is no answer to it (400 for a missing session or
        // an unknown revision).
        Err(mcp_ui_model::outcome::Failure::Upstream(
            mcp_ui_model::outcome::UpstreamError::Protocol { detail, .. },
        )) => {
            tracing::info!(upstream = %cx.upstream(), "upstream speaks only the handshake era ({detail}): the gateway stands in for 2026-07-28");
            cx.gw.upstreams.pools[cx.mount.index].set_speaks_envelope(false);
            true
        }
        Err(e) => {
            tracing::debug!(upstream = %cx.upstream(), "could not learn whether the upstream speaks 2026-07-28: {e}");
            false
        }
    }
}

/// `server/discover` for an upstream of the handshake era: written from
/// its answer to the gateway's `initialize`, with what the overlays add.
pub(super) async fn discover(
    cx: &Ctx<'_>,
    m: &Message<'_>,
    overlays: &OverlaySet,
) -> Response<Body> {
    let handshake = match pooled::handshake(cx).await {
        Ok(h) => h,
        Err(f) => return f.respond(m.id),
    };
    let initialized: serde_json::Value =
        serde_json::from_str(handshake.result.get()).unwrap_or_default();
    let mut result = bridge::discover(&initialized, cx.mount.config.cache);
    if overlays.mount(cx.upstream()).is_some() {
        // No change is announced until `subscriptions/listen` is served.
        rw::discover_result(&mut result, ListChanged::default());
    }
    let id = m.id.map(RawValue::get).unwrap_or("null");
    reply::json(
        StatusCode::OK,
        Bytes::from(format!(
            r#"{{"jsonrpc":"2.0","id":{id},"result":{result}}}"#
        )),
    )
}

/// `subscriptions/listen` for an upstream of the handshake era: an SSE
/// stream that starts with the acknowledgement of what is honored, then
/// carries the list changes (the upstream's and the overlays') and the
/// updates of the subscribed resources, each tagged with the subscription's
/// id, until the client goes or the gateway shuts down.
pub(super) async fn listen(cx: &Ctx<'_>, m: &Message<'_>) -> Response<Body> {
    use futures_util::StreamExt;
    let Some(id) = m.id else {
        return reply::status(StatusCode::ACCEPTED);
    };
    let asked = match bridge::Filter::of(m.params) {
        Ok(f) => f,
        Err(refusal) => return refused(&refusal, Some(id)),
    };
    let handshake = match pooled::handshake(cx).await {
        Ok(h) => h,
        Err(f) => return f.respond(Some(id)),
    };
    let initialized: serde_json::Value =
        serde_json::from_str(handshake.result.get()).unwrap_or_default();
    let honored = asked.honored(&bridge::Announced::of(&initialized));
    let listener = match pooled::Listener::open(cx) {
        Ok(l) => l,
        Err(f) => return f.respond(Some(id)),
    };
    if !honored.resource_subscriptions.is_empty() {
        match pooled::shared_connection(cx).await {
            Ok(session) => {
                for uri in &honored.resource_subscriptions {
                    listener.subscribe(&session, uri);
                }
            }
            Err(f) => return f.respond(Some(id)),
        }
    }
    let ack = honored.acknowledgement(id);
    let sub = id.to_owned();
    let messages = futures_util::stream::unfold(listener, |mut l| async move {
        l.mailbox.rx.recv().await.map(|m| (m, l))
    })
    .filter_map(move |m| std::future::ready(honored.deliver(&m, &sub)));
    let stream = futures_util::stream::once(std::future::ready(ack)).chain(messages);
    super::deliver::event_stream(&cx.gw.shutdown, None, Box::pin(stream))
}
