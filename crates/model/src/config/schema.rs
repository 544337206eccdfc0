//! The configuration's schema: every setting as written in the file, the
//! environment or on the command line, with its default. Serde reads these;
//! what serde cannot check is checked when they become mounts (`validate`).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::app::AppConfig;

/// The whole configuration, as read.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// Address the gateway listens on. Loopback by default.
    pub listen: SocketAddr,
    /// 64 hexadecimal characters sealing session ids. Give every replica the
    /// same key; unset means a random key per process.
    pub session_key: Option<String>,
    /// Extra values accepted in the `Host` header. With a loopback `listen`,
    /// loopback names are always accepted, and only they by default
    /// (DNS-rebinding protection). A refused `Host` is logged once.
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
    /// The domain-verification token ChatGPT's app submission gives, served
    /// as it is at `/.well-known/openai-apps-challenge` (ChatGPT looks for it
    /// at the root of the MCP URL's host, whatever the path; every mount and
    /// app of the gateway shares that origin). Unset: that path is 404.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub openai_apps_challenge: Option<String>,
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
    /// Endpoints combining several upstreams (`[[app]]`, see [`app`](super::app)).
    #[serde(rename = "app", skip_serializing_if = "Vec::is_empty")]
    pub apps: Vec<AppConfig>,
    /// The gateway as an OAuth 2.1 resource server for every mount and app
    /// (each may override it or opt out; see [`auth`](super::auth)). Unset:
    /// no token is asked for, and a client's is passed to its upstream.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auth: Option<super::auth::AuthConfig>,
    /// The gateway as the hosts' authorization server, signing users in with
    /// an identity provider (see [`authorization`](super::authorization)).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub authorization_server: Option<super::authorization::AuthorizationServerConfig>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            listen: SocketAddr::from(([127, 0, 0, 1], 8787)),
            session_key: None,
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            public_url: None,
            openai_apps_challenge: None,
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
            auth: None,
            authorization_server: None,
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
    /// Most upstream connections one mount holds for callers rather than
    /// for client sessions of their own: conversations (a stdio process or
    /// a connection each), held HTTP sessions (one per caller's
    /// credentials) and the shared pool's places. At the limit the least
    /// recently used idle one is ended for a new one; when every one has a
    /// request in flight the new one is refused with 503 and `Retry-After`.
    pub max_mount_connections: usize,
    /// Most of those one caller holds on one mount (a caller: the subject
    /// the gateway verified and the credentials it forwards, `Authorization`
    /// and `forward_headers`; callers with none are one caller). At the
    /// limit the caller's own least recently used idle one is ended for its
    /// new one, so one caller's many never push out another's.
    pub max_caller_connections: usize,
    /// Most 2026-07-28 requests one caller (as for `max_caller_connections`)
    /// may have waiting for its client's input (`input_required` rounds)
    /// on one gateway; past it, its next round is refused with 429 and
    /// `Retry-After`.
    pub max_rounds_per_caller: usize,
    /// Most client sessions a mount's shared connections keep state for
    /// (what each declared, its log level, messages kept for its GET
    /// stream); beyond, the least recently used with no GET stream open are
    /// forgotten, and go on with what their session id carries.
    pub max_client_sessions: usize,
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
pub(crate) const MIN_HEADER_BYTES: usize = 8192;

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
            max_mount_connections: 128,
            max_caller_connections: 32,
            max_rounds_per_caller: 32,
            max_client_sessions: 16 * 1024,
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
    /// For clients of the 2026-07-28 revision: how long (milliseconds) they
    /// may reuse this upstream's listings and reads (`ttlMs`) when the
    /// upstream does not say. Default 0: the gateway cannot know how long
    /// an upstream's answers stay true. At most a day.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_ttl_ms: Option<u64>,
    /// With `cache_ttl_ms`: who may reuse them (`cacheScope`), `"private"`
    /// (the same authorization context only; the default, since answers may
    /// depend on the credentials the gateway forwards) or `"public"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<mcp_ui_wire::protocol::CacheScope>,
    /// What callers need to reach this upstream: `false` for anyone, a
    /// table overriding `[auth]`'s settings. Default: `[auth]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth: Option<super::auth::AuthSetting>,
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
pub(crate) const MAX_POOL: usize = 64;

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
}
