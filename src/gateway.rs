//! The gateway's shared state: its mounts, the session key, the HTTP client,
//! and the sessions this process owns (stdio children and legacy SSE
//! connections). HTTP-upstream sessions live only in their sealed ids.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rand::RngCore;
use tokio_util::sync::CancellationToken;

use crate::config::{Config, ConfigError, Limits, Mount, Transport};
use crate::live::Live;
use crate::session::SessionKey;
use crate::upstream::messages::MessageSession;
use crate::upstream::{self, UpstreamError};

/// Everything a request handler needs, shared by all connections.
pub struct Gateway {
    pub mounts: Vec<MountState>,
    pub by_path: HashMap<String, usize>,
    pub key: SessionKey,
    /// Session ids `key` opened recently.
    pub opened_ids: crate::session::OpenedIds,
    /// Identifies this process in the ids of sessions it owns.
    pub instance: [u8; 16],
    pub client: upstream::http::Client,
    pub limits: Limits,
    pub hosts: crate::middleware::host::HostPolicy,
    pub sessions: Registry,
    /// The overlays in force.
    pub live: Arc<Live>,
    /// The tool names each overlaid upstream listed, which render tools
    /// yield to.
    pub upstream_tools: Arc<UpstreamTools>,
    pub shutdown: CancellationToken,
    /// The stdio children running, against `limits.max_stdio_children`.
    pub children: Arc<upstream::stdio::Children>,
    /// Requests waiting for an upstream, per client session.
    pub in_flight: Arc<InFlight>,
    /// OAuth: upstream metadata locations and the rewritten documents.
    pub auth: crate::auth::AuthState,
    /// Whether `/preview` is served (`Config::preview_enabled`).
    pub preview: bool,
    /// Request counters and latency histograms, served at `/metrics`.
    pub metrics: Arc<crate::metrics::Metrics>,
    /// The upstreams' last readiness, served at `/readyz`.
    pub readiness: crate::health::Readiness,
}

/// The tool names each upstream (with overlays) last listed, as seen in the
/// `tools/list` responses passing through: a render tool whose name the
/// upstream takes is dropped from listings and its calls go upstream.
#[derive(Debug, Default)]
pub struct UpstreamTools {
    by_mount: Mutex<HashMap<String, HashSet<String, foldhash::fast::RandomState>>>,
}

impl UpstreamTools {
    /// Whether `mount`'s upstream listed a tool called `name`.
    pub fn has(&self, mount: &str, name: &str) -> bool {
        let map = self.by_mount.lock().unwrap();
        map.get(mount).is_some_and(|names| names.contains(name))
    }

    /// Records one `tools/list` page; the first page replaces what was known.
    pub fn record(&self, mount: &str, first_page: bool, names: Vec<String>) {
        let mut map = self.by_mount.lock().unwrap();
        let known = map.entry(mount.to_owned()).or_default();
        if first_page {
            // The same listing again (the usual case): nothing to change.
            if known.len() == names.len() && names.iter().all(|n| known.contains(n)) {
                return;
            }
            known.clear();
        }
        known.extend(names);
    }
}

pub struct MountState {
    pub mount: Mount,
    /// A stdio mount's crash record and restart backoff.
    pub restarts: Arc<upstream::stdio::Restarts>,
    /// The session shared by sessionless (2026-07-28) clients of a
    /// message-oriented upstream, started on first use.
    shared: tokio::sync::Mutex<Option<Arc<MessageSession>>>,
}

#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("this gateway already serves {0} sessions (limits.max_sessions)")]
    Full(usize),
    #[error(transparent)]
    Upstream(#[from] UpstreamError),
}

