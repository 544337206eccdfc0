//! Validation: what serde cannot check, each upstream resolved into a
//! [`Mount`] (its path, transport, TLS and session mode) and each `[[app]]`
//! over them, once, into one [`Resolved`] value; every problem named by
//! its field.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::app::{self, App};
use super::load::ConfigError;
use super::schema::{
    AuthChallenge, Config, Limits, MAX_POOL, MIN_HEADER_BYTES, SessionMode, UpstreamConfig,
};
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
    pub auth: Option<super::auth::Auth>,
}

/// The configuration with every rule checked, once: the mount each
/// `[[upstream]]` resolved to, and the `[[app]]` endpoints over them.
#[derive(Debug, Clone, Default)]
pub struct Resolved {
    pub mounts: Vec<Mount>,
    pub apps: Vec<App>,
    /// The gateway as an authorization server, when configured.
    pub authorization_server: Option<super::authorization::AuthorizationServer>,
}

impl Config {
    /// Check what serde cannot, and resolve every upstream's mount and
    /// every app. Reports every problem, each naming its field.
    pub fn resolve(&self) -> Result<Resolved, ConfigError> {
        let mut problems = Vec::new();
        self.check_settings(&mut problems);
        check_limits(&self.limits, &mut problems);
        let mut mounts = resolve_mounts(&self.upstreams, &mut problems);
        let mut apps = app::resolve(&self.apps, &mount_refs(&mounts), is_reserved_path)
            .unwrap_or_else(|errs| {
                problems.extend(errs);
                Vec::new()
            });
        let env = |var: &str| std::env::var(var).ok();
        let authorization_server = self.authorization_server.as_ref().and_then(|a| {
            super::authorization::resolve(a, self.public_url.as_deref(), &env)
                .map_err(|errs| problems.extend(errs))
                .ok()
        });
        // With [authorization_server] the gateway is the issuer of the
        // endpoints that name none, whether or not the rest of its settings
        // hold: a problem there (a secret's variable unset) is reported
        // once, there, and not again as every endpoint's issuer missing.
        // Without public_url it is empty, and public_url is reported.
        let own_issuer = self.authorization_server.as_ref().map(|_| {
            self.public_url
                .as_deref()
                .map(super::authorization::issuer_of)
                .unwrap_or_default()
        });
        let own_issuer = own_issuer.as_deref();
        let top = self.auth.as_ref();
        for (i, up) in self.upstreams.iter().enumerate() {
            let at = format!("upstream[{i}].");
            match super::auth::resolve(top, up.auth.as_ref(), &at, own_issuer, &env) {
                Ok(auth) => {
                    if let Some(m) = mounts.iter_mut().find(|m| m.name == up.name) {
                        let per_user = matches!(m.transport, Transport::Stdio(_))
                            && m.sessions.mode == SessionMode::Conversation;
                        if auth.as_ref().is_some_and(|a| !a.claims_to_env.is_empty()) && !per_user {
                            problems.push(format!(
                                "{at}auth.claims_to_env: only for a stdio upstream with sessions = \"conversation\" (a process per caller); a shared process would carry one caller's claims to all"
                            ));
                        }
                        m.auth = auth;
                    }
                }
                Err(errs) => problems.extend(errs),
            }
        }
        for (i, a) in self.apps.iter().enumerate() {
            let at = format!("app[{i}].");
            match super::auth::resolve(top, a.auth.as_ref(), &at, own_issuer, &env) {
                Ok(auth) => {
                    if let Some(app) = apps.iter_mut().find(|x| x.name == a.name) {
                        app.auth = auth;
                        problems.extend(app::covers_members(
                            app,
                            &|i| mounts.get(i)?.auth.as_ref(),
                            &at,
                        ));
                    }
                }
                Err(errs) => problems.extend(errs),
            }
        }
        problems.extend(super::auth::across_endpoints(
            self.public_url.as_deref(),
            &protected(&mounts, &apps),
        ));
        let mut authorization_server = authorization_server;
        let provider_tokens = mounts
            .iter()
            .filter_map(|m| m.auth.as_ref())
            .chain(apps.iter().filter_map(|x| x.auth.as_ref()))
            .any(|a| a.wants_provider_token());
        match &mut authorization_server {
            Some(a) => a.provider_tokens = provider_tokens,
            None if provider_tokens => problems.push(format!(
                "auth.claims_to_headers / claims_to_env: \"{}\" is known only for users the gateway signs in ([authorization_server])",
                super::auth::PROVIDER_ACCESS_TOKEN
            )),
            None => {}
        }
        if let Some(a) = &authorization_server {
            let protected = mounts
                .iter()
                .filter_map(|m| m.auth.as_ref())
                .chain(apps.iter().filter_map(|x| x.auth.as_ref()))
                .filter(|auth| auth.issuer == a.issuer)
                .count();
            if protected == 0 {
                problems.push(format!(
                    "authorization_server: no mount or app accepts its tokens: add [auth] (its issuer defaults to \"{}\")",
                    a.issuer
                ));
            }
        }
        if problems.is_empty() {
            Ok(Resolved {
                mounts,
                apps,
                authorization_server,
            })
        } else {
            Err(ConfigError::Invalid { problems })
        }
    }

