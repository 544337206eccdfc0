//! Which MCP host a client is, for the one answer that differs by host: a
//! widget's sandbox domain (`_meta.ui.domain`), whose form is host-specific.
//! ChatGPT wants an origin unique to the app; Claude a host name derived
//! from the exact endpoint URL it connects to. Pure: the relay hands over
//! what the request says, this module decides.
//!
//! A host says who it is at `initialize` (`clientInfo.name`, with the HTTP
//! `User-Agent` as a fallback); the session id the gateway seals then
//! carries the answer (`session::Token::host`), so every replica knows it.
//! Sessionless clients (protocol 2026-07-28) name themselves in each
//! request's `_meta`, and are judged request by request.

use std::borrow::Cow;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::value::RawValue;
use sha2::{Digest, Sha256};

/// The hosts whose widget domain differs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum HostKind {
    /// ChatGPT (`clientInfo.name` `openai-mcp`).
    ChatGpt,
    /// Claude (`clientInfo.name` `claude-ai`, `User-Agent: Claude-User`).
    Claude,
    /// Any other host, or one that did not say.
    #[default]
    Other,
}

impl HostKind {
    /// Every kind, in a fixed order.
    pub const ALL: [HostKind; 3] = [HostKind::ChatGpt, HostKind::Claude, HostKind::Other];

    /// The kind a client name (`clientInfo.name`) and `User-Agent` say: the
    /// name when it is a known host's, else the `User-Agent`.
    pub(crate) fn of_client(name: Option<&str>, user_agent: Option<&str>) -> HostKind {
        let name = name.map(str::to_ascii_lowercase).unwrap_or_default();
        if name.starts_with("openai") || name.starts_with("chatgpt") {
            return HostKind::ChatGpt;
        }
        if name.starts_with("claude") {
            return HostKind::Claude;
        }
        let agent = user_agent.map(str::to_ascii_lowercase).unwrap_or_default();
        if agent.starts_with("claude-user") {
            return HostKind::Claude;
        }
        HostKind::Other
    }

    /// Its key in a widget manifest's `domain` table, and in logs.
    pub fn key(self) -> &'static str {
        match self {
            HostKind::ChatGpt => "chatgpt",
            HostKind::Claude => "claude",
            HostKind::Other => "other",
        }
    }

    /// Its byte in a sealed session id.
    pub fn code(self) -> u8 {
        match self {
            HostKind::Other => 0,
            HostKind::ChatGpt => 1,
            HostKind::Claude => 2,
        }
    }

    /// The kind a sealed byte names; a byte this build does not know (one a
    /// newer gateway wrote) reads as [`HostKind::Other`].
    pub fn from_code(code: u8) -> HostKind {
        match code {
            1 => HostKind::ChatGpt,
            2 => HostKind::Claude,
            _ => HostKind::Other,
        }
    }
}

/// Whether the answer to `method` can depend on the host: only those
/// requests are read for a client name.
pub fn matters(method: Option<&str>) -> bool {
    matches!(
        method,
        Some("initialize" | "resources/read" | "resources/list")
    )
}

/// The host a request comes from. `session` is what its session id says
/// (`None`: no session, or an id sealed before ids carried the host). An
/// `initialize` says it itself; a request of a session is the session's;
/// any other is judged by the client name in its `_meta` (2026-07-28), then
/// by `user_agent`. Only requests whose answer can depend on the host are
/// read ([`matters`]); the others are [`HostKind::Other`] unless the
/// session says more.
pub fn detect(
    session: Option<HostKind>,
    method: Option<&str>,
    params: Option<&RawValue>,
    user_agent: Option<&str>,
) -> HostKind {
    let initialize = method == Some("initialize");
    if !initialize && let Some(kind) = session {
        return kind;
    }
    if !matters(method) {
        return HostKind::Other;
    }
    let name = params.and_then(|p| client_name(p, initialize));
    HostKind::of_client(name.as_deref(), user_agent)
}

#[derive(Deserialize)]
struct Params<'a> {
    #[serde(rename = "clientInfo", borrow)]
    client_info: Option<ClientInfo<'a>>,
    #[serde(rename = "_meta", borrow)]
    meta: Option<Meta<'a>>,
}

#[derive(Deserialize)]
struct Meta<'a> {
    #[serde(rename = "io.modelcontextprotocol/clientInfo", borrow)]
    client_info: Option<ClientInfo<'a>>,
}

