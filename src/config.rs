//! Configuration: the typed settings, layered with figment as defaults →
//! `config/gateway.toml` (or `--config FILE`) → `MCP_UI_GATEWAY_*` environment
//! variables → command-line flags, then checked as a whole so one bad field is
//! reported by name, with the file it came from.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use figment::Figment;
use figment::providers::{Env, Format, Serialized, Toml};
use serde::{Deserialize, Serialize};

use crate::tls::UpstreamTls;

pub mod app;
mod problems;

pub use app::{App, AppConfig, Member, MemberConfig};

/// Prefix of the environment variables that set configuration fields;
/// nested fields use `__`, e.g. `MCP_UI_GATEWAY_LIMITS__MAX_BODY_BYTES`.
pub const ENV_PREFIX: &str = "MCP_UI_GATEWAY_";
/// The file read when `--config` is not given, if it exists.
pub const DEFAULT_FILE: &str = "config/gateway.toml";

/// The whole configuration, as read.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// Address the gateway listens on. Loopback by default.
    pub listen: SocketAddr,
    /// 64 hexadecimal characters sealing session ids. Give every replica the
    /// same key; unset means a random key per process.
    pub session_key: Option<String>,
    /// Extra values accepted in the `Host` header. With a loopback `listen`
    /// only loopback names are accepted by default (DNS-rebinding protection).
    pub allowed_hosts: Vec<String>,
    /// Browser origins allowed to call the gateway (CORS and `Origin`
    /// checks), e.g. `https://inspector.example.com`. Loopback origins are
    /// always allowed; `"*"` allows any.
    pub allowed_origins: Vec<String>,
    /// The gateway's external base URL, e.g. `https://gw.example.com` behind a
    /// TLS terminator. Each mount's protected-resource identifier is this plus
    /// its path, and Claude's widget domain is hashed from that URL. Unset:
    /// `http://` (`https://` with `tls_cert`) plus the request's `Host` (the
    /// listen address for direct clients), and no derived widget domain.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub public_url: Option<String>,
    /// Serve HTTPS: the certificate chain (PEM, leaf first) and its private
    /// key (PEM: PKCS#8, PKCS#1 or SEC1). HTTP/1.1 and HTTP/2 by ALPN. Both
    /// files are re-read when they change; a pair that does not load keeps
    /// the one in use.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls_cert: Option<PathBuf>,
    /// See `tls_cert`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls_key: Option<PathBuf>,
    /// The overlay directory (UI metadata and widgets per upstream), watched
    /// and reloaded on change. A missing directory means no overlays.
    pub overlays: PathBuf,
    /// Serve `/preview`, a page that renders each mount's tools and widgets
    /// in the browser (an MCP Apps host for editing overlays). Unset: on when
    /// `listen` is a loopback address, off otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preview: Option<bool>,
    /// On SIGTERM or SIGINT, how long open exchanges may take to finish.
    pub shutdown_grace_secs: u64,
    /// Threads serving connections, each with its own event loop; 0 means
    /// one per CPU. A connection stays on the thread that accepted it.
    pub workers: usize,
    /// Limits applied to every request and upstream.
    pub limits: Limits,
    /// OpenTelemetry trace export (OTLP/HTTP); off unless an endpoint is set
    /// here or in the standard `OTEL_*` variables, which take precedence.
    pub telemetry: Telemetry,
    /// The upstream MCP servers, each mounted at its own path.
    #[serde(rename = "upstream")]
    pub upstreams: Vec<UpstreamConfig>,
    /// Endpoints combining several upstreams (`[[app]]`, see [`app`]).
    #[serde(rename = "app", skip_serializing_if = "Vec::is_empty")]
    pub apps: Vec<AppConfig>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            listen: SocketAddr::from(([127, 0, 0, 1], 8787)),
            session_key: None,
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            public_url: None,
            tls_cert: None,
            tls_key: None,
            overlays: PathBuf::from("overlays"),
            preview: None,
            shutdown_grace_secs: 10,
            workers: 0,
            limits: Limits::default(),
            telemetry: Telemetry::default(),
            upstreams: Vec::new(),
            apps: Vec::new(),
        }
    }
}

