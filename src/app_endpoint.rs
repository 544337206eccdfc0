//! An app's MCP endpoint (`[[app]]`): one endpoint over several mounts. Each
//! message goes to its members through their own mounts ([`member`]), so
//! their overlays, sessions and limits apply exactly as on their own paths;
//! the pure rules that unite their answers are in [`crate::combine`].
//!
//! - `initialize` opens a session with every member at once and seals them
//!   into the one id the client gets ([`crate::session::app`]); a member
//!   that fails is left out of the session, its tools answering an error
//!   that names it;
//! - listings are the members' pages one after the other, the cursor
//!   carrying which member and its own cursor;
//! - `tools/call` and `prompts/get` go to the member owning the name
//!   ([`crate::combine::names`]), `resources/*` to the member that listed
//!   the URI, else to each member in turn until one has it;
//! - notifications go to every member; the client's answers to members'
//!   requests go back to the member whose request it was
//!   ([`crate::combine::ids`]); the GET stream merges the members'
//!   ([`stream`]);
//! - a member's authorization challenge reaches the client pointing at the
//!   app's own protected-resource metadata, which the app serves ([`oauth`]).

pub mod member;
pub mod oauth;
pub mod post;
pub mod stream;

use std::sync::Arc;

use http::header::HeaderMap;
use http::{Method, Request, Response};
use hyper::body::Incoming;

use crate::combine::AppState;
use crate::endpoint::{accepts, post_body};
use crate::gateway::Gateway;
use crate::middleware::cors;
use crate::outcome::Failure;
use crate::relay::context::SESSION_HEADER;
use crate::reply::Body;
use crate::session::app::MemberSession;
use member::session_of;

/// One request to `app`'s endpoint.
pub async fn serve(
    gw: &Arc<Gateway>,
    app: &Arc<AppState>,
    req: Request<Incoming>,
) -> Response<Body> {
    match *req.method() {
        Method::POST => match post_body(gw, req).await {
            Ok((parts, bytes)) => post::post(gw, app, &parts.headers, bytes).await,
            Err(refused) => refused,
        },
        Method::GET if !accepts(req.headers(), "text/event-stream") => {
            Failure::NotAcceptable("text/event-stream").respond(None)
        }
        Method::GET => stream::get(gw, app, req.headers()).await,
        Method::DELETE => delete(gw, app, req.headers()).await,
        Method::OPTIONS => cors::preflight(),
        _ => Failure::MethodNotAllowed {
            allow: "GET, POST, DELETE, OPTIONS",
            why: None,
        }
        .respond(None),
    }
}

/// The end of a session: each member's ends.
async fn delete(gw: &Arc<Gateway>, app: &AppState, headers: &HeaderMap) -> Response<Body> {
    let session = match session_of(gw, app, headers) {
        Ok(s) if headers.contains_key(SESSION_HEADER) => s,
        Ok(_) => {
            return Failure::MethodNotAllowed {
                allow: "GET, POST, OPTIONS",
                why: Some("DELETE needs a session"),
            }
            .respond(None);
        }
        Err(f) => return f.respond(None),
    };
    for (m, s) in app.config.members.iter().zip(&session.members) {
        if let (MemberSession::Id(_), Some(mount)) = (s, gw.mounts.get(m.mount)) {
            let h = member::headers_for(headers, s, None);
            let _ = crate::relay::bodyless_parts(gw, mount, &Method::DELETE, &h).await;
        }
    }
    crate::reply::status(http::StatusCode::OK)
}