#[derive(Deserialize)]
struct ClientInfo<'a> {
    #[serde(borrow)]
    name: Option<Cow<'a, str>>,
}

/// `params.clientInfo.name` of an `initialize`, else
/// `params._meta["io.modelcontextprotocol/clientInfo"].name`.
fn client_name(params: &RawValue, initialize: bool) -> Option<Cow<'_, str>> {
    let p: Params<'_> = serde_json::from_str(params.get()).ok()?;
    let top = p.client_info.filter(|_| initialize).and_then(|c| c.name);
    top.or_else(|| p.meta?.client_info?.name)
}

/// The domain of the suffix Claude serves widget sandboxes under.
pub(crate) const CLAUDE_SANDBOX_DOMAIN: &str = "claudemcpcontent.com";

/// Claude's widget domain for an MCP endpoint: the first 32 hex digits of
/// the SHA-256 of the exact URL the host connects to, under
/// [`CLAUDE_SANDBOX_DOMAIN`]. A trailing slash, another path or another
/// scheme give another domain.
pub fn claude_domain(endpoint_url: &str) -> String {
    format!("{}.{CLAUDE_SANDBOX_DOMAIN}", endpoint_hash(endpoint_url))
}

/// The suffix ChatGPT serves widget sandboxes under.
pub(crate) const CHATGPT_SANDBOX_DOMAIN: &str = "web-sandbox.oaiusercontent.com";

/// The first 32 hex digits of the SHA-256 of `endpoint_url`, as both hosts
/// derive a widget's sandbox from the exact URL they connect to.
fn endpoint_hash(endpoint_url: &str) -> String {
    let digest = hex::encode(Sha256::digest(endpoint_url.as_bytes()));
    digest[..32].to_owned()
}

/// The origins the hosts render an endpoint's widgets at, from the exact
/// URL the host connects to: ChatGPT's (its "widget origin migration",
/// from 2026-12-15; the declared `domain` stays for "open in app" and
/// links) and Claude's. An API a widget calls must allow both in its CORS
/// and `frame-ancestors`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct WidgetOrigins {
    /// The endpoint URL they are derived from.
    pub endpoint: String,
    pub chatgpt: String,
    pub claude: String,
}

impl WidgetOrigins {
    pub fn of(endpoint_url: &str) -> WidgetOrigins {
        let hash = endpoint_hash(endpoint_url);
        WidgetOrigins {
            endpoint: endpoint_url.to_owned(),
            chatgpt: format!("https://mcp-endpoint-{hash}.{CHATGPT_SANDBOX_DOMAIN}"),
            claude: format!("https://{hash}.{CLAUDE_SANDBOX_DOMAIN}"),
        }
    }

    /// For the endpoint at `path` behind `public_url` (`None` without one:
    /// the URL hosts connect to is not known).
    pub fn behind(public_url: Option<&str>, path: &str) -> Option<WidgetOrigins> {
        let base = public_url?.trim_end_matches('/');
        Some(Self::of(&format!("{base}{path}")))
    }

    /// One line saying them, for logs and `check`.
    pub fn line(&self) -> String {
        format!(
            "Widget origins of {}: ChatGPT {}, Claude {} (allow both in the CORS and frame-ancestors of the APIs the widgets call)",
            self.endpoint, self.chatgpt, self.claude
        )
    }
}

/// Whom an answer is written for: the host kind, and the domain derived for
/// Claude from the mount's public endpoint URL (worked out once, when a
/// public URL is configured).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Target {
    pub kind: HostKind,
    pub claude_domain: Option<Arc<str>>,
}

impl Target {
    pub fn new(kind: HostKind, claude_domain: Option<Arc<str>>) -> Self {
        Target {
            kind,
            claude_domain,
        }
    }