impl Gateway {
    pub fn new(
        config: &Config,
        mounts: Vec<Mount>,
        live: Arc<Live>,
    ) -> Result<Arc<Self>, ConfigError> {
        let key = match &config.session_key {
            Some(hex) => SessionKey::from_hex(hex).map_err(|e| ConfigError::Invalid {
                problems: vec![format!("session_key: {e}")],
            })?,
            None => SessionKey::random(),
        };
        let mut instance = [0u8; 16];
        rand::rng().fill_bytes(&mut instance);
        let metrics = crate::metrics::Metrics::new(mounts.iter().map(|m| m.name.clone()));
        let readiness = crate::health::Readiness::new(mounts.len());
        let by_path = mounts
            .iter()
            .enumerate()
            .map(|(i, m)| (m.path.clone(), i))
            .collect();
        Ok(Arc::new(Gateway {
            mounts: mounts
                .into_iter()
                .map(|mount| MountState {
                    mount,
                    restarts: Arc::default(),
                    shared: tokio::sync::Mutex::new(None),
                })
                .collect(),
            by_path,
            key,
            opened_ids: Default::default(),
            instance,
            client: upstream::http::client(Duration::from_secs(config.limits.connect_timeout_secs)),
            limits: config.limits.clone(),
            hosts: crate::middleware::host::HostPolicy::new(config),
            sessions: Registry::default(),
            live,
            upstream_tools: Arc::default(),
            shutdown: CancellationToken::new(),
            children: upstream::stdio::Children::new(config.limits.max_stdio_children),
            in_flight: Arc::default(),
            auth: crate::auth::AuthState::new(config.public_url.clone()),
            preview: config.preview_enabled(),
            metrics: Arc::new(metrics),
            readiness,
        }))
    }

    pub fn request_timeout(&self) -> Duration {
        Duration::from_secs(self.limits.request_timeout_secs)
    }

    /// Start a new session on a message-oriented upstream and register it.
    pub async fn open_session(
        &self,
        mount: usize,
    ) -> Result<(u64, Arc<MessageSession>), OpenError> {
        if self.sessions.len() >= self.limits.max_sessions {
            return Err(OpenError::Full(self.limits.max_sessions));
        }
        let m = &self.mounts[mount].mount;
        let sup = self.supervisor(mount);
        let session =
            upstream::open_supervised(m, &self.limits, &self.client, false, Some(&sup)).await?;
        let id = self.sessions.insert(mount, session.clone());
        Ok((id, session))
    }

    /// The shared session of a mount, (re)started when absent or ended.
    pub async fn shared_session(&self, mount: usize) -> Result<Arc<MessageSession>, OpenError> {
        let state = &self.mounts[mount];
        let mut slot = state.shared.lock().await;
        if let Some(s) = slot.as_ref().filter(|s| !s.is_closed()) {
            return Ok(s.clone());
        }
        let sup = self.supervisor(mount);
        let s =
            upstream::open_supervised(&state.mount, &self.limits, &self.client, true, Some(&sup))
                .await?;
        *slot = Some(s.clone());
        Ok(s)
    }

    fn supervisor(&self, mount: usize) -> upstream::stdio::Supervisor {
        upstream::stdio::Supervisor {
            children: self.children.clone(),
            restarts: self.mounts[mount].restarts.clone(),
        }
    }

    /// The mounts whose stdio command has been crashing, by name, with the
    /// crash record; a fault whose `retry_in` is set is holding off starts.
    pub fn upstream_faults(&self) -> Vec<(String, upstream::stdio::Fault)> {
        self.mounts
            .iter()
            .filter_map(|m| Some((m.mount.name.clone(), m.restarts.fault()?)))
            .collect()
    }

    /// The `/metrics` exposition: the counters, with the sessions, children,
    /// reloads and readiness as they are now.
    pub async fn metrics_text(&self) -> String {
        let mut sessions_open = self.sessions.open_by_mount(self.mounts.len());
        for (m, state) in self.mounts.iter().enumerate() {
            if state
                .shared
                .lock()
                .await
                .as_ref()
                .is_some_and(|s| !s.is_closed())
            {
                sessions_open[m] += 1;
            }
        }
        let (reloads_ok, reloads_failed) = self.live.reload_counts();
        let snapshot = crate::metrics::Snapshot {
            sessions_open,
            stdio_children: self.children.running(),
            reloads_ok,
            reloads_failed,
            upstream_up: self.readiness.last(),
        };
        self.metrics.render(&snapshot)
    }

