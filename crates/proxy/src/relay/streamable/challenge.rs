//! The in-band form of an upstream's authorization challenge: a tool call
//! the upstream refused for its credentials (401 or 403) answered with a
//! tool result that points at the gateway's protected-resource metadata,
//! for hosts that show a tool's result but not an HTTP challenge.

use http::{Response, StatusCode};
use serde_json::value::RawValue;

use crate::relay::context::{Ctx, SESSION_HEADER};
use mcp_ui_model::config::AuthChallenge;
use mcp_ui_model::reply::{self, Body};

/// The answer to a `tools/call` (`tool_call`) the upstream refused with
/// `status`, when the mount answers challenges in band; `head` is the
/// refusal's head as the client would get it (its challenge and session
/// id).
pub(super) fn in_band(
    cx: &Ctx<'_>,
    tool_call: bool,
    status: StatusCode,
    id: Option<&RawValue>,
    head: &Response<()>,
) -> Option<Response<Body>> {
    if tool_call
        && matches!(status, StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN)
        && cx.mount.config.auth_challenge == AuthChallenge::InBand
        && let (Some(id), Some(base)) = (id, cx.gw.oauth.passthrough.base(cx.headers))
    {
        let prm = crate::oauth::passthrough::prm_url(&base, &cx.mount.config.path);
        let answer = crate::oauth::passthrough::in_band_result(id, status, head.headers(), &prm);
        let mut r = reply::json(StatusCode::OK, answer);
        if let Some(sid) = head.headers().get(SESSION_HEADER) {
            r.headers_mut().insert(SESSION_HEADER, sid.clone());
        }
        return Some(r);
    }
    None
}
