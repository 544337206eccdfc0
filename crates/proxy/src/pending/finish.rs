//! The last step of a planned request: its response rewritten by the plan
//! (overlay metadata, shaped results) and any in-band OAuth challenge in a
//! tool result pointed at the gateway. Anything that does not apply leaves
//! the upstream's bytes as they were.

use std::sync::Arc;

use bytes::Bytes;
use http::header::{self, HeaderMap, HeaderValue};

use crate::oauth::passthrough::{self, AuthState, ResultTarget};
use crate::upstream_tools::UpstreamTools;
use mcp_ui_overlay::host::Target;
use mcp_ui_overlay::overlay::OverlaySet;
use mcp_ui_rewrite::bridge::{self, Answering};
use mcp_ui_rewrite::plan::{self, Rewrite};
use mcp_ui_upstream::telemetry::{Kind, Parent, Span};

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
    pub(crate) auth: Arc<AuthState>,
    /// The mount's path and its upstream's origin.
    pub(crate) target: Arc<ResultTarget>,
    /// The request's `Host`, the gateway's base URL without `public_url`.
    pub(crate) host: Option<HeaderValue>,
}

impl ResultChallenges {
    fn rewrite(&self, response: &[u8]) -> Option<Bytes> {
        if !passthrough::may_carry_challenge(response) {
            return None;
        }
        let mut headers = HeaderMap::new();
        if let Some(host) = &self.host {
            headers.insert(header::HOST, host.clone());
        }
        let base = self.auth.base(&headers)?;
        let prm = passthrough::prm_url(&base, &self.target.path);
        passthrough::rewrite_result_challenges(response, &prm, &self.target.origin)
    }
}
