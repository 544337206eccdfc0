//! An app's MCP endpoint (`[[app]]`): one endpoint over several mounts. Each
//! message goes to its members through their mounts' typed session
//! interface ([`crate::relay::member`], the one the mounts' own sessions
//! that own no connection go through), so their overlays, connections,
//! limits and metrics apply exactly as on their own paths, with no HTTP
//! between the app and its members; the pure rules that unite their answers
//! are in [`mcp_ui_rewrite::combine`]; what an app has learnt from listings is its
//! state ([`crate::apps`]), and its page cursors are sealed by [`cursor`].
//!
//! - `initialize` opens a session with every member at once, answered as
//!   each mount answers its own clients' (from its connection's handshake),
//!   and seals the client's number and what it said into the one id the
//!   client gets ([`mcp_ui_upstream::session::app`]); a member that fails is left out
//!   of the session, its tools answering an error that names it;
//! - listings are the members' pages one after the other, the cursor
//!   carrying which member and its own cursor;
//! - `tools/call` and `prompts/get` go to the member owning the name
//!   ([`mcp_ui_rewrite::combine::names`]), `resources/*` to the member that listed
//!   the URI, else to each member in turn until one has it;
//! - notifications go to every member; the client's answers to members'
//!   requests go back to the member whose request it was
//!   ([`mcp_ui_rewrite::combine::ids`]); the GET stream merges the members'
//!   ([`stream`]);
//! - a member's authorization challenge reaches the client pointing at the
//!   app's own protected-resource metadata, which the app serves ([`oauth`]).

pub mod cursor;
pub mod member;
pub mod oauth;
pub mod post;
pub mod stream;

use std::sync::Arc;

use http::header::HeaderMap;
use http::{Method, Request, Response};
use hyper::body::Incoming;

use crate::apps::AppState;
use crate::endpoint::{accepts, post_body};
use crate::gateway::Gateway;
use crate::middleware::cors;
use mcp_ui_model::outcome::Failure;
use mcp_ui_model::reply::Body;
use member::session_of;

/// One request to `app`'s endpoint.
pub async fn serve(
    gw: &Arc<Gateway>,
    app: &Arc<AppState>,
    mut req: Request<Incoming>,
) -> Response<Body> {
    if let Some(auth) = &app.config.auth
        && req.method() != Method::OPTIONS
        && let Err(refused) =
            crate::endpoint::admit(&gw.oauth, auth, &app.config.path, &mut req).await
    {
        return *refused;
    }
    match *req.method() {
        Method::POST => match post_body(&gw.limits, &gw.oauth.resource_server, req).await {
            Ok((parts, bytes)) => {
                let access = parts
                    .extensions
                    .get::<crate::oauth::resource_server::Access>()
                    .cloned()
                    .unwrap_or_default();
                post::post(gw, app, &parts.headers, access, bytes).await
            }
            Err(refused) => refused,
        },
        Method::GET if !accepts(req.headers(), "text/event-stream") => {
            Failure::NotAcceptable("text/event-stream").respond(None)
        }
        Method::GET => stream::get(gw, app, req.headers(), &access_of(&req)).await,
        Method::DELETE => delete(gw, app, req.headers(), &access_of(&req)).await,
        Method::OPTIONS => cors::preflight(),
        _ => Failure::MethodNotAllowed {
            allow: "GET, POST, DELETE, OPTIONS",
            why: None,
        }
        .respond(None),
    }
}

/// Who the request is, as the app admitted it.
fn access_of(req: &Request<Incoming>) -> crate::oauth::resource_server::Access {
    req.extensions()
        .get::<crate::oauth::resource_server::Access>()
        .cloned()
        .unwrap_or_default()
}

/// The end of a session: each member's ends (its own connections with it),
/// and the app's id is refused from then on.
async fn delete(
    gw: &Arc<Gateway>,
    app: &AppState,
    headers: &HeaderMap,
    access: &crate::oauth::resource_server::Access,
) -> Response<Body> {
    let session = match session_of(gw, app, headers, access) {
        Ok(s) if s.client.is_some() => s,
        Ok(_) => {
            return Failure::MethodNotAllowed {
                allow: "GET, POST, OPTIONS",
                why: Some("DELETE needs a session"),
            }
            .respond(None);
        }
        Err(f) => return f.respond(None),
    };
    for i in 0..app.config.members.len() {
        if let Some(m) = member::of(gw, app, headers, &session, i, None)
            && let Err(f) = m.end()
        {
            tracing::debug!(app = %app.config.name, member = %app.member_name(i), error = %f, "a member's session did not end");
        }
    }
    if let Some(lasted) = session.age() {
        let version = headers
            .get(crate::relay::context::PROTOCOL_HEADER)
            .and_then(|v| v.to_str().ok());
        gw.metrics
            .record_session(version, crate::metrics::SessionEnd::Deleted, lasted);
    }
    mcp_ui_model::reply::status(http::StatusCode::OK)
}
