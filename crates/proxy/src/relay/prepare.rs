//! What the overlays in force plan for one message (forward it, answer it
//! here, or rewrite its answer), and what finishes the upstream's answer:
//! the planned rewrite, in-band challenges pointed at the gateway, the
//! revision's form.

use std::sync::Arc;

use bytes::Bytes;

use super::context::Ctx;
use crate::pending::finish::{Finisher, ResultChallenges};
use mcp_ui_overlay::host::Target;
use mcp_ui_overlay::overlay::OverlaySet;
use mcp_ui_rewrite::bridge::Answering;
use mcp_ui_rewrite::plan::{self, Plan};
use mcp_ui_wire::jsonrpc::{self, Kind};

/// What the overlay snapshot `overlays` plans for one message.
pub(super) fn plan_one(
    cx: &Ctx<'_>,
    overlays: &mcp_ui_overlay::overlay::OverlaySet,
    m: &jsonrpc::Message<'_>,
    target: &mcp_ui_overlay::host::Target,
) -> Plan {
    let name = cx.upstream();
    plan::plan(overlays, name, m, target, &|tool| {
        cx.gw.upstream_tools.has(name, tool)
    })
}

/// One message planned as the mount's own path plans it: the answer the
/// gateway writes itself (`Err`), or what finishes the upstream's.
pub(crate) fn prepare(cx: &Ctx<'_>, m: &jsonrpc::Message<'_>) -> Result<Option<Finisher>, Bytes> {
    let overlays = cx.gw.live.load();
    let target = cx.target();
    match plan_one(cx, &overlays, m, &target) {
        Plan::Answer(answer) => Err(answer),
        plan => {
            let call = m.kind == Kind::Request && m.method.as_deref() == Some("tools/call");
            Ok(finisher(cx, call, overlays, plan, target, None))
        }
    }
}

/// What finishes the response, when the plan rewrites it or it may carry an
/// in-band challenge (a tool result from a non-stdio upstream).
pub(super) fn finisher(
    cx: &Ctx<'_>,
    tool_call: bool,
    overlays: Arc<OverlaySet>,
    plan: plan::Plan,
    target: Target,
    revision: Option<Answering>,
) -> Option<Finisher> {
    // A stdio upstream has no target: its results carry no challenge.
    let challenges = match (tool_call, &cx.mount.result_target) {
        (true, Some(target)) => Some(ResultChallenges {
            auth: cx.gw.oauth.passthrough.clone(),
            target: target.clone(),
            host: cx.headers.get(http::header::HOST).cloned(),
        }),
        _ => None,
    };
    let rewrite = match plan {
        plan::Plan::Rewrite(rewrite) => Some(rewrite),
        _ => None,
    };
    (rewrite.is_some() || challenges.is_some() || revision.is_some()).then(|| Finisher {
        overlays,
        mount: cx.upstream().to_owned(),
        rewrite,
        target,
        challenges,
        upstream_tools: cx.gw.upstream_tools.clone(),
        trace: cx.trace.as_ref().and_then(|t| t.parent.clone()),
        revision,
    })
}
