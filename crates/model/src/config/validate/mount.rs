//! A mount: an upstream as the gateway serves it, and each `[[upstream]]`
//! resolved into one: its name and path, its transport, TLS, forwarded
//! headers, session mode and cache hints.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::super::app;
use super::super::schema::{AuthChallenge, MAX_POOL, SessionMode, UpstreamConfig};
use crate::tls::UpstreamTls;
use mcp_ui_wire::protocol::cache::{Hints, MAX_TTL_MS};

/// What names a request's conversation (`sessions = "conversation"`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConversationKey {
    /// A key of the request's `params._meta`, e.g. `openai/session`.
    Meta(String),
    /// A request header.
    Header(http::HeaderName),
}

impl Default for ConversationKey {
    fn default() -> Self {
        ConversationKey::Meta("openai/session".into())
    }
}

impl std::fmt::Display for ConversationKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConversationKey::Meta(k) => write!(f, "meta:{k}"),
            ConversationKey::Header(h) => write!(f, "header:{h}"),
        }
    }
}

/// How a mount's client sessions map to upstream connections, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sessions {
    pub mode: SessionMode,
    /// Connections of a shared pool (1 unless `sessions = "shared"`).
    pub pool: usize,
    pub key: ConversationKey,
}

impl Default for Sessions {
    /// A shared pool of one connection.
    fn default() -> Self {
        Sessions {
            mode: SessionMode::Shared,
            pool: 1,
            key: ConversationKey::default(),
        }
    }
}

/// How an upstream is reached, once validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    Http { url: http::Uri },
    Sse { url: http::Uri },
    Stdio(StdioCommand),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StdioCommand {
    pub program: String,
    pub args: Vec<String>,
    pub env: BTreeMap<String, String>,
    pub cwd: Option<PathBuf>,
}

/// A validated upstream and where it is mounted.
#[derive(Debug, Clone)]
pub struct Mount {
    pub name: String,
    pub path: String,
    pub transport: Transport,
    pub forward_headers: Vec<http::HeaderName>,
    pub auth_challenge: AuthChallenge,
    /// How an `https://` upstream is verified and what it is shown.
    pub tls: UpstreamTls,
    /// How client sessions map to upstream connections.
    pub sessions: Sessions,
    /// The freshness announced to clients of the 2026-07-28 revision for
    /// the listings and reads the upstream gives none of.
    pub cache: Hints,
    /// What its callers need (`None`: anyone may call).
    pub auth: Option<super::super::auth::Auth>,
}

/// Each `[[upstream]]`'s mount, in order; an upstream with a problem has
/// none, and two may not share a name or a path.
pub(super) fn resolve_mounts(
    upstreams: &[UpstreamConfig],
    problems: &mut Vec<String>,
) -> Vec<Mount> {
    let single = upstreams.len() == 1;
    let mut mounts: Vec<Mount> = Vec::new();
    for (i, up) in upstreams.iter().enumerate() {
        let at = format!("upstream[{i}]");
        match mount(up, single) {
            Ok(m) => {
                if mounts.iter().any(|o| o.name == m.name) {
                    problems.push(format!(
                        "{at}.name: \"{}\" is used by another upstream",
                        m.name
                    ));
                }
                if mounts.iter().any(|o| o.path == m.path) {
                    problems.push(format!(
                        "{at}.path: \"{}\" is used by another upstream",
                        m.path
                    ));
                }
                mounts.push(m);
            }
            Err(errs) => problems.extend(errs.into_iter().map(|e| format!("{at}{e}"))),
        }
    }
    mounts
}

/// What an app sees of each mount.
pub(super) fn mount_refs(mounts: &[Mount]) -> Vec<app::MountRef<'_>> {
    mounts
        .iter()
        .map(|m| app::MountRef {
            name: &m.name,
            path: &m.path,
            challenge: matches!(m.transport, Transport::Http { .. })
                .then_some(m.auth_challenge.as_str()),
        })
        .collect()
}

