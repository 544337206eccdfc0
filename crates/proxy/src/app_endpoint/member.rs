//! An app's client session with one of its members: the member's mount
//! reached through its typed session interface ([`crate::relay::member`]),
//! so its overlays, connections, limits and metrics apply as on its own
//! path; and the app session a request's headers name.

use std::sync::Arc;

use http::header::HeaderMap;
use serde_json::Value;

use crate::apps::AppState;
use crate::gateway::Gateway;
use crate::relay::context::SESSION_HEADER;
use crate::relay::member::{Member, Seat};
use mcp_ui_model::outcome::Failure;
use mcp_ui_upstream::session::app::AppSession;

/// The session with member `i` of `app`, for a client of app session
/// `session` whose request carries `headers`; `None` when the member's
/// mount is gone or the member was left out of the session.
pub fn of<'a>(
    gw: &'a Arc<Gateway>,
    app: &AppState,
    headers: &'a HeaderMap,
    session: &AppSession,
    i: usize,
    caller: Option<u64>,
) -> Option<Member<'a>> {
    if session.failed.get(i).copied().unwrap_or(true) {
        return None;
    }
    let mount = gw.mounts.get(app.config.members.get(i)?.mount)?;
    let seat = Seat {
        client: session.client,
        hello: session.hello.clone(),
        host: session.host,
        caller,
    };
    Some(Member::new(
        gw,
        mount,
        headers,
        seat,
        app.claude_domain.clone(),
    ))
}

/// The app session the headers name, for a request admitted as `access`;
/// a client with none is sessionless with every member. A session its
/// client ended stays ended, and one made for another caller is unknown.
pub(crate) fn session_of(
    gw: &Gateway,
    app: &AppState,
    headers: &HeaderMap,
    access: &crate::oauth::resource_server::Access,
) -> Result<AppSession, Failure> {
    let n = app.config.members.len();
    let Some(value) = headers.get(SESSION_HEADER) else {
        return Ok(AppSession::sessionless(&app.config.name, n));
    };
    let owner = crate::relay::context::owner_of(access);
    let session = value
        .to_str()
        .ok()
        .and_then(|v| AppSession::open(&gw.ids.key, v, n))
        .filter(|s| s.app == app.config.name && s.failed.len() == n && s.owner == owner)
        .ok_or(Failure::SessionNotFound)?;
    let ended = session.client.is_some_and(|client| {
        app.config.members.iter().any(|m| {
            gw.mounts.get(m.mount).is_some_and(|mount| {
                let started = (session.started != 0).then_some(session.started);
                gw.upstreams.pools[mount.index]
                    .ended
                    .contains(&client, started)
            })
        })
    });
    match ended {
        true => Err(Failure::SessionNotFound),
        false => Ok(session),
    }
}

/// A member's answer, read: its `result`, or why there is none (its
/// error's message).
pub(crate) fn result_of(answer: &[u8]) -> Result<Value, String> {
    let v: Value = serde_json::from_slice(answer).map_err(|e| format!("not JSON: {e}"))?;
    if let Some(r) = v.get("result") {
        return Ok(r.clone());
    }
    Err(match v.get("error") {
        Some(e) => error_text(e),
        None => "no JSON-RPC response".to_owned(),
    })
}

/// A JSON-RPC error as a reason: its message, or the whole error.
fn error_text(e: &Value) -> String {
    e.get("message")
        .and_then(Value::as_str)
        .map_or_else(|| e.to_string(), str::to_owned)
}

/// A member's answer's `result`, kept as text (a listing page is read item
/// by item, never as a whole tree), or why there is none.
pub(crate) fn raw_result_of(answer: &[u8]) -> Result<&serde_json::value::RawValue, String> {
    #[derive(serde::Deserialize)]
    struct Answer<'a> {
        #[serde(borrow, default)]
        result: Option<&'a serde_json::value::RawValue>,
        #[serde(default)]
        error: Option<Value>,
    }
    let a: Answer<'_> = serde_json::from_slice(answer).map_err(|e| format!("not JSON: {e}"))?;
    match (a.result, a.error) {
        (Some(r), _) => Ok(r),
        (None, Some(e)) => Err(error_text(&e)),
        (None, None) => Err("no JSON-RPC response".to_owned()),
    }
}