    /// End every session this process owns (children are killed).
    pub async fn close_all(&self, reason: &str) {
        for s in self.sessions.drain() {
            s.close(reason);
        }
        for m in &self.mounts {
            if let Some(s) = m.shared.lock().await.take() {
                s.close(reason);
            }
        }
    }

    /// Periodically end sessions idle beyond `limits.session_idle_secs`.
    pub fn spawn_reaper(self: &Arc<Self>) {
        let gw = Arc::downgrade(self);
        let stop = self.shutdown.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(15));
            loop {
                tokio::select! {
                    _ = tick.tick() => {}
                    _ = stop.cancelled() => return,
                }
                let Some(gw) = gw.upgrade() else { return };
                let ttl = Duration::from_secs(gw.limits.session_idle_secs);
                let reason = format!("session idle for more than {} s", ttl.as_secs());
                for s in gw.sessions.idle_beyond(ttl) {
                    s.close(reason.clone());
                }
                for m in &gw.mounts {
                    let mut shared = m.shared.lock().await;
                    if let Some(s) = shared.take_if(|s| s.idle() > ttl) {
                        s.close(reason.clone());
                    }
                }
            }
        });
    }

    /// Announce overlay changes to the sessions this process owns (HTTP
    /// upstreams' GET streams subscribe to [`Live`] themselves).
    pub fn spawn_change_announcer(self: &Arc<Self>) {
        let gw = Arc::downgrade(self);
        let stop = self.shutdown.clone();
        let mut changes = self.live.subscribe();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    changed = changes.changed() => if changed.is_err() { return },
                    _ = stop.cancelled() => return,
                }
                let Some(gw) = gw.upgrade() else { return };
                gw.log_render_collisions();
                for session in gw.sessions.all() {
                    for message in crate::live::LIST_CHANGED {
                        session.announce(bytes::Bytes::from_static(message)).await;
                    }
                }
            }
        });
    }

    /// After a reload: says which render tools an upstream tool of the same
    /// name shadows (as far as the listings seen so far tell).
    fn log_render_collisions(&self) {
        let overlays = self.live.load();
        for (mount, tools) in overlays.mounts() {
            for (name, _) in tools.render_tools() {
                if self.upstream_tools.has(mount, name) {
                    let warning = crate::rewrite::render::collision(name);
                    tracing::warn!(upstream = %mount, "{warning}");
                }
            }
        }
    }

    /// The mount a protected-resource metadata path names.
    pub fn prm_mount(&self, target: crate::auth::PrmTarget<'_>) -> Option<usize> {
        match target {
            crate::auth::PrmTarget::Bare if self.mounts.len() == 1 => Some(0),
            crate::auth::PrmTarget::Bare => self.by_path.get("/").copied(),
            crate::auth::PrmTarget::Mount(path) => self.by_path.get(path).copied(),
        }
    }

    /// What `/readyz` probes: every mount, with its crash record.
    pub fn upstreams(&self) -> crate::health::Upstreams<'_> {
        crate::health::Upstreams {
            mounts: self.mounts.iter().map(|m| &m.mount).collect(),
            limits: &self.limits,
            faults: self.mounts.iter().map(|m| m.restarts.fault()).collect(),
        }
    }

    pub fn is_message_mount(&self, mount: usize) -> bool {
        !matches!(self.mounts[mount].mount.transport, Transport::Http { .. })
    }
}

