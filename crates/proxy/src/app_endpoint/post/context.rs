//! One exchange with an app: the request's session with the app, its
//! sessions with the members, and the forms of the app's own answers.

use std::sync::Arc;

use bytes::Bytes;
use http::header::HeaderMap;
use http::{Response, StatusCode};
use serde_json::{Value, json};

use crate::app_endpoint::{member, oauth};
use crate::apps::AppState;
use crate::gateway::Gateway;
use crate::relay::member::Member;
use mcp_ui_model::outcome::Failure;
use mcp_ui_model::reply::{self, Body};
use mcp_ui_upstream::session::app::AppSession;
use mcp_ui_wire::jsonrpc::{self, code};

/// One exchange with an app.
pub(super) struct Exchange<'a> {
    pub(super) gw: &'a Arc<Gateway>,
    pub(super) app: &'a AppState,
    pub(super) headers: &'a HeaderMap,
    pub(super) session: AppSession,
    /// The request's id, as JSON.
    pub(super) id: Value,
    /// A request of the 2026-07-28 revision: what answering it needs.
    pub(super) revision: Option<AppRevision>,
    /// The caller the gateway verified, as [`crate::relay::context::Ctx::caller`].
    pub(super) caller: Option<u64>,
    /// Who the caller is, as the app admitted it.
    pub(super) access: crate::oauth::resource_server::Access,
}

/// A request of the revision, as the app holds it while answering.
#[derive(Debug, Clone)]
pub(super) struct AppRevision {
    /// The capabilities the client declared.
    pub caps: mcp_ui_wire::protocol::Caps,
    /// The request's `_meta`, which the app's own requests to its members
    /// carry (to learn their names).
    pub meta: Value,
}

impl AppRevision {
    /// The revision's `_meta` of a request's params.
    pub fn of(caps: mcp_ui_wire::protocol::Caps, params: &Value) -> AppRevision {
        AppRevision {
            caps,
            meta: params.get("_meta").cloned().unwrap_or_else(|| json!({})),
        }
    }
}

impl<'a> Exchange<'a> {
    /// The session with member `i`, or why there is none.
    pub(super) fn member(&self, i: usize) -> Result<Member<'a>, String> {
        member::of(self.gw, self.app, self.headers, &self.session, i, self.caller).ok_or_else(|| {
            format!(
                "app `{}`: member `{}` is not available in this session (it could not be initialized when the session began; initialize again to retry)",
                self.app.config.name,
                self.app.member_name(i)
            )
        })
    }

    /// A member's failure, as the app answers it: a refusal for
    /// authorization relayed (pointed at the app's metadata), anything else
    /// an error naming the member.
    pub(super) fn member_failed(&self, i: usize, f: Failure) -> Response<Body> {
        if oauth::is_refusal(&f) {
            let prm = oauth::prm_url(&self.gw.oauth.passthrough, self.app, self.headers);
            return oauth::refusal(prm.as_deref(), f, raw(&self.id).as_deref());
        }
        let message = format!(
            "app `{}`: member `{}` failed: {f}",
            self.app.config.name,
            self.app.member_name(i),
        );
        self.error(code::SERVER_ERROR, &message)
    }

    /// The answer refusing `method` (a call of member `tool.0`'s tool
    /// `tool.1`, or a resource `uri`) to this caller, `None` when it may go
    /// on (see [`crate::oauth::resource_server::gate`]).
    pub(super) fn gate(
        &self,
        method: &str,
        tool: Option<(usize, &str)>,
        uri: Option<&str>,
    ) -> Option<Response<Body>> {
        let auth = self.app.config.auth.as_ref()?;
        let overlays = self.gw.live.load();
        let overlay = tool.and_then(|(i, own)| overlays.mount(self.app.member_name(i))?.tool(own));
        let refused =
            crate::oauth::resource_server::gate(&self.access, method, overlay, uri).err()?;
        let base = self
            .gw
            .oauth
            .passthrough
            .base(self.headers)
            .unwrap_or_default();
        let metadata = crate::oauth::passthrough::prm_url(&base, &self.app.config.path);
        let in_band = method == "tools/call" && self.app.config.auth_challenge == "in-band";
        Some(crate::oauth::passthrough::refusal_of(
            auth,
            &metadata,
            &refused,
            raw(&self.id).as_deref(),
            in_band,
        ))
    }

    pub(super) fn error(&self, code: i64, message: &str) -> Response<Body> {
        // The revision answers errors with their HTTP status.
        let status = match self.revision {
            Some(_) => StatusCode::from_u16(mcp_ui_rewrite::bridge::check::http_status(code))
                .unwrap_or(StatusCode::OK),
            None => StatusCode::OK,
        };
        reply::json(
            status,
            jsonrpc::error_response(raw(&self.id).as_deref(), code, message),
        )
    }
}

/// Why a member silent for `bound` on `what` was left out.
pub(super) fn silent(bound: std::time::Duration, what: &str) -> String {
    format!(
        "it did not answer {what} within {} s (limits.app_member_timeout_secs)",
        bound.as_secs()
    )
}

/// A JSON-RPC result for `id`.
pub(super) fn answer(id: &Value, result: &Value) -> Response<Body> {
    let body = json!({"jsonrpc": "2.0", "id": id, "result": result});
    reply::json(StatusCode::OK, Bytes::from(body.to_string()))
}

pub(super) fn raw(id: &Value) -> Option<Box<serde_json::value::RawValue>> {
    (!id.is_null())
        .then(|| serde_json::value::RawValue::from_string(id.to_string()).ok())
        .flatten()
}

/// The message `body` with `params` in place of its own.
pub(super) fn with_params(body: &Bytes, params: &Value) -> Bytes {
    match serde_json::from_slice::<Value>(body) {
        Ok(mut v) => {
            v["params"] = params.clone();
            Bytes::from(v.to_string())
        }
        Err(_) => body.clone(),
    }
}
