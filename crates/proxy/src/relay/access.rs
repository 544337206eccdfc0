//! What a caller may reach of an endpoint that asks for tokens (`[auth]`):
//! each request judged by [`crate::oauth::resource_server::gate`] once read, and refused
//! with the challenge for that request.

use http::Response;
use serde_json::value::RawValue;

use super::context::Ctx;
use mcp_ui_model::reply::Body;
use mcp_ui_wire::jsonrpc::{self, Kind};

/// The answer refusing a request its caller may not make (see
/// [`crate::oauth::resource_server::gate`]), `None` when it may go on.
pub(crate) fn refused(
    cx: &Ctx<'_>,
    parsed: &jsonrpc::Body<'_>,
    overlays: &mcp_ui_overlay::overlay::OverlaySet,
) -> Option<Response<Body>> {
    let auth = cx.mount.config.auth.as_ref()?;
    let refusal = |r: &mcp_ui_identity::Rejection, id: Option<&RawValue>, in_band: bool| {
        let base = cx.gw.oauth.passthrough.base(cx.headers).unwrap_or_default();
        let metadata = crate::oauth::passthrough::prm_url(&base, &cx.mount.config.path);
        crate::oauth::passthrough::refusal_of(auth, &metadata, r, id, in_band)
    };
    let mount = overlays.mount(cx.upstream());
    let check = |m: &jsonrpc::Message<'_>| {
        if m.kind != Kind::Request {
            return Ok(());
        }
        let method = m.method.as_deref().unwrap_or_default();
        let view = jsonrpc::params_view(m.params);
        let tool = match method {
            "tools/call" => view.name.as_deref().and_then(|n| mount?.tool(n)),
            _ => None,
        };
        crate::oauth::resource_server::gate(&cx.access, method, tool, view.uri.as_deref())
    };
    match parsed {
        jsonrpc::Body::Single(m) => check(m).err().map(|r| {
            let in_band = m.method.as_deref() == Some("tools/call")
                && cx.mount.config.auth_challenge == mcp_ui_model::config::AuthChallenge::InBand;
            refusal(&r, m.id, in_band)
        }),
        jsonrpc::Body::Batch(items) => items
            .iter()
            .find_map(|(m, _)| check(m).err())
            .map(|r| refusal(&r, None, false)),
    }
}
