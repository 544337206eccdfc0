//! The gateway's shared state, composed from what each part owns: the mounts,
//! the sessions, the upstream client and children, the overlays in force,
//! OAuth, metrics and readiness. Built once at start; every connection holds
//! it. The parts do not know of this type: it depends on them, never the
//! reverse (only the request path that joins them takes it: the server,
//! the stack, the router, the endpoints and the relay).
//!
//! - `build`: the gateway made from its configuration;
//! - `connect`: upstream sessions and connections opened for clients;
//! - `ops`: readiness, metrics, background work and shutdown.

mod build;
mod connect;
mod ops;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::health::Readiness;
use crate::live::Live;
use crate::metrics::Metrics;
use crate::middleware::origin_policy::OriginPolicy;
use crate::oauth::passthrough::{AuthState, PrmTarget};
use crate::upstream_tools::UpstreamTools;
use mcp_ui_model::config::{Limits, Mount, Transport};
use mcp_ui_model::session_id::{OpenedIds, SessionKey};
use mcp_ui_upstream::session::pool::Pool;
use mcp_ui_upstream::session::{InFlight, Owned};
use mcp_ui_upstream::telemetry::Tracer;
use mcp_ui_upstream::upstream::budget::Budget;
use mcp_ui_upstream::upstream::client::Client;
use mcp_ui_upstream::upstream::messages::MessageSession;
use mcp_ui_upstream::upstream::stdio::{Children, Restarts};

/// Everything a request handler needs, shared by all connections.
pub struct Gateway {
    pub mounts: Vec<MountState>,
    pub(crate) by_path: HashMap<String, usize>,
    /// The `[[app]]` endpoints, each combining several mounts.
    pub apps: Vec<Arc<crate::apps::AppState>>,
    pub key: SessionKey,
    /// Session ids `key` opened recently.
    pub(crate) opened_ids: OpenedIds,
    /// Identifies this process in the ids of sessions it owns.
    pub instance: [u8; 16],
    pub client: Client,
    pub limits: Limits,
    pub(crate) origin_policy: Arc<OriginPolicy>,
    /// Sessions this process owns for clients that own their connection
    /// (stdio and legacy SSE upstreams, `sessions = "client"`).
    pub sessions: Arc<Owned<MessageSession>>,
    /// By mount index: the connections clients share, and their sessions.
    pub pools: Arc<Vec<Pool>>,
    /// Streamable HTTP sessions opened again in place of forgotten ones.
    pub reopened: mcp_ui_upstream::session::reopened::Reopened,
    /// Requests waiting for an upstream, per client session.
    pub in_flight: Arc<InFlight>,
    /// 2026-07-28 requests of 2025 upstreams waiting for the client's
    /// input (`relay::rounds`).
    pub(crate) rounds: Arc<Rounds>,
    /// The overlays in force.
    pub live: Arc<Live>,
    /// The tool names each overlaid upstream listed, which render tools
    /// yield to.
    pub upstream_tools: Arc<UpstreamTools>,
    pub shutdown: CancellationToken,
    /// The stdio children running, against `limits.max_stdio_children`.
    pub children: Arc<Children>,
    /// Memory held by answers read whole, against `limits.max_buffered_bytes`.
    pub buffers: Arc<Budget>,
    /// OAuth: upstream metadata locations and the rewritten documents.
    pub auth: Arc<AuthState>,
    /// The issuers of the endpoints that require a token (`[auth]`).
    pub resource_server: crate::oauth::resource_server::ResourceServer,
    /// The gateway as an authorization server (`[authorization_server]`).
    pub authorization_server:
        Option<Arc<crate::oauth::authorization_server::state::AuthorizationServer>>,
    /// Revivals in flight: of a session this process owns by (mount, the
    /// instance and number its id names), of an HTTP upstream's session by
    /// (mount, the upstream id): one at a time each.
    pub reviving: mcp_ui_upstream::session::Flights<(usize, [u8; 16], u64)>,
    pub reopening: mcp_ui_upstream::session::Flights<(usize, String)>,
    /// Whether `/preview` is served (`Config::preview_enabled`).
    pub preview: bool,
    /// The token answered at `/.well-known/openai-apps-challenge`.
    pub openai_apps_challenge: Option<Arc<str>>,
    /// Request counters and latency histograms, served at `/metrics`.
    pub metrics: Arc<Metrics>,
    /// The upstreams' last readiness, served at `/readyz`.
    pub readiness: Readiness,
    /// Trace export, when configured (`[telemetry]`, `OTEL_*`).
    pub telemetry: Option<Arc<Tracer>>,
}

/// The requests set aside for their round.
pub(crate) type Rounds = crate::pending::parked::Parked<Box<crate::pending::round::Parked>>;

/// Most requests waiting for their client's input at once: past it a new
/// round is refused (nobody else's is dropped for it); each caller's are
/// bounded too (`limits.max_rounds_per_caller`).
pub(super) const MAX_ROUNDS: usize = 4096;

/// One mount: where it is served and what it fronts.
pub struct MountState {
    /// Its place in [`Gateway::mounts`] (and in per-mount tables).
    pub index: usize,
    pub config: Mount,
    /// A stdio mount's crash record and restart backoff.
    pub restarts: Arc<Restarts>,
    /// The widget domain Claude expects for this mount, derived from its
    /// public endpoint URL (`public_url` and the path); `None` without a
    /// `public_url`.
    pub claude_domain: Option<Arc<str>>,
    /// Where in-band challenges in its upstream's tool results point.
    pub(crate) result_target: Option<Arc<crate::oauth::passthrough::ResultTarget>>,
}

impl MountState {
    /// Whether its upstream is reached through sessions this process owns
    /// (stdio, legacy SSE) rather than request by request.
    pub(crate) fn is_message(&self) -> bool {
        !matches!(self.config.transport, Transport::Http { .. })
    }
}

impl Gateway {
    pub(crate) fn request_timeout(&self) -> Duration {
        Duration::from_secs(self.limits.request_timeout_secs)
    }

    /// How long an app waits for one member's `initialize` or listing page.
    pub(crate) fn app_member_timeout(&self) -> Duration {
        Duration::from_secs(self.limits.app_member_timeout_secs)
    }

    /// The mount served at `path` (a trailing `/` does not matter).
    pub(crate) fn mount_at(&self, path: &str) -> Option<&MountState> {
        let i = self
            .by_path
            .get(path)
            .or_else(|| self.by_path.get(path.trim_end_matches('/')))?;
        self.mounts.get(*i)
    }

    /// The app served at `path` (a trailing `/` does not matter).
    pub(crate) fn app_at(&self, path: &str) -> Option<&Arc<crate::apps::AppState>> {
        let path = match path.trim_end_matches('/') {
            "" => "/",
            p => p,
        };
        self.apps.iter().find(|a| a.config.path == path)
    }

    /// The mount a protected-resource metadata path names.
    pub(crate) fn prm_mount(&self, target: PrmTarget<'_>) -> Option<&MountState> {
        let i = match target {
            PrmTarget::Bare if self.mounts.len() == 1 => Some(0),
            PrmTarget::Bare => self.by_path.get("/").copied(),
            PrmTarget::Mount(path) => self.by_path.get(path).copied(),
        }?;
        self.mounts.get(i)
    }
}
