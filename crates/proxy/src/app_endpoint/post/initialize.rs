//! An app's `initialize`: a session opened with every member at once, the
//! members' results united into the app's, and the session sealed into the
//! one id the client gets.

use std::sync::Arc;

use bytes::Bytes;
use http::header::HeaderMap;
use http::{Response, StatusCode};
use serde_json::Value;

use super::context::{answer, raw, silent};
use crate::app_endpoint::member::{self, result_of};
use crate::app_endpoint::oauth;
use crate::apps::AppState;
use crate::gateway::Gateway;
use crate::relay::context::SESSION_HEADER;
use mcp_ui_model::outcome::Failure;
use mcp_ui_model::reply::{self, Body};
use mcp_ui_model::session_id::Hello;
use mcp_ui_rewrite::combine::init;
use mcp_ui_upstream::session::app::AppSession;
use mcp_ui_wire::jsonrpc::{self, code};

/// `initialize`: every member's session opened at once, their results
/// united, the session sealed into the app's id.
pub(super) async fn initialize(
    gw: &Arc<Gateway>,
    app: &AppState,
    (headers, access): (&HeaderMap, &crate::oauth::resource_server::Access),
    body: Bytes,
    id: Value,
    hello: Hello,
    host: mcp_ui_overlay::host::HostKind,
) -> Response<Body> {
    let caller = access.digest();
    let mut session = AppSession {
        app: app.config.name.clone(),
        client: Some(crate::relay::pooled::new_client()),
        owner: crate::relay::context::owner_of(access),
        host: Some(host),
        started: mcp_ui_model::clock::unix_millis(),
        hello: Some(hello),
        failed: vec![false; app.config.members.len()],
    };
    let answers = ask_members(gw, app, headers, &session, caller, &body).await;
    let mut results = Vec::new();
    let mut problems = Vec::new();
    let mut refused = None;
    for (i, answer) in answers.into_iter().enumerate() {
        let m = &app.config.members[i];
        let why = match answer {
            None => "no such mount".to_owned(),
            Some(Err(why)) => why,
            Some(Ok(Ok(bytes))) => match result_of(&bytes) {
                Ok(result) => {
                    results.push((m.upstream.as_str(), result));
                    continue;
                }
                Err(why) => why,
            },
            // A member that wants the client to sign in: the client signs
            // in to the app (one token for every member), then initializes
            // again.
            Some(Ok(Err(f))) if oauth::is_refusal(&f) => {
                refused.get_or_insert(f);
                continue;
            }
            Some(Ok(Err(f))) => f.to_string(),
        };
        tracing::warn!(app = %app.config.name, member = %m.upstream, error = %why,
            "app member not initialized: its tools are unavailable in this session");
        problems.push(format!("{}: {why}", m.upstream));
        session.failed[i] = true;
    }
    if let Some(f) = refused {
        let prm = oauth::prm_url(&gw.oauth.passthrough, app, headers);
        return oauth::refusal(prm.as_deref(), f, raw(&id).as_deref());
    }
    let borrowed: Vec<(&str, &Value)> = results.iter().map(|(n, r)| (*n, r)).collect();
    let Some(result) = init::initialize(&app.config.name, &borrowed) else {
        let message = format!(
            "app `{}`: no member could be initialized ({})",
            app.config.name,
            problems.join("; ")
        );
        return reply::json(
            StatusCode::OK,
            jsonrpc::error_response(raw(&id).as_deref(), code::SERVER_ERROR, &message),
        );
    };
    let sid = session.seal(&gw.ids.key);
    let mut r = answer(&id, &result);
    if let Ok(v) = http::HeaderValue::from_str(&sid) {
        r.headers_mut().insert(SESSION_HEADER, v);
    }
    r
}

/// Every member's answer to `initialize`, asked at once, each within the
/// member timeout (`None`: no such mount).
async fn ask_members(
    gw: &Arc<Gateway>,
    app: &AppState,
    headers: &HeaderMap,
    session: &AppSession,
    caller: Option<u64>,
    body: &Bytes,
) -> Vec<Option<Result<Result<Bytes, Failure>, String>>> {
    let bound = gw.app_member_timeout();
    let asks = (0..app.config.members.len()).map(|i| {
        let member = member::of(gw, app, headers, session, i, caller);
        async move {
            match member {
                Some(mut m) => Some(
                    tokio::time::timeout(bound, m.initialize(body))
                        .await
                        .map_err(|_| silent(bound, "initialize")),
                ),
                None => None,
            }
        }
    });
    futures_util::future::join_all(asks).await
}