/// The `[telemetry]` section: where and how traces are exported. Each field
/// has a standard `OTEL_*` variable, which wins over the file (as every
/// OpenTelemetry SDK reads them); `MCP_UI_GATEWAY_TELEMETRY__*` set the
/// file's fields.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Telemetry {
    /// Collector base URL; `/v1/traces` is appended
    /// (`OTEL_EXPORTER_OTLP_ENDPOINT`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// Full traces URL, used as is (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub traces_endpoint: Option<String>,
    /// `service.name` (`OTEL_SERVICE_NAME`); default `mcp-ui-gateway`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service_name: Option<String>,
    /// `always_on`, `always_off`, `traceidratio`, `parentbased_always_on`
    /// (the default), `parentbased_always_off`, `parentbased_traceidratio`
    /// (`OTEL_TRACES_SAMPLER`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sampler: Option<String>,
    /// The ratio of the `traceidratio` samplers, 0 to 1
    /// (`OTEL_TRACES_SAMPLER_ARG`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sampler_arg: Option<f64>,
    /// Extra resource attributes (`OTEL_RESOURCE_ATTRIBUTES`, `k=v,k=v`).
    pub resource_attributes: BTreeMap<String, String>,
    /// Headers sent with each export, e.g. an API key
    /// (`OTEL_EXPORTER_OTLP_HEADERS`, `k=v,k=v`).
    pub headers: BTreeMap<String, String>,
    /// How long one export may take, in milliseconds
    /// (`OTEL_EXPORTER_OTLP_TIMEOUT`); default 10000.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// Spans waiting for export at most; more are dropped and counted
    /// (`OTEL_BSP_MAX_QUEUE_SIZE`); default 2048.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_queue_size: Option<usize>,
    /// Longest wait before a batch is sent, in milliseconds
    /// (`OTEL_BSP_SCHEDULE_DELAY`); default 1000.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schedule_delay_ms: Option<u64>,
    /// Longest attribute value, status message and `tracestate` exported,
    /// in characters; longer ones are cut (`OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT`);
    /// default 1024. Span names are cut at 256.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attribute_value_length_limit: Option<usize>,
    /// Bytes of spans waiting for export at most; beyond, spans are dropped
    /// and counted, as at `max_queue_size`; default 16 MiB.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_queue_bytes: Option<usize>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Limits {
    /// Largest request body accepted from a client (413 beyond).
    pub max_body_bytes: usize,
    /// Largest single message accepted from an upstream (an SSE event or a
    /// stdio line); beyond it the request fails with a JSON-RPC error.
    pub max_message_bytes: usize,
    /// How long a request may wait for its upstream's response.
    pub request_timeout_secs: u64,
    /// How long an app waits for one member's answer to `initialize` and to
    /// a listing page; a member silent past it is left out of that session
    /// (or that page fails), the others answer.
    pub app_member_timeout_secs: u64,
    /// How long connecting to an upstream may take.
    pub connect_timeout_secs: u64,
    /// Most sessions this process owns at once (stdio children and legacy SSE
    /// connections); new sessions beyond it are refused with 503.
    pub max_sessions: usize,
    /// A session this process owns ends after this long without a request.
    pub session_idle_secs: u64,
    /// How often owned sessions are checked for idleness (so a session ends
    /// between `session_idle_secs` and this much later).
    pub session_reap_interval_secs: u64,
    /// A stdio session with no request in flight and no GET stream open ends
    /// after this long without a request: clients that never send DELETE
    /// would otherwise keep a child running for `session_idle_secs`.
    pub stdio_quiet_session_secs: u64,
    /// An upstream connection of one conversation (`sessions =
    /// "conversation"`) ends after this long without a request.
    pub conversation_idle_secs: u64,
    /// Most requests one session may have waiting for its upstream at once;
    /// beyond it a request is refused with 429 and a JSON-RPC error.
    pub max_in_flight_per_session: usize,
    /// Most stdio children running at once across every stdio upstream; a
    /// session that would start one more is refused with 503.
    pub max_stdio_children: usize,
    /// A client connection must deliver a complete request head within this
    /// long of connecting, or of sending the head's first byte; a request
    /// body must keep arriving at a floor rate from then on.
    pub header_read_timeout_secs: u64,
    /// A client connection with no request in progress is closed after this
    /// long (HTTP/1.1 keep-alive and HTTP/2 alike).
    pub idle_connection_secs: u64,
    /// Most client connections open at once. At the cap the longest-idle
    /// connection is closed for a new client; when none is idle the new one
    /// is answered 503. Default: half the file descriptors left after a
    /// reserve of 128, once the soft limit is raised to the hard one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_connections: Option<usize>,
    /// Most bytes a client connection may buffer before its request head is
    /// complete (HTTP/1.1), and largest header list (HTTP/2). Beyond: 431.
    pub max_header_bytes: usize,
    /// Most bytes of upstream answers held whole at once, across every
    /// request (JSON answers the gateway rewrites or looks into); an answer
    /// that does not fit is refused with a JSON-RPC error.
    pub max_buffered_bytes: usize,
    /// Largest overlay file read (a widget document or asset, a manifest, a
    /// mount file), and largest widget with its assets inlined; checked from
    /// the file's size before it is read.
    pub max_widget_bytes: usize,
}

