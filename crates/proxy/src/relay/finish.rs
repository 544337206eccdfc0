//! The last step of a planned request: its response rewritten by the plan
//! (overlay metadata, shaped results) and any in-band OAuth challenge in a
//! tool result pointed at the gateway. Anything that does not apply leaves
//! the upstream's bytes as they were.

use std::sync::Arc;

use bytes::Bytes;
use http::header::{self, HeaderMap, HeaderValue};

use crate::gateway::Gateway;
use crate::oauth::passthrough;
use crate::upstream_tools::UpstreamTools;
use mcp_ui_model::config::Transport;
use mcp_ui_overlay::host::Target;
use mcp_ui_overlay::overlay::OverlaySet;
use mcp_ui_rewrite::bridge::{self, Answering};
use mcp_ui_rewrite::plan::{self, Rewrite};
use mcp_ui_upstream::telemetry::{Kind, Parent, Span};

/// What finishes the response, when the plan rewrites it or it may carry an
/// in-band challenge (a tool result from a non-stdio upstream).
pub(super) fn finisher(
    cx: &super::context::Ctx<'_>,
    tool_call: bool,
    overlays: Arc<OverlaySet>,
    plan: plan::Plan,
    target: Target,
    revision: Option<Answering>,
) -> Option<Finisher> {
    let challenges =
        (tool_call && !matches!(cx.mount.config.transport, Transport::Stdio(_))).then(|| {
            ResultChallenges {
                gateway: cx.gw.clone(),
                mount: cx.mount.index,
                host: cx.headers.get(http::header::HOST).cloned(),
            }
        });
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

/// Rewrites the response to one planned request.
#[derive(Clone)]
pub struct Finisher {
    pub overlays: Arc<OverlaySet>,
    pub mount: String,
    pub rewrite: Option<Rewrite>,
    /// The host the answer is for (widget resources differ by host).
    pub target: Target,
    /// For challenges inside a tool result.
    pub challenges: Option<ResultChallenges>,
    /// Where `tools/list` pages record the upstream's tool names.
    pub upstream_tools: Arc<UpstreamTools>,
    /// The request's server span, when traced: a rewrite is its child.
    pub trace: Option<Parent>,
    /// A request of the 2026-07-28 revision: its answer in that form.
    pub revision: Option<Answering>,
}

impl Finisher {
    /// Whether a response stays as it is (no rewrite is planned and it
    /// carries no in-band challenge), known without parsing it.
    pub fn keeps(&self, response: &[u8]) -> bool {
        self.rewrite.is_none()
            && self.revision.is_none()
            && !(self.challenges.is_some() && passthrough::may_carry_challenge(response))
    }

    /// The rewritten response, or `None` to keep the upstream's.
    pub fn finish(&self, response: &[u8]) -> Option<Bytes> {
        let mut body = None;
        if let Some(rewrite) = &self.rewrite {
            let _span = self.trace.as_ref().map(|p| rewrite_span(p, rewrite));
            let known = |tool: &str| self.upstream_tools.has(&self.mount, tool);
            let mut applied = plan::apply(
                &self.overlays,
                &self.mount,
                rewrite,
                response,
                &self.target,
                &known,
            );
            if let (Some(names), Rewrite::ToolsListPage { first }) =
                (applied.upstream_tools.take(), rewrite)
            {
                self.upstream_tools.record(&self.mount, *first, names);
                if applied.last_page {
                    self.upstream_tools.compare(&self.mount, &self.overlays);
                }
            }
            for warning in &applied.warnings {
                tracing::warn!(upstream = %self.mount, rewrite = ?rewrite, "{warning}");
            }
            body = applied.body;
        }
        if let Some(c) = &self.challenges {
            let current = body.as_deref().unwrap_or(response);
            if let Some(b) = c.rewrite(current) {
                body = Some(b);
            }
        }
        if let Some(a) = &self.revision {
            let current = body.as_deref().unwrap_or(response);
            if let Some(b) = bridge::answer(a, current) {
                body = Some(Bytes::from(b));
            }
        }
        body
    }

    /// The HTTP status of a JSON answer: a request of the 2026-07-28
    /// revision gets its error's, as the revision maps them; 200 otherwise.
    pub fn status(finisher: Option<&Finisher>, response: &[u8]) -> http::StatusCode {
        match finisher.is_some_and(|f| f.revision.is_some()) {
            true => http::StatusCode::from_u16(bridge::status_of(response))
                .unwrap_or(http::StatusCode::OK),
            false => http::StatusCode::OK,
        }
    }

    /// `response`, finished (the upstream's bytes when nothing applies).
    pub fn apply(finisher: Option<&Finisher>, response: Bytes) -> Bytes {
        finisher
            .and_then(|f| f.finish(&response))
            .unwrap_or(response)
    }
}

/// The span of a rewrite, ended when dropped.
fn rewrite_span(parent: &Parent, rewrite: &Rewrite) -> Span {
    let method = match rewrite {
        Rewrite::Initialize => "initialize",
        Rewrite::Discover => "server/discover",
        Rewrite::ResourcesList => "resources/list",
        Rewrite::TemplatesList => "resources/templates/list",
        Rewrite::ToolsListPage { .. } => "tools/list",
        Rewrite::ResourceRead(_) => "resources/read",
        Rewrite::ToolCall(_) => "tools/call",
    };
    let mut span = parent.child(format!("rewrite {method}"), Kind::Internal);
    span.set("mcp.method.name", method);
    match rewrite {
        Rewrite::ToolCall(tool) => span.set("gen_ai.tool.name", tool.clone()),
        Rewrite::ResourceRead(uri) => span.set("mcp.resource.uri", uri.clone()),
        _ => {}
    }
    span
}

/// What rewriting a tool result's in-band challenges needs: the metadata URL
/// and the upstream origin are only worked out for a result that has one.
#[derive(Clone)]
pub struct ResultChallenges {
    pub gateway: Arc<Gateway>,
    pub mount: usize,
    /// The request's `Host`, the gateway's base URL without `public_url`.
    pub host: Option<HeaderValue>,
}

impl ResultChallenges {
    fn rewrite(&self, response: &[u8]) -> Option<Bytes> {
        if !passthrough::may_carry_challenge(response) {
            return None;
        }
        let mount = &self.gateway.mounts[self.mount].config;
        let (Transport::Http { url } | Transport::Sse { url }) = &mount.transport else {
            return None;
        };
        let mut headers = HeaderMap::new();
        if let Some(host) = &self.host {
            headers.insert(header::HOST, host.clone());
        }
        let base = self.gateway.auth.base(&headers)?;
        let prm = passthrough::prm_url(&base, &mount.path);
        passthrough::rewrite_result_challenges(response, &prm, &passthrough::origin_of(url))
    }
}