fn mount(up: &UpstreamConfig, single: bool) -> Result<Mount, Vec<String>> {
    let mut errs = Vec::new();
    check_name(&up.name, &mut errs);
    let path = mount_path(up, single, &mut errs);
    let transport = transport(up, &mut errs);
    if !up.args.is_empty() && up.command.is_none() {
        errs.push(".args: only meaningful with `command`".into());
    }
    let tls = upstream_tls(up, &mut errs);
    let forward_headers = forward_headers(&up.forward_headers, &mut errs);
    let sessions = sessions(up, transport.as_ref(), &mut errs);
    let cache = cache(up, &mut errs);
    match transport {
        Some(transport) if errs.is_empty() => Ok(Mount {
            name: up.name.clone(),
            path,
            transport,
            forward_headers,
            auth_challenge: up.auth_challenge,
            tls,
            sessions,
            cache,
            // Resolved with the top-level `[auth]`, once every mount is.
            auth: None,
        }),
        _ => Err(errs),
    }
}

/// An upstream's name: the characters it may hold, and its length.
fn check_name(name: &str, errs: &mut Vec<String>) {
    if name.is_empty()
        || !name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.')
    {
        errs.push(format!(
            ".name: \"{name}\" must be non-empty letters, digits, '-', '_' or '.'"
        ));
    }
    let longest = crate::session_id::MAX_MOUNT_NAME;
    if name.len() > longest {
        // Session ids carry the name: a longer one could not be read back.
        errs.push(format!(
            ".name: {} characters, at most {longest} allowed",
            name.len()
        ));
    }
}

/// The path `up` is mounted at: as written, else `/mcp` for a lone
/// upstream and `/<name>/mcp` for one of several.
fn mount_path(up: &UpstreamConfig, single: bool, errs: &mut Vec<String>) -> String {
    match &up.path {
        Some(p) if !p.starts_with('/') || p.contains(['?', '#', ' ']) => {
            errs.push(format!(
                ".path: \"{p}\" must start with '/' and hold no query"
            ));
            p.clone()
        }
        Some(p) if is_reserved_path(p) => {
            errs.push(format!(
                ".path: \"{p}\" is one of the gateway's own paths \
                 (/healthz, /readyz, /metrics, /preview, /.well-known/…)"
            ));
            p.clone()
        }
        Some(p) => p.clone(),
        None if single => "/mcp".to_owned(),
        None => format!("/{}/mcp", up.name),
    }
}

/// How `up` is reached: exactly one of `url`, `sse_url` or `command`.
fn transport(up: &UpstreamConfig, errs: &mut Vec<String>) -> Option<Transport> {
    let chosen = [up.url.is_some(), up.sse_url.is_some(), up.command.is_some()];
    match chosen {
        [true, false, false] => {
            http_url(".url", up.url.as_deref().unwrap(), errs).map(|url| Transport::Http { url })
        }
        [false, true, false] => http_url(".sse_url", up.sse_url.as_deref().unwrap(), errs)
            .map(|url| Transport::Sse { url }),
        [false, false, true] => {
            let program = up.command.clone().unwrap();
            if program.trim().is_empty() {
                errs.push(".command: must not be empty".into());
            }
            Some(Transport::Stdio(StdioCommand {
                program,
                args: up.args.clone(),
                env: up.env.clone(),
                cwd: up.cwd.clone(),
            }))
        }
        _ => {
            errs.push(format!(
                " (\"{}\"): set exactly one of `url`, `sse_url` or `command`",
                up.name
            ));
            None
        }
    }
}

/// `forward_headers`, each a header name.
fn forward_headers(written: &[String], errs: &mut Vec<String>) -> Vec<http::HeaderName> {
    let mut forward_headers = Vec::new();
    for (i, h) in written.iter().enumerate() {
        match http::HeaderName::from_bytes(h.as_bytes()) {
            Ok(name) => forward_headers.push(name),
            Err(_) => errs.push(format!(
                ".forward_headers[{i}]: \"{h}\" is not a header name"
            )),
        }
    }
    forward_headers
}

/// The freshness hints announced for `up`'s listings and reads.
fn cache(up: &UpstreamConfig, errs: &mut Vec<String>) -> Hints {
    let ttl_ms = up.cache_ttl_ms.unwrap_or_default();
    if ttl_ms > MAX_TTL_MS {
        errs.push(format!(
            ".cache_ttl_ms: {ttl_ms} is more than a day ({MAX_TTL_MS}), which clients do not keep"
        ));
    }
    Hints {
        ttl_ms,
        scope: up.cache_scope.unwrap_or_default(),
    }
}

