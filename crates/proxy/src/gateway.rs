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
use crate::oauth::OAuth;
use crate::oauth::passthrough::PrmTarget;
use crate::pending::Pending;
use crate::upstream_tools::UpstreamTools;
use mcp_ui_model::config::{Limits, Mount, Transport};
use mcp_ui_model::session_id::{OpenedIds, SessionKey};
use mcp_ui_upstream::telemetry::Tracer;
use mcp_ui_upstream::upstream::stdio::Restarts;
use mcp_ui_upstream::upstreams::Upstreams;

/// Everything a request handler needs, shared by all connections: each
/// feature's handle, composed.
pub struct Gateway {
    pub mounts: Vec<MountState>,
    pub(crate) by_path: HashMap<String, usize>,
    /// The `[[app]]` endpoints, each combining several mounts.
    pub apps: Vec<Arc<crate::apps::AppState>>,
    /// The sealed session ids: their key, the ids it opened recently, this
    /// process's own number in the ids of sessions it owns.
    pub ids: Ids,
    pub limits: Limits,
    pub(crate) origin_policy: Arc<OriginPolicy>,
    /// What the gateway holds of its upstreams: the HTTP client, the
    /// sessions it owns, the connections sessions share, the stdio
    /// children, the memory of answers read whole.
    pub upstreams: Upstreams,
    /// Requests in progress: places in flight, rounds set aside, sessions
    /// being opened again.
    pub pending: Pending,
    /// The overlays in force.
    pub live: Arc<Live>,
    /// The tool names each overlaid upstream listed, which render tools
    /// yield to.
    pub upstream_tools: Arc<UpstreamTools>,
    pub shutdown: CancellationToken,
    /// The gateway's three OAuth roles.
    pub oauth: OAuth,
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

/// The sealed session ids a gateway gives and opens.
pub struct Ids {
    pub key: SessionKey,
    /// Session ids `key` opened recently.
    pub(crate) opened: OpenedIds,
    /// Identifies this process in the ids of sessions it owns.
    pub instance: [u8; 16],
}

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