/// Requests waiting for an upstream, per client session id (as sent), against
/// `limits.max_in_flight_per_session`. A request counts until its response
/// body ends.
#[derive(Debug, Default)]
pub struct InFlight {
    // Keys are session ids the gateway sealed: no client picks them.
    map: Mutex<HashMap<Box<[u8]>, usize, foldhash::fast::RandomState>>,
}

impl InFlight {
    /// A place for one more request of `session`, unless it has `max` already.
    pub fn try_enter(self: &Arc<Self>, session: &[u8], max: usize) -> Option<InFlightGuard> {
        let mut map = self.map.lock().unwrap();
        match map.get_mut(session) {
            Some(n) if *n >= max => return None,
            Some(n) => *n += 1,
            None => {
                map.insert(session.into(), 1);
            }
        }
        Some(InFlightGuard {
            table: self.clone(),
            session: session.into(),
        })
    }

    /// Requests `session` has waiting.
    pub fn count(&self, session: &[u8]) -> usize {
        self.map.lock().unwrap().get(session).copied().unwrap_or(0)
    }
}

/// One request's place in [`InFlight`], given back on drop.
#[derive(Debug)]
pub struct InFlightGuard {
    table: Arc<InFlight>,
    session: Box<[u8]>,
}

impl Drop for InFlightGuard {
    fn drop(&mut self) {
        let mut map = self.table.map.lock().unwrap();
        if let Some(n) = map.get_mut(&self.session) {
            *n -= 1;
            if *n == 0 {
                map.remove(&self.session);
            }
        }
    }
}

/// Sessions owned by this process, by number.
#[derive(Default)]
pub struct Registry {
    next: AtomicU64,
    map: Mutex<HashMap<u64, (usize, Arc<MessageSession>)>>,
}

impl Registry {
    fn insert(&self, mount: usize, session: Arc<MessageSession>) -> u64 {
        let id = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        // Ended sessions are purged lazily (on lookup, count and reaping),
        // so a child that exits on its own needs no callback into this table.
        self.map.lock().unwrap().insert(id, (mount, session));
        id
    }

    pub fn get(&self, mount: usize, id: u64) -> Option<Arc<MessageSession>> {
        let mut map = self.map.lock().unwrap();
        match map.get(&id) {
            Some((m, s)) if *m == mount && !s.is_closed() => Some(s.clone()),
            Some((_, s)) if s.is_closed() => {
                map.remove(&id);
                None
            }
            _ => None,
        }
    }

    pub fn remove(&self, id: u64) -> Option<Arc<MessageSession>> {
        self.map.lock().unwrap().remove(&id).map(|(_, s)| s)
    }

    /// Open sessions by mount index; ended ones are dropped on the way.
    fn open_by_mount(&self, mounts: usize) -> Vec<usize> {
        let mut map = self.map.lock().unwrap();
        map.retain(|_, (_, s)| !s.is_closed());
        let mut open = vec![0; mounts];
        for (m, _) in map.values() {
            if let Some(n) = open.get_mut(*m) {
                *n += 1;
            }
        }
        open
    }

    /// Open sessions; ended ones are dropped from the table on the way.
    pub fn len(&self) -> usize {
        let mut map = self.map.lock().unwrap();
        map.retain(|_, (_, s)| !s.is_closed());
        map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn idle_beyond(&self, ttl: Duration) -> Vec<Arc<MessageSession>> {
        let mut map = self.map.lock().unwrap();
        map.retain(|_, (_, s)| !s.is_closed());
        map.values()
            .filter(|(_, s)| s.idle() > ttl)
            .map(|(_, s)| s.clone())
            .collect()
    }

    fn all(&self) -> Vec<Arc<MessageSession>> {
        let mut map = self.map.lock().unwrap();
        map.retain(|_, (_, s)| !s.is_closed());
        map.values().map(|(_, s)| s.clone()).collect()
    }

    fn drain(&self) -> Vec<Arc<MessageSession>> {
        self.map
            .lock()
            .unwrap()
            .drain()
            .map(|(_, (_, s))| s)
            .collect()
    }
}
