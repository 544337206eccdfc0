//! What the gateway reports and runs beside its requests: readiness and
//! metrics as they are now, the background reaping and overlay
//! announcements, and the end of every session at shutdown.

use std::sync::Arc;
use std::time::Duration;

use super::Gateway;
use crate::oauth::authorization_server::state::AuthorizationServer;
use mcp_ui_identity::authorization_server::authorize::Resource;

use crate::health::Upstreams;
use crate::live::LIST_CHANGED;
use mcp_ui_model::config::Transport;
use mcp_ui_upstream::upstream::stdio::Fault;

impl Gateway {
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
        let owned = self.upstreams.sessions.open_by_mount();
        let mut sessions_open = owned.clone();
        let (mut client_sessions, mut revived) = (Vec::new(), Vec::new());
        for (i, pool) in self.upstreams.pools.iter().enumerate() {
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
            stdio_children: self.upstreams.children.running(),
            reloads_ok,
            reloads_failed,
            upstream_up: self.readiness.last(),
            tls_upstream_handshakes: self.upstreams.client.tls_handshakes(),
            otlp_spans: self.telemetry.as_ref().map(|t| t.counts()),
        };
        self.metrics.render(&snapshot)
    }

    /// End every session this process owns (children are killed).
    pub async fn close_all(&self, reason: &str) {
        self.upstreams.sessions.close_all(reason);
        for pool in self.upstreams.pools.iter() {
            pool.close_all(reason);
        }
    }

    /// Start the background work of a serving gateway: reaping idle
    /// sessions and announcing overlay changes. Both end with `shutdown`.
    pub(crate) fn spawn_background(self: &Arc<Self>) {
        let ttl = Duration::from_secs(self.limits.session_idle_secs);
        let sessions = Arc::downgrade(&self.upstreams.sessions);
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
        let pools = Arc::downgrade(&self.upstreams.pools);
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
                gw.upstreams.sessions.announce(&LIST_CHANGED).await;
                for pool in gw.upstreams.pools.iter() {
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

    /// The protected endpoints whose tokens `a` issues: every mount and app
    /// accepting its tokens, at `public_url` and its path, offering the scopes
    /// its `[auth]` requires, its overlays declare and `[authorization_server]
    /// scopes` adds.
    pub(crate) fn resources_for(&self, a: &AuthorizationServer) -> Vec<Resource> {
        let overlays = self.live.load();
        let mut out = Vec::new();
        let mounts = self.mounts.iter().filter_map(|m| {
            let declared =
                crate::oauth::resource_server::declared_scopes(overlays.mount(&m.config.name));
            Some((m.config.auth.as_ref()?, m.config.path.as_str(), declared))
        });
        let apps = self.apps.iter().filter_map(|app| {
            let mut declared = Vec::new();
            for name in app.config.upstream_names() {
                declared.extend(crate::oauth::resource_server::declared_scopes(
                    overlays.mount(name),
                ));
            }
            Some((
                app.config.auth.as_ref()?,
                app.config.path.as_str(),
                declared,
            ))
        });
        for (auth, path, declared) in mounts.chain(apps) {
            if auth.issuer != a.config.issuer {
                continue;
            }
            let url = auth
                .audience
                .clone()
                .unwrap_or_else(|| crate::oauth::passthrough::resource_url(&a.config.issuer, path));
            let mut offered = auth.scopes.clone();
            for s in declared.iter().chain(&a.config.scopes) {
                if !offered.contains(s) {
                    offered.push(s.clone());
                }
            }
            out.push(Resource {
                url,
                offered,
                default: auth.scopes.clone(),
            });
        }
        out
    }
}