/// The smallest `limits.max_header_bytes`: one read buffer.
pub const MIN_HEADER_BYTES: usize = 8192;

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_body_bytes: 4 * 1024 * 1024,
            max_message_bytes: 64 * 1024 * 1024,
            request_timeout_secs: 300,
            app_member_timeout_secs: 15,
            connect_timeout_secs: 10,
            max_sessions: 1024,
            session_idle_secs: 3600,
            session_reap_interval_secs: 15,
            stdio_quiet_session_secs: 600,
            conversation_idle_secs: 600,
            max_in_flight_per_session: 64,
            max_stdio_children: 256,
            header_read_timeout_secs: 10,
            idle_connection_secs: 120,
            max_connections: None,
            max_header_bytes: 64 * 1024,
            max_buffered_bytes: 256 * 1024 * 1024,
            max_widget_bytes: 16 * 1024 * 1024,
        }
    }
}

/// One upstream, as written in `[[upstream]]`. Exactly one of `url`,
/// `sse_url` and `command` says how to reach it.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UpstreamConfig {
    /// Name used in logs, errors and the default mount path.
    pub name: String,
    /// Path the upstream is served at. Default: `/mcp` when there is one
    /// upstream, `/<name>/mcp` when there are several.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Streamable HTTP endpoint, e.g. `http://127.0.0.1:3001/mcp`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Legacy HTTP+SSE (2024-11-05) endpoint, e.g. `http://127.0.0.1:3001/sse`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sse_url: Option<String>,
    /// Program to run as a stdio server (how many children: `sessions`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Arguments of `command`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Environment added to the child's (which inherits the gateway's).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// Working directory of the child.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<PathBuf>,
    /// Request headers forwarded to this upstream besides the MCP ones and
    /// `Authorization`, e.g. `["x-api-key"]`. Never forwarded to other upstreams.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub forward_headers: Vec<String>,
    /// How a `tools/call` refused by this upstream for authorization (HTTP 401
    /// or 403) reaches the client: `"http"` relays the status and challenge
    /// as they are; `"in-band"` answers a tool result with `isError` and
    /// `_meta["mcp/www_authenticate"]` (what ChatGPT acts on).
    #[serde(default, skip_serializing_if = "AuthChallenge::is_http")]
    pub auth_challenge: AuthChallenge,
    /// For an `https://` upstream: a PEM bundle of the certificate
    /// authorities to trust instead of the system's roots.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_file: Option<PathBuf>,
    /// For an `https://` upstream that asks for one: the client certificate
    /// chain (PEM) presented to it, with `client_key`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_cert: Option<PathBuf>,
    /// The private key (PEM) of `client_cert`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_key: Option<PathBuf>,
    /// For an `https://` upstream: the name its certificate must be valid
    /// for (and the SNI sent), when it is not the URL's host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_server_name: Option<String>,
    /// How client sessions map to upstream connections: `"shared"` (a pool
    /// of connections serves every client), `"conversation"` (one connection
    /// per conversation) or `"client"` (one per client session). Default:
    /// `"shared"` for `command` and `sse_url`, `"client"` for `url`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sessions: Option<SessionMode>,
    /// With `sessions = "shared"`: how many upstream connections serve the
    /// clients (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pool: Option<usize>,
    /// With `sessions = "conversation"`: what names a request's conversation,
    /// `"meta:<key>"` (a key of `params._meta`) or `"header:<name>"`.
    /// Default: `"meta:openai/session"`, ChatGPT's conversation id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation_key: Option<String>,
}

/// See [`UpstreamConfig::sessions`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SessionMode {
    Shared,
    Conversation,
    Client,
}

impl SessionMode {
    /// As written in the configuration.
    pub fn as_str(self) -> &'static str {
        match self {
            SessionMode::Shared => "shared",
            SessionMode::Conversation => "conversation",
            SessionMode::Client => "client",
        }
    }
}