    /// The settings outside `[limits]` and the upstreams: the session key,
    /// the public URL, the listener's certificate and key.
    fn check_settings(&self, problems: &mut Vec<String>) {
        if let Some(key) = &self.session_key
            && let Err(e) = crate::session_id::SessionKey::from_hex(key)
        {
            problems.push(format!("session_key: {e}"));
        }
        if let Some(u) = &self.public_url {
            let ok = u.parse::<http::Uri>().is_ok_and(|uri| {
                matches!(uri.scheme_str(), Some("http" | "https"))
                    && uri.host().is_some()
                    && uri.query().is_none()
            });
            if !ok {
                problems.push(format!(
                    "public_url: \"{u}\" must be an http:// or https:// URL with no query"
                ));
            }
        }
        if let Some(token) = &self.openai_apps_challenge {
            problems.extend(super::challenge::problem(token));
        }
        match (&self.tls_cert, &self.tls_key) {
            (Some(_), None) => problems.push("tls_key: must be set with tls_cert".into()),
            (None, Some(_)) => problems.push("tls_cert: must be set with tls_key".into()),
            _ => {}
        }
    }
}

/// The endpoints `[auth]` protects, mounts first, for the rules across them.
fn protected<'a>(mounts: &'a [Mount], apps: &'a [App]) -> Vec<super::auth::Protected<'a>> {
    let mounts = mounts.iter().enumerate().filter_map(|(i, m)| {
        Some(super::auth::Protected {
            at: format!("upstream[{i}]."),
            label: format!("upstream \"{}\"", m.name),
            auth: m.auth.as_ref()?,
        })
    });
    let apps = apps.iter().enumerate().filter_map(|(i, a)| {
        Some(super::auth::Protected {
            at: format!("app[{i}]."),
            label: format!("app \"{}\"", a.name),
            auth: a.auth.as_ref()?,
        })
    });
    mounts.chain(apps).collect()
}

