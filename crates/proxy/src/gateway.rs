//! The gateway's shared state, composed from what each part owns: the mounts,
//! the sessions, the upstream client and children, the overlays in force,
//! OAuth, metrics and readiness. Built once at start; every connection holds
//! it. The parts do not know of this type: it depends on them, never the
//! reverse (only the request path that joins them takes it: the server,
//! the stack, the router, the endpoints and the relay).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use rand::RngCore;
use tokio_util::sync::CancellationToken;

use crate::health::{Readiness, Upstreams};
use crate::live::{LIST_CHANGED, Live};
use crate::metrics::Metrics;
use crate::middleware::origin_policy::OriginPolicy;
use crate::oauth::passthrough::{AuthState, PrmTarget};
use crate::upstream_tools::UpstreamTools;
use mcp_ui_model::config::{Config, ConfigError, Limits, Mount, Resolved, Transport};
use mcp_ui_model::outcome::Failure;
use mcp_ui_model::session_id::{Hello, OpenedIds, SessionKey};
use mcp_ui_upstream::session::pool::{Conn, Pool, SlotKey};
use mcp_ui_upstream::session::{InFlight, Owned};
use mcp_ui_upstream::telemetry::Tracer;
use mcp_ui_upstream::upstream::budget::Budget;
use mcp_ui_upstream::upstream::handshake;
use mcp_ui_upstream::upstream::messages::{EndedBy, MessageSession, Mux};
use mcp_ui_upstream::upstream::stdio::{Children, Fault, Restarts, Supervisor};
use mcp_ui_upstream::upstream::{self, client::Client};
use mcp_ui_wire::protocol::{self, Era};

/// The longest a request waits for a crashed stdio command's next start.
const MAX_BACKOFF_WAIT: Duration = Duration::from_secs(5);

/// Everything a request handler needs, shared by all connections.
pub struct Gateway {
    pub mounts: Vec<MountState>,
    pub(crate) by_path: HashMap<String, usize>,
    /// The `[[app]]` endpoints, each combining several mounts.
    pub apps: Vec<Arc<crate::app_endpoint::state::AppState>>,
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
    pub auth: AuthState,
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

/// The requests set aside for their round, type-erased (the relay knows
/// what they are).
pub(crate) type Rounds = crate::relay::parked::Parked<Box<dyn std::any::Any + Send>>;

/// Most requests waiting for their client's input at once: past it a new
/// round is refused (nobody else's is dropped for it); each caller's are
/// bounded too (`limits.max_rounds_per_caller`).
const MAX_ROUNDS: usize = 4096;

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
}

impl MountState {
    /// Whether its upstream is reached through sessions this process owns
    /// (stdio, legacy SSE) rather than request by request.
    pub(crate) fn is_message(&self) -> bool {
        !matches!(self.config.transport, Transport::Http { .. })
    }
}

/// The request headers a held HTTP session carries: `Authorization` and the
/// mount's forwarded headers, as the request that opened it sent them.
fn credentials(
    mount: &Mount,
    headers: &http::HeaderMap,
    claimed: &http::HeaderMap,
) -> http::HeaderMap {
    let mut out = http::HeaderMap::new();
    for name in std::iter::once(&http::header::AUTHORIZATION).chain(&mount.forward_headers) {
        for v in headers.get_all(name) {
            let mut v = v.clone();
            v.set_sensitive(true);
            out.append(name.clone(), v);
        }
    }
    // The verified caller's claims, never a client's header of their names.
    if let Some(auth) = &mount.auth {
        for (name, _) in &auth.claims_to_headers {
            out.remove(name);
        }
    }
    for (name, v) in claimed {
        let mut v = v.clone();
        v.set_sensitive(true);
        out.insert(name.clone(), v);
    }
    out
}

/// How long a new stdio process waits for the place of one ended for it:
/// past SIGTERM's grace, its group is killed.
const CHILD_PLACE_WAIT: Duration = Duration::from_secs(3);