/// Most connections a shared pool may hold.
pub const MAX_POOL: usize = 64;

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

/// See [`UpstreamConfig::auth_challenge`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AuthChallenge {
    #[default]
    Http,
    InBand,
}

impl AuthChallenge {
    fn is_http(&self) -> bool {
        *self == AuthChallenge::Http
    }

    /// As written in the configuration.
    pub fn as_str(&self) -> &'static str {
        match self {
            AuthChallenge::Http => "http",
            AuthChallenge::InBand => "in-band",
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
}

/// Overrides from the command line; `None` leaves lower layers in force.
#[derive(Debug, Default, Serialize)]
pub struct Overrides {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub listen: Option<SocketAddr>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub overlays: Option<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preview: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workers: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls_cert: Option<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls_key: Option<PathBuf>,
    #[serde(rename = "upstream", skip_serializing_if = "Option::is_none")]
    pub upstreams: Option<Vec<UpstreamConfig>>,
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("config file {0} does not exist")]
    Missing(PathBuf),
    #[error("{}", .problems.join("\n"))]
    Invalid { problems: Vec<String> },
}

/// Read the layered configuration. `file` is `--config`; without it
/// `config/gateway.toml` is read when present.
pub fn load(
    file: Option<&Path>,
    overrides: &Overrides,
) -> Result<(Config, Option<PathBuf>), ConfigError> {
    let file = match file {
        Some(f) if !f.exists() => return Err(ConfigError::Missing(f.to_path_buf())),
        Some(f) => Some(f.to_path_buf()),
        None => Some(PathBuf::from(DEFAULT_FILE)).filter(|p| p.exists()),
    };
    let text = match &file {
        Some(f) => std::fs::read_to_string(f).map_err(|e| ConfigError::Invalid {
            problems: vec![format!("{}: cannot be read: {e}", f.display())],
        })?,
        None => String::new(),
    };
    let mut doc: toml::Table = toml::from_str(&text).map_err(|e| {
        let at = e.span().map(|s| text[..s.start].lines().count().max(1));
        let file = file
            .as_deref()
            .unwrap_or(Path::new("?"))
            .display()
            .to_string();
        let place = at.map_or(file.clone(), |line| format!("{file}:{line}"));
        ConfigError::Invalid {
            problems: vec![format!("{place}: {}", e.message().trim_end())],
        }
    })?;
    let figment = |doc: &toml::Table| {
        let mut figment = Figment::from(Serialized::defaults(Config::default()));
        if file.is_some() {
            let toml = toml::to_string(doc).unwrap_or_default();
            figment = figment.merge(Toml::string(&toml));
        }
        figment
            .merge(Env::prefixed(ENV_PREFIX).split("__"))
            .merge(Serialized::defaults(overrides))
    };
    // Every problem at once: a key at fault is taken out and the rest read
    // again, as long as each round takes one out.
    let mut said = Vec::new();
    for _ in 0..MAX_PROBLEMS {
        match figment(&doc).extract::<Config>() {
            Ok(config) if said.is_empty() => return Ok((config, file)),
            Ok(_) => break,
            Err(errors) => {
                let mut taken = false;
                for e in errors {
                    let line = problems::from_file(&e)
                        .then(|| problems::key_line(&text, &e.path))
                        .flatten();
                    said.push((
                        line,
                        problems::describe(&e, file.as_deref(), &text, ENV_PREFIX),
                    ));
                    taken |= problems::from_file(&e) && problems::without(&mut doc, &e.path);
                }
                if !taken {
                    break;
                }
            }
        }
    }
    // In the file's order; the environment's after.
    said.sort_by_key(|(line, _)| (line.is_none(), *line));
    Err(ConfigError::Invalid {
        problems: said.into_iter().map(|(_, p)| p).collect(),
    })
}

/// The most problems a configuration is read for.
const MAX_PROBLEMS: usize = 32;

impl Config {
    /// Whether `/preview` is served: `preview` when set, else whether
    /// `listen` is a loopback address.
    pub fn preview_enabled(&self) -> bool {
        self.preview
            .unwrap_or_else(|| self.listen.ip().is_loopback())
    }

    /// How many threads serve connections: `workers`, or one per CPU.
    pub fn worker_count(&self) -> usize {
        match self.workers {
            0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
            n => n,
        }
    }