    /// The derived domain, for a Claude target only.
    pub(crate) fn derived_domain(&self) -> Option<&str> {
        match self.kind {
            HostKind::Claude => self.claude_domain.as_deref(),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(json: &str) -> Box<RawValue> {
        RawValue::from_string(json.to_owned()).unwrap()
    }

    #[test]
    fn the_derived_domain_hashes_the_exact_url() {
        // python3 -c 'import hashlib; print(hashlib.sha256(b"https://gw.example.com/mcp").hexdigest()[:32])'
        assert_eq!(
            claude_domain("https://gw.example.com/mcp"),
            "b1e0d44df330fd98977e615855c0b650.claudemcpcontent.com"
        );
        // The same with a trailing slash.
        assert_eq!(
            claude_domain("https://gw.example.com/mcp/"),
            "bf0b755bea3613fd53a599acafa6eee4.claudemcpcontent.com"
        );
    }

    /// The example of OpenAI's "widget origin migration" guide and of
    /// Claude's MCP Apps documentation: the same hash of the exact URL.
    #[test]
    fn widget_origins_hash_the_exact_endpoint_url() {
        let o = WidgetOrigins::of("https://example.com/mcp");
        assert_eq!(
            o.chatgpt,
            "https://mcp-endpoint-c3d80a4ed901ee05b21755a88273b4a4.web-sandbox.oaiusercontent.com"
        );
        assert_eq!(
            o.claude,
            "https://c3d80a4ed901ee05b21755a88273b4a4.claudemcpcontent.com"
        );
        assert_eq!(
            claude_domain("https://example.com/mcp"),
            "c3d80a4ed901ee05b21755a88273b4a4.claudemcpcontent.com"
        );
        let behind = WidgetOrigins::behind(Some("https://example.com/"), "/mcp").unwrap();
        assert_eq!(behind, o);
        assert!(WidgetOrigins::behind(None, "/mcp").is_none());
        // A trailing slash is another URL.
        assert_ne!(
            WidgetOrigins::of("https://example.com/mcp/").chatgpt,
            o.chatgpt
        );
    }

    #[test]
    fn hosts_are_told_by_client_name_then_user_agent() {
        let cases = [
            (Some("openai-mcp"), None, HostKind::ChatGpt),
            (Some("ChatGPT"), None, HostKind::ChatGpt),
            (Some("claude-ai"), None, HostKind::Claude),
            (
                Some("claude-ai"),
                Some("python-httpx/0.28"),
                HostKind::Claude,
            ),
            (Some("mcp-inspector"), Some("Claude-User"), HostKind::Claude),
            (None, Some("Claude-User/1.0"), HostKind::Claude),
            (Some("openai-mcp"), Some("Claude-User"), HostKind::ChatGpt),
            (Some("mcp-inspector"), Some("node"), HostKind::Other),
            (None, None, HostKind::Other),
        ];
        for (name, agent, kind) in cases {
            assert_eq!(HostKind::of_client(name, agent), kind, "{name:?} {agent:?}");
        }
    }

    #[test]
    fn initialize_says_it_then_the_session_does() {
        let init = raw(
            r#"{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"openai-mcp","version":"1.0.0"}}"#,
        );
        let init = Some(&*init);
        assert_eq!(
            detect(None, Some("initialize"), init, None),
            HostKind::ChatGpt
        );
        // A re-initialize wins over what the session said.
        assert_eq!(
            detect(Some(HostKind::Claude), Some("initialize"), init, None),
            HostKind::ChatGpt
        );
        assert_eq!(
            detect(Some(HostKind::Claude), Some("resources/read"), None, None),
            HostKind::Claude
        );
        // An old id (no host) is judged per request.
        assert_eq!(
            detect(None, Some("resources/read"), None, Some("Claude-User")),
            HostKind::Claude
        );
    }

    #[test]
    fn sessionless_requests_name_their_client_in_meta() {
        let read = raw(
            r#"{"uri":"ui://a/b.html","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"claude-ai","version":"1"}}}"#,
        );
        assert_eq!(
            detect(None, Some("resources/read"), Some(&*read), None),
            HostKind::Claude
        );
        // Only an initialize's top-level clientInfo counts.
        let stray = raw(r#"{"uri":"ui://a/b.html","clientInfo":{"name":"openai-mcp"}}"#);
        assert_eq!(
            detect(None, Some("resources/read"), Some(&*stray), None),
            HostKind::Other
        );
        // Requests whose answers do not depend on the host are not read.
        assert_eq!(
            detect(None, Some("tools/call"), Some(&*read), Some("Claude-User")),
            HostKind::Other
        );
        for junk in [
            "[]",
            "1",
            r#"{"clientInfo":7}"#,
            r#"{"_meta":{"io.modelcontextprotocol/clientInfo":{"name":5}}}"#,
        ] {
            let junk = raw(junk);
            assert_eq!(
                detect(None, Some("initialize"), Some(&*junk), None),
                HostKind::Other
            );
        }
    }

    #[test]
    fn codes_round_trip_and_unknown_ones_are_other() {
        for kind in HostKind::ALL {
            assert_eq!(HostKind::from_code(kind.code()), kind);
        }
        assert_eq!(HostKind::from_code(200), HostKind::Other);
    }
}
