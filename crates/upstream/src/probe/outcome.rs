//! What a probe yields: the upstream's listing, or an error that names the
//! upstream.

use serde_json::Value;

use mcp_ui_model::outcome::{Failure, UpstreamError};

/// What an upstream said about itself and its tools.
#[derive(Debug, Clone, PartialEq)]
pub struct Listing {
    /// `serverInfo` of the `initialize` result, as sent.
    pub server_info: Option<Value>,
    /// The protocol revision the upstream chose.
    pub protocol_version: String,
    /// Every tool of every page, as sent, in order.
    pub tools: Vec<Value>,
}

impl Listing {
    /// The tool called `name`.
    pub fn tool(&self, name: &str) -> Option<&Value> {
        self.tools
            .iter()
            .find(|t| t.get("name").and_then(Value::as_str) == Some(name))
    }

    /// Every tool's name, in order (tools without a string name are skipped).
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tools
            .iter()
            .filter_map(|t| t.get("name").and_then(Value::as_str))
    }

    /// `serverInfo` as `name version`, for messages.
    pub fn server(&self) -> Option<String> {
        let info = self.server_info.as_ref()?;
        let name = info.get("name").and_then(Value::as_str)?;
        Some(match info.get("version").and_then(Value::as_str) {
            Some(version) => format!("{name} {version}"),
            None => name.to_owned(),
        })
    }
}

/// Why the tools of an upstream could not be listed. Every message names the
/// upstream.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    #[error(transparent)]
    Upstream(#[from] UpstreamError),
    #[error("upstream '{upstream}' answered `{method}` with error {code}: {message}")]
    Rpc {
        upstream: String,
        method: String,
        code: i64,
        message: String,
    },
    /// The session ended under the request (a stdio child that exited, a
    /// dropped SSE stream); the message says how, naming the upstream.
    #[error("{message}")]
    Ended { message: String },
    /// An HTTP upstream wants a token (401) or a better one (403): it is
    /// up, the probe just has none.
    #[error("upstream '{upstream}' sent an invalid reply: {detail}")]
    Unauthorized { upstream: String, detail: String },
}

impl ProbeError {
    /// Whether the upstream answered, refusing the probe for authorization.
    pub fn requires_authorization(&self) -> bool {
        matches!(self, ProbeError::Unauthorized { .. })
    }
}

impl From<Failure> for ProbeError {
    fn from(e: Failure) -> Self {
        ProbeError::Ended {
            message: e.to_string(),
        }
    }
}

pub(super) fn protocol(upstream: &str, detail: String) -> ProbeError {
    ProbeError::Upstream(UpstreamError::Protocol {
        upstream: upstream.to_owned(),
        detail,
    })
}
