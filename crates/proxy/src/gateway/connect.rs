//! Upstream sessions and connections opened for clients: a session this
//! process owns, one opened again in place of a gone one, a pool's
//! connection, each started within the limits on children and backoff.

use std::sync::Arc;
use std::time::Duration;

use super::{Gateway, MountState};
use mcp_ui_model::config::{Mount, Transport};
use mcp_ui_model::outcome::Failure;
use mcp_ui_model::session_id::Hello;
use mcp_ui_upstream::session::pool::{Conn, SlotKey};
use mcp_ui_upstream::upstream;
use mcp_ui_upstream::upstream::handshake;
use mcp_ui_upstream::upstream::messages::{EndedBy, MessageSession, Mux};
use mcp_ui_upstream::upstream::stdio::Supervisor;
use mcp_ui_wire::protocol::{self, Era};

/// The longest a request waits for a crashed stdio command's next start.
const MAX_BACKOFF_WAIT: Duration = Duration::from_secs(5);

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

impl Gateway {
    /// Start a new client session on a message-oriented upstream and register
    /// it; its number.
    pub async fn open_session(
        &self,
        mount: &MountState,
    ) -> Result<(u64, Arc<MessageSession>), Failure> {
        self.upstreams.sessions.check_room()?;
        // Boxed here and below: starting an upstream session has a large
        // state, which every relayed request would otherwise carry.
        let session = Box::pin(self.start(mount, None)).await?;
        let id = self.upstreams.sessions.insert(mount.index, session.clone());
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
        self.upstreams.sessions.check_room()?;
        let session = Box::pin(self.start(mount, None)).await?;
        let params = hello.initialize_params(protocol::LATEST_HANDSHAKE);
        if let Err(e) = handshake::initialize(&session, &params, self.handshake_timeout()).await {
            session.end(EndedBy::Unopened, "initialize failed");
            return Err(e);
        }
        self.upstreams
            .sessions
            .insert_revived(mount.index, instance, id, session.clone());
        self.upstreams.pools[mount.index].count_revived();
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
        let pool = &self.upstreams.pools[mount.index];
        pool.connect(key, owner, |again| async move {
            let session = match &mount.config.transport {
                Transport::Http { url } => {
                    let pools = Arc::downgrade(&self.upstreams.pools);
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
                        &self.upstreams.client,
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
                        mcp_ui_upstream::session::pool::Lane::Conversation(_) => mcp_ui_wire::protocol::Caps::ALL,
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
            .upstreams
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
        while self.upstreams.children.running() >= self.limits.max_stdio_children {
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
            children: self.upstreams.children.clone(),
            restarts: mount.restarts.clone(),
        };
        let open = || {
            upstream::open_supervised(
                &config,
                &self.limits,
                &self.upstreams.client,
                mux.clone(),
                Some(&sup),
            )
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
}