/// Each mount's pool, holding what `limits` allows: per mount, per caller,
/// and, for every mount together, as many upstream connections as client
/// connections (`max_connections`: half the descriptors are theirs).
fn pools(
    mounts: &[mcp_ui_model::config::Mount],
    limits: &mcp_ui_model::config::Limits,
) -> Vec<Pool> {
    let total = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let cap = limits
        .max_connections
        .unwrap_or_else(crate::server::fd::default_max_connections);
    mounts
        .iter()
        .map(|m| {
            let room = mcp_ui_upstream::session::pool::Room {
                per_mount: limits.max_mount_connections,
                per_caller: limits.max_caller_connections,
                total: total.clone(),
                cap,
            };
            Pool::with_room(&m.name, m.sessions.pool, room, limits.max_client_sessions)
        })
        .collect()
}

/// Claude's widget domain for the mount at `path` behind `public_url`: the
/// hash of its public endpoint URL, the same URL its protected-resource
/// metadata names.
fn claude_domain(public_url: Option<&str>, path: &str) -> Option<Arc<str>> {
    let base = public_url?.trim_end_matches('/');
    let url = crate::oauth::passthrough::resource_url(base, path);
    Some(mcp_ui_overlay::host::claude_domain(&url).into())
}

impl Gateway {
    pub fn new(
        config: &Config,
        resolved: Resolved,
        live: Arc<Live>,
    ) -> Result<Arc<Self>, ConfigError> {
        let Resolved {
            mounts,
            apps,
            authorization_server: authorization_config,
        } = resolved;
        let key = match &config.session_key {
            Some(hex) => SessionKey::from_hex(hex).map_err(|e| ConfigError::Invalid {
                problems: vec![format!("session_key: {e}")],
            })?,
            None => SessionKey::random(),
        };
        let connect_timeout = Duration::from_secs(config.limits.connect_timeout_secs);
        let authorization_server = match authorization_config {
            Some(a) => {
                if config.session_key.is_none() {
                    tracing::warn!(
                        "session_key is unset: codes, refresh tokens and registered clients are sealed with a key made at start; they stop working when this process ends, and replicas do not accept each other's"
                    );
                }
                Some(Arc::new(
                    crate::oauth::authorization_server::state::AuthorizationServer::new(
                        a,
                        key.clone(),
                        connect_timeout,
                    )
                    .map_err(|problems| ConfigError::Invalid { problems })?,
                ))
            }
            None => None,
        };
        let resource_server = crate::oauth::resource_server::ResourceServer::new(
            connect_timeout,
            mounts
                .iter()
                .filter_map(|m| m.auth.as_ref())
                .chain(apps.iter().filter_map(|a| a.auth.as_ref())),
            authorization_server
                .as_ref()
                .map(|a| (a.issuer().to_owned(), a.key_set().clone())),
        )
        .map_err(|problems| ConfigError::Invalid { problems })?;
        let mut instance = [0u8; 16];
        rand::rng().fill_bytes(&mut instance);
        let metrics = Metrics::new(mounts.iter().map(|m| m.name.clone()));
        let by_path = mounts
            .iter()
            .enumerate()
            .map(|(i, m)| (m.path.clone(), i))
            .collect();
        let limits = &config.limits;
        let apps = apps
            .into_iter()
            .map(|app| {
                let domain = claude_domain(config.public_url.as_deref(), &app.path);
                Arc::new(crate::app_endpoint::state::AppState::new(app).with_claude_domain(domain))
            })
            .collect();
        let mounts_for_client = mounts.clone();
        let telemetry =
            Tracer::from_config(&config.telemetry).map_err(|e| ConfigError::Invalid {
                problems: vec![e.to_string()],
            })?;
        Ok(Arc::new(Gateway {
            telemetry,
            sessions: Arc::new(Owned::new(mounts.len(), limits.max_sessions)),
            pools: Arc::new(pools(&mounts, limits)),
            reopened: Default::default(),
            readiness: Readiness::new(mounts.len()),
            mounts: mounts
                .into_iter()
                .enumerate()
                .map(|(index, mount)| MountState {
                    index,
                    claude_domain: claude_domain(config.public_url.as_deref(), &mount.path),
                    config: mount,
                    restarts: Arc::default(),
                })
                .collect(),
            by_path,
            apps,
            key,
            opened_ids: Default::default(),
            instance,
            client: upstream::client::client_for(
                Duration::from_secs(limits.connect_timeout_secs),
                &mounts_for_client,
            )
            .map_err(|problems| ConfigError::Invalid { problems })?,
            limits: limits.clone(),
            origin_policy: Arc::new(
                OriginPolicy::new(config).with_open_paths(
                    authorization_server
                        .as_ref()
                        .map(|a| a.paths())
                        .unwrap_or_default(),
                ),
            ),
            in_flight: Arc::default(),
            rounds: Arc::new(Rounds::new(MAX_ROUNDS, limits.max_rounds_per_caller)),
            live,
            upstream_tools: Arc::default(),
            shutdown: CancellationToken::new(),
            children: Children::new(limits.max_stdio_children),
            buffers: Budget::new(limits.max_buffered_bytes),
            auth: AuthState::new(config.public_url.clone(), config.tls_cert.is_some()),
            resource_server,
            authorization_server,
            reviving: Default::default(),
            reopening: Default::default(),
            preview: config.preview_enabled(),
            openai_apps_challenge: config.openai_apps_challenge.as_deref().map(Arc::from),
            metrics: Arc::new(metrics),
        }))
    }

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
    pub(crate) fn app_at(&self, path: &str) -> Option<&Arc<crate::app_endpoint::state::AppState>> {
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

    /// Start a new client session on a message-oriented upstream and register
    /// it; its number.
    pub async fn open_session(
        &self,
        mount: &MountState,
    ) -> Result<(u64, Arc<MessageSession>), Failure> {
        self.sessions.check_room()?;
        // Boxed here and below: starting an upstream session has a large
        // state, which every relayed request would otherwise carry.
        let session = Box::pin(self.start(mount, None)).await?;
        let id = self.sessions.insert(mount.index, session.clone());
        Ok((id, session))
    }

    /// Open a client session again in place of session `id` of process
    /// `instance`, whose connection is gone: a new connection, initialized
    /// as the client's id says the client initialized it.
    pub(crate) async fn revive_session(
        &self,
        mount: &MountState,
        instance: [u8; 16],
        id: u64,
        hello: &Hello,
    ) -> Result<Arc<MessageSession>, Failure> {
        self.sessions.check_room()?;
        let session = Box::pin(self.start(mount, None)).await?;
        let params = hello.initialize_params(protocol::LATEST_HANDSHAKE);
        if let Err(e) = handshake::initialize(&session, &params, self.handshake_timeout()).await {
            session.end(EndedBy::Unopened, "initialize failed");
            return Err(e);
        }
        self.sessions
            .insert_revived(mount.index, instance, id, session.clone());
        self.pools[mount.index].count_revived();
        tracing::info!(upstream = %mount.config.name, "a session whose connection was gone is opened again for its client");
        Ok(session)
    }

    /// The connection of `mount` that `key` names, started (and initialized,
    /// for the handshake era) when there is none; `headers` are the
    /// request's (a held HTTP session carries its credentials).
    pub async fn connect(
        &self,
        mount: &MountState,
        key: SlotKey,
        owner: u64,
        headers: &http::HeaderMap,
        claimed: &crate::oauth::resource_server::Claimed,
    ) -> Result<Conn, Failure> {
        let pool = &self.pools[mount.index];
        pool.connect(key, owner, |again| async move {
            let session = match &mount.config.transport {
                Transport::Http { url } => {
                    let pools = Arc::downgrade(&self.pools);
                    let index = mount.index;
                    let on_reopen: upstream::held::OnReopen = Arc::new(move || {
                        if let Some(p) = pools.upgrade() {
                            p[index].count_revived();
                        }
                    });
                    upstream::held::open(
                        &mount.config.name,
                        url,
                        &self.limits,
                        &self.client,
                        Some(pool.mux.clone()),
                        credentials(&mount.config, headers, &claimed.headers),
                        Some(on_reopen),
                    )
                }
                _ => {
                    let start = || self.start_with(mount, Some(pool.mux.clone()), &claimed.env);
                    match Box::pin(start()).await {
                        Err(Failure::Upstream(mcp_ui_model::outcome::UpstreamError::ChildLimit { .. }))
                            if self.end_idlest_child().await =>
                        {
                            Box::pin(start()).await?
                        }
                        other => other?,
                    }
                }
            };
            let handshake = match key.era {
                Era::Handshake => {
                    // A conversation's connection serves whoever takes part,
                    // each asked only what it declared.
                    let caps = match key.lane {
                        mcp_ui_upstream::session::pool::Lane::Conversation(_) => mcp_ui_model::session_id::Caps::ALL,
                        _ => key.caps,
                    };
                    let hello = Hello {
                        caps,
                        ..Hello::gateway(protocol::LATEST_HANDSHAKE)
                    };
                    let params = hello.initialize_params(protocol::LATEST_HANDSHAKE);
                    match handshake::initialize(&session, &params, self.handshake_timeout()).await {
                        Ok(h) => Some(Arc::new(h)),
                        Err(e) => {
                            session.end(EndedBy::Unopened, "initialize failed");
                            return Err(e);
                        }
                    }
                }
                Era::Envelope => None,
            };
            if again {
                tracing::info!(upstream = %mount.config.name, lane = ?key.lane, "a shared connection that had ended is started again");
            }
            Ok(Conn { session, handshake })
        })
        .await
    }

    /// At `limits.max_stdio_children`: end the least recently used idle
    /// stdio process of a caller's own, on any mount, and wait (a moment)
    /// for its place; whether one came free.
    async fn end_idlest_child(&self) -> bool {
        let idlest = self
            .pools
            .iter()
            .zip(&self.mounts)
            .filter(|(_, m)| matches!(m.config.transport, Transport::Stdio(_)))
            .filter_map(|(p, _)| Some((p.idlest()?, p)))
            .max_by_key(|(idle, _)| *idle);
        let Some((_, pool)) = idlest else {
            return false;
        };
        if !pool.end_idlest("a new stdio process (limits.max_stdio_children)") {
            return false;
        }
        // Its place is given back once its process group has ended.
        let until = tokio::time::Instant::now() + CHILD_PLACE_WAIT;
        while self.children.running() >= self.limits.max_stdio_children {
            if tokio::time::Instant::now() >= until {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        true
    }

    /// How long the gateway's own opening of a connection may take.
    pub(crate) fn handshake_timeout(&self) -> Duration {
        self.request_timeout()
    }

    async fn start(
        &self,
        mount: &MountState,
        mux: Option<Arc<Mux>>,
    ) -> Result<Arc<MessageSession>, Failure> {
        self.start_with(mount, mux, &[]).await
    }

    /// [`Self::start`], a stdio child getting `env` besides the mount's
    /// (a verified caller's claims, for a process of its own).
    async fn start_with(
        &self,
        mount: &MountState,
        mux: Option<Arc<Mux>>,
        env: &[(String, String)],
    ) -> Result<Arc<MessageSession>, Failure> {
        let mut config = std::borrow::Cow::Borrowed(&mount.config);
        if let (false, Transport::Stdio(_)) = (env.is_empty(), &mount.config.transport)
            && let Transport::Stdio(cmd) = &mut config.to_mut().transport
        {
            cmd.env.extend(env.iter().cloned());
        }
        let sup = Supervisor {
            children: self.children.clone(),
            restarts: mount.restarts.clone(),
        };
        let open = || {
            upstream::open_supervised(&config, &self.limits, &self.client, mux.clone(), Some(&sup))
        };
        // A command that crashed a moment ago may start again shortly: a
        // request waits that out (within its own time) rather than fail.
        let bound = tokio::time::Instant::now() + MAX_BACKOFF_WAIT.min(self.request_timeout());
        loop {
            match open().await {
                Err(mcp_ui_model::outcome::UpstreamError::Backoff { retry_in_ms, .. })
                    if tokio::time::Instant::now() + Duration::from_millis(retry_in_ms) < bound =>
                {
                    tokio::time::sleep(Duration::from_millis(retry_in_ms.max(1))).await;
                }
                other => return Ok(other?),
            }
        }
    }

    /// The mounts whose stdio command has been crashing, by name, with the
    /// crash record; a fault whose `retry_in` is set is holding off starts.
    pub fn upstream_faults(&self) -> Vec<(String, Fault)> {
        self.mounts
            .iter()
            .filter_map(|m| Some((m.config.name.clone(), m.restarts.fault()?)))
            .collect()
    }

    /// What `/readyz` probes: every mount, with its crash record.
    pub fn upstreams(&self) -> Upstreams<'_> {
        Upstreams {
            mounts: self.mounts.iter().map(|m| &m.config).collect(),
            limits: &self.limits,
            faults: self.mounts.iter().map(|m| m.restarts.fault()).collect(),
        }
    }

    /// The `/metrics` exposition: the counters, with the sessions, children,
    /// reloads and readiness as they are now.
    pub async fn metrics_text(&self) -> String {
        let (reloads_ok, reloads_failed) = self.live.reload_counts();
        let owned = self.sessions.open_by_mount();
        let mut sessions_open = owned.clone();
        let (mut client_sessions, mut revived) = (Vec::new(), Vec::new());
        for (i, pool) in self.pools.iter().enumerate() {
            let (live, _, again) = pool.counts();
            sessions_open[i] += live;
            client_sessions.push((owned[i] + pool.peers().len()) as u64);
            revived.push(again);
        }
        let snapshot = crate::metrics::Snapshot {
            upstream_connections: sessions_open.iter().map(|n| *n as u64).collect(),
            client_sessions,
            processes_started: self.mounts.iter().map(|m| m.restarts.started()).collect(),
            sessions_revived: revived,
            sessions_open,
            stdio_children: self.children.running(),
            reloads_ok,
            reloads_failed,
            upstream_up: self.readiness.last(),
            tls_upstream_handshakes: self.client.tls_handshakes(),
            otlp_spans: self.telemetry.as_ref().map(|t| t.counts()),
        };
        self.metrics.render(&snapshot)
    }

    /// End every session this process owns (children are killed).
    pub async fn close_all(&self, reason: &str) {
        self.sessions.close_all(reason);
        for pool in self.pools.iter() {
            pool.close_all(reason);
        }
    }

    /// Start the background work of a serving gateway: reaping idle
    /// sessions and announcing overlay changes. Both end with `shutdown`.
    pub(crate) fn spawn_background(self: &Arc<Self>) {
        let ttl = Duration::from_secs(self.limits.session_idle_secs);
        let sessions = Arc::downgrade(&self.sessions);
        let every = Duration::from_secs(self.limits.session_reap_interval_secs);
        let quiet_ttl = Duration::from_secs(self.limits.stdio_quiet_session_secs);
        let quiet = self
            .mounts
            .iter()
            .map(|m| matches!(m.config.transport, Transport::Stdio(_)).then_some(quiet_ttl))
            .collect();
        let limits = mcp_ui_upstream::session::reaper::Limits {
            ttl,
            quiet,
            conversation: Duration::from_secs(self.limits.conversation_idle_secs),
        };
        let pools = Arc::downgrade(&self.pools);
        mcp_ui_upstream::session::reaper::spawn(
            sessions,
            pools,
            every,
            limits,
            self.shutdown.clone(),
        );
        self.spawn_change_announcer();
    }

    /// Announce overlay changes to the sessions this process owns (HTTP
    /// upstreams' GET streams subscribe to [`Live`] themselves).
    fn spawn_change_announcer(self: &Arc<Self>) {
        let gw = Arc::downgrade(self);
        let stop = self.shutdown.clone();
        let mut changes = self.live.subscribe();
        // Detached: it holds a weak reference and ends with `stop`.
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    changed = changes.changed() => if changed.is_err() { return },
                    _ = stop.cancelled() => return,
                }
                let Some(gw) = gw.upgrade() else { return };
                gw.compare_overlays();
                gw.sessions.announce(&LIST_CHANGED).await;
                for pool in gw.pools.iter() {
                    for peer in pool.peers().all() {
                        for m in LIST_CHANGED {
                            peer.send(bytes::Bytes::from_static(m));
                        }
                    }
                }
            }
        });
    }

    /// After a reload: the new overlays compared with each upstream's last
    /// listing (as `check` would compare them), each finding said once.
    fn compare_overlays(&self) {
        let overlays = self.live.load();
        for m in &self.mounts {
            self.upstream_tools.compare(&m.config.name, &overlays);
        }
    }
}