/// The session mode of `up`: as written, else `shared` for the upstreams the
/// gateway owns the connections of (stdio, legacy SSE) and `client` for a
/// streamable HTTP upstream (which owns its sessions).
fn sessions(
    up: &UpstreamConfig,
    transport: Option<&Transport>,
    errs: &mut Vec<String>,
) -> Sessions {
    let default = match transport {
        Some(Transport::Http { .. }) => SessionMode::Client,
        _ => SessionMode::Shared,
    };
    let mode = up.sessions.unwrap_or(default);
    let pool = match up.pool {
        Some(n) if mode != SessionMode::Shared => {
            errs.push(format!(
                ".pool: only meaningful with sessions = \"shared\" (this upstream's is \"{}\"); remove it or set sessions = \"shared\"",
                mode.as_str()
            ));
            n
        }
        Some(n) if n == 0 || n > MAX_POOL => {
            errs.push(format!(".pool: {n}, must be 1 to {MAX_POOL}"));
            1
        }
        Some(n) => n,
        None => 1,
    };
    let key = match up.conversation_key.as_deref() {
        None => ConversationKey::default(),
        Some(_) if mode != SessionMode::Conversation => {
            errs.push(format!(
                ".conversation_key: only meaningful with sessions = \"conversation\" (this upstream's is \"{}\")",
                mode.as_str()
            ));
            ConversationKey::default()
        }
        Some(text) => parse_conversation_key(text).unwrap_or_else(|e| {
            errs.push(format!(".conversation_key: {e}"));
            ConversationKey::default()
        }),
    };
    Sessions { mode, pool, key }
}

fn parse_conversation_key(text: &str) -> Result<ConversationKey, String> {
    match text.split_once(':') {
        Some(("meta", key)) if !key.trim().is_empty() => {
            Ok(ConversationKey::Meta(key.trim().to_owned()))
        }
        Some(("header", name)) => http::HeaderName::from_bytes(name.trim().as_bytes())
            .map(ConversationKey::Header)
            .map_err(|_| format!("\"{name}\" is not a header name")),
        _ => Err(format!(
            "\"{text}\" must be \"meta:<key of params._meta>\" or \"header:<name>\", e.g. \"meta:openai/session\""
        )),
    }
}

/// The TLS settings of `up`, which only an `https://` URL may have.
fn upstream_tls(up: &UpstreamConfig, errs: &mut Vec<String>) -> UpstreamTls {
    let client_auth = match (&up.client_cert, &up.client_key) {
        (Some(cert), Some(key)) => Some((cert.clone(), key.clone())),
        (Some(_), None) => {
            errs.push(".client_key: must be set with client_cert".into());
            None
        }
        (None, Some(_)) => {
            errs.push(".client_cert: must be set with client_key".into());
            None
        }
        (None, None) => None,
    };
    if let Some(name) = &up.tls_server_name
        && rustls_pki_types::ServerName::try_from(name.as_str()).is_err()
    {
        errs.push(format!(
            ".tls_server_name: \"{name}\" is not a DNS name or an IP address"
        ));
    }
    let tls = UpstreamTls {
        ca_file: up.ca_file.clone(),
        client_auth,
        server_name: up.tls_server_name.clone(),
    };
    let https = [&up.url, &up.sse_url]
        .into_iter()
        .flatten()
        .any(|u| u.starts_with("https://"));
    if !https && !tls.is_default() {
        errs.push(
            ": ca_file, client_cert, client_key and tls_server_name apply to an https:// url or sse_url only"
                .into(),
        );
    }
    tls
}

fn http_url(field: &str, text: &str, errs: &mut Vec<String>) -> Option<http::Uri> {
    match text.parse::<http::Uri>() {
        Ok(uri) if matches!(uri.scheme_str(), Some("http" | "https")) && uri.host().is_some() => {
            Some(uri)
        }
        _ => {
            errs.push(format!(
                "{field}: \"{text}\" is not an http:// or https:// URL"
            ));
            None
        }
    }
}

/// Paths the gateway answers itself, which no mount may take.
pub(crate) fn is_reserved_path(path: &str) -> bool {
    let path = path.trim_end_matches('/');
    matches!(path, "/healthz" | "/readyz" | "/metrics")
        || path == "/preview"
        || path.starts_with("/preview/")
        || path.starts_with("/.well-known/")
}
