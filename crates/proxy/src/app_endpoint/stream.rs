//! The app's GET stream: what each member's upstream says to the session
//! on its own, merged, a member's requests to the client with their ids
//! tagged with the member ([`mcp_ui_rewrite::combine::ids`]).

use std::sync::Arc;

use bytes::Bytes;
use futures_util::StreamExt;

use super::member::{self, session_of};
use crate::apps::AppState;
use crate::gateway::Gateway;
use crate::relay::deliver;
use mcp_ui_model::outcome::Failure;
use mcp_ui_model::reply::Body;
use mcp_ui_rewrite::combine::ids;

/// A member's message on its way to the client: a request's id tagged with
/// the member, anything else as it is.
pub(crate) fn tagged(member: usize, message: Bytes) -> Bytes {
    match ids::tag_request(member, &message) {
        Some(tagged) => Bytes::from(tagged),
        None => message,
    }
}

/// The app's GET stream: every member's, merged.
pub async fn get(
    gw: &Arc<Gateway>,
    app: &AppState,
    headers: &http::HeaderMap,
    access: &crate::oauth::resource_server::Access,
) -> http::Response<Body> {
    let session = match session_of(gw, app, headers, access) {
        Ok(s) => s,
        Err(f) => return f.respond(None),
    };
    let mut boxes = Vec::new();
    for i in 0..app.config.members.len() {
        let Some(m) = member::of(gw, app, headers, &session, i, None) else {
            continue;
        };
        match m.mailbox() {
            Ok(mailbox) => boxes.push(
                futures_util::stream::unfold(mailbox, |mut mb| async move {
                    mb.rx.recv().await.map(|m| (m, mb))
                })
                .map(move |m| tagged(i, m))
                .boxed(),
            ),
            Err(f) => {
                tracing::debug!(app = %app.config.name, member = %app.member_name(i), error = %f, "member offers no stream");
            }
        }
    }
    if boxes.is_empty() {
        return Failure::MethodNotAllowed {
            allow: "POST, DELETE, OPTIONS",
            why: Some("no member of this app offers a stream"),
        }
        .respond(None);
    }
    // Ends with the client, the gateway's shutdown, or every member's.
    let merged = futures_util::stream::select_all(boxes);
    deliver::event_stream(&gw.shutdown, None, merged)
}