    /// The warning a non-loopback `listen` address deserves (none on
    /// loopback): whoever reaches the port reaches every upstream.
    pub fn exposure_warning(&self) -> Option<String> {
        (!self.listen.ip().is_loopback()).then(|| {
            format!(
                "listening on {}, a non-loopback address: anyone who can reach it can use every upstream; put authentication in front and set allowed_hosts and allowed_origins",
                self.listen
            )
        })
    }

    /// Check what serde cannot and resolve each upstream's mount. Reports
    /// every problem, each naming its field.
    pub fn mounts(&self) -> Result<Vec<Mount>, ConfigError> {
        let mut problems = Vec::new();
        if let Some(key) = &self.session_key
            && let Err(e) = crate::session::SessionKey::from_hex(key)
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
        match (&self.tls_cert, &self.tls_key) {
            (Some(_), None) => problems.push("tls_key: must be set with tls_cert".into()),
            (None, Some(_)) => problems.push("tls_cert: must be set with tls_key".into()),
            _ => {}
        }
        if self.limits.max_body_bytes == 0 {
            problems.push("limits.max_body_bytes: must be greater than 0".into());
        }
        if self.limits.request_timeout_secs == 0 {
            problems.push("limits.request_timeout_secs: must be greater than 0".into());
        }
        if self.limits.app_member_timeout_secs == 0 {
            problems.push("limits.app_member_timeout_secs: must be greater than 0".into());
        }
        if self.limits.session_reap_interval_secs == 0 {
            problems.push("limits.session_reap_interval_secs: must be greater than 0".into());
        }
        if self.limits.stdio_quiet_session_secs == 0 {
            problems.push("limits.stdio_quiet_session_secs: must be greater than 0".into());
        }
        if self.limits.conversation_idle_secs == 0 {
            problems.push("limits.conversation_idle_secs: must be greater than 0".into());
        }
        if self.limits.header_read_timeout_secs == 0 {
            problems.push("limits.header_read_timeout_secs: must be greater than 0".into());
        }
        if self.limits.idle_connection_secs == 0 {
            problems.push("limits.idle_connection_secs: must be greater than 0".into());
        }
        if self.limits.max_connections == Some(0) {
            problems.push("limits.max_connections: must be greater than 0".into());
        }
        if self.limits.max_header_bytes < MIN_HEADER_BYTES {
            problems.push(format!(
                "limits.max_header_bytes: must be at least {MIN_HEADER_BYTES}"
            ));
        }
        for (field, value) in [
            ("max_message_bytes", self.limits.max_message_bytes),
            ("max_sessions", self.limits.max_sessions),
            (
                "max_in_flight_per_session",
                self.limits.max_in_flight_per_session,
            ),
            ("max_stdio_children", self.limits.max_stdio_children),
            ("max_buffered_bytes", self.limits.max_buffered_bytes),
            ("max_widget_bytes", self.limits.max_widget_bytes),
        ] {
            if value == 0 {
                problems.push(format!("limits.{field}: must be greater than 0"));
            }
        }
        let single = self.upstreams.len() == 1;
        let mut mounts: Vec<Mount> = Vec::new();
        for (i, up) in self.upstreams.iter().enumerate() {
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
        if let Err(errs) = app::resolve(&self.apps, &mount_refs(&mounts), is_reserved_path) {
            problems.extend(errs);
        }
        if problems.is_empty() {
            Ok(mounts)
        } else {
            Err(ConfigError::Invalid { problems })
        }
    }

    /// The `[[app]]` endpoints over `mounts` (those [`Config::mounts`]
    /// returned), each problem naming its field.
    pub fn apps(&self, mounts: &[Mount]) -> Result<Vec<App>, ConfigError> {
        app::resolve(&self.apps, &mount_refs(mounts), is_reserved_path)
            .map_err(|problems| ConfigError::Invalid { problems })
    }
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
    let longest = crate::session::id::MAX_MOUNT_NAME;
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
    match transport {
        Some(transport) if errs.is_empty() => Ok(Mount {
            name: up.name.clone(),
            path,
            transport,
            forward_headers,
            auth_challenge: up.auth_challenge,
            tls,
            sessions,
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
fn is_reserved_path(path: &str) -> bool {
    let path = path.trim_end_matches('/');
    matches!(path, "/healthz" | "/readyz" | "/metrics")
        || path == "/preview"
        || path.starts_with("/preview/")
        || path.starts_with("/.well-known/")
}

#[cfg(test)]
mod tests;