/// `[limits]`: every count, size and time that must not be 0, and the
/// smallest header limit a request can be read under.
fn check_limits(limits: &Limits, problems: &mut Vec<String>) {
    let zero = [
        ("max_body_bytes", limits.max_body_bytes == 0),
        ("request_timeout_secs", limits.request_timeout_secs == 0),
        (
            "app_member_timeout_secs",
            limits.app_member_timeout_secs == 0,
        ),
        (
            "session_reap_interval_secs",
            limits.session_reap_interval_secs == 0,
        ),
        (
            "stdio_quiet_session_secs",
            limits.stdio_quiet_session_secs == 0,
        ),
        ("conversation_idle_secs", limits.conversation_idle_secs == 0),
        (
            "header_read_timeout_secs",
            limits.header_read_timeout_secs == 0,
        ),
        ("idle_connection_secs", limits.idle_connection_secs == 0),
        ("max_connections", limits.max_connections == Some(0)),
    ];
    let zero_field = |(field, is_zero): (&str, bool)| {
        is_zero.then(|| format!("limits.{field}: must be greater than 0"))
    };
    problems.extend(zero.into_iter().filter_map(zero_field));
    if limits.max_header_bytes < MIN_HEADER_BYTES {
        problems.push(format!(
            "limits.max_header_bytes: must be at least {MIN_HEADER_BYTES}"
        ));
    }
    let zero = [
        ("max_message_bytes", limits.max_message_bytes == 0),
        ("max_sessions", limits.max_sessions == 0),
        (
            "max_in_flight_per_session",
            limits.max_in_flight_per_session == 0,
        ),
        ("max_stdio_children", limits.max_stdio_children == 0),
        ("max_mount_connections", limits.max_mount_connections == 0),
        ("max_caller_connections", limits.max_caller_connections == 0),
        ("max_rounds_per_caller", limits.max_rounds_per_caller == 0),
        ("max_client_sessions", limits.max_client_sessions == 0),
        ("max_buffered_bytes", limits.max_buffered_bytes == 0),
        ("max_widget_bytes", limits.max_widget_bytes == 0),
    ];
    problems.extend(zero.into_iter().filter_map(zero_field));
}

/// Each `[[upstream]]`'s mount, in order; an upstream with a problem has
/// none, and two may not share a name or a path.
fn resolve_mounts(upstreams: &[UpstreamConfig], problems: &mut Vec<String>) -> Vec<Mount> {
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

fn mount_refs(mounts: &[Mount]) -> Vec<app::MountRef<'_>> {
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
    if up.name.is_empty()
        || !up
            .name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.')
    {
        errs.push(format!(
            ".name: \"{}\" must be non-empty letters, digits, '-', '_' or '.'",
            up.name
        ));
    }
    let longest = crate::session_id::MAX_MOUNT_NAME;
    if up.name.len() > longest {
        // Session ids carry the name: a longer one could not be read back.
        errs.push(format!(
            ".name: {} characters, at most {longest} allowed",
            up.name.len()
        ));
    }
    let path = match &up.path {
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
    };
    let chosen = [up.url.is_some(), up.sse_url.is_some(), up.command.is_some()];
    let transport = match chosen {
        [true, false, false] => http_url(".url", up.url.as_deref().unwrap(), &mut errs)
            .map(|url| Transport::Http { url }),
        [false, true, false] => http_url(".sse_url", up.sse_url.as_deref().unwrap(), &mut errs)
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
    };
    if !up.args.is_empty() && up.command.is_none() {
        errs.push(".args: only meaningful with `command`".into());
    }
    let tls = upstream_tls(up, &mut errs);
    let mut forward_headers = Vec::new();
    for (i, h) in up.forward_headers.iter().enumerate() {
        match http::HeaderName::from_bytes(h.as_bytes()) {
            Ok(name) => forward_headers.push(name),
            Err(_) => errs.push(format!(
                ".forward_headers[{i}]: \"{h}\" is not a header name"
            )),
        }
    }
    let sessions = sessions(up, transport.as_ref(), &mut errs);
    let ttl_ms = up.cache_ttl_ms.unwrap_or_default();
    if ttl_ms > MAX_TTL_MS {
        errs.push(format!(
            ".cache_ttl_ms: {ttl_ms} is more than a day ({MAX_TTL_MS}), which clients do not keep"
        ));
    }
    let cache = Hints {
        ttl_ms,
        scope: up.cache_scope.unwrap_or_default(),
    };
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
pub(super) fn is_reserved_path(path: &str) -> bool {
    let path = path.trim_end_matches('/');
    matches!(path, "/healthz" | "/readyz" | "/metrics")
        || path == "/preview"
        || path.starts_with("/preview/")
        || path.starts_with("/.well-known/")
}
