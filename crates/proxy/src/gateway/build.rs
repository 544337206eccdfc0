//! Building the gateway from its configuration, once at start.

use std::sync::Arc;
use std::time::Duration;

use rand::RngCore;
use tokio_util::sync::CancellationToken;

use super::{Gateway, Ids, MAX_ROUNDS, MountState};
use crate::health::Readiness;
use crate::live::Live;
use crate::metrics::Metrics;
use crate::middleware::origin_policy::OriginPolicy;
use crate::oauth::OAuth;
use crate::oauth::passthrough::AuthState;
use crate::pending::{Pending, Rounds};
use mcp_ui_model::config::{Config, ConfigError, Resolved};
use mcp_ui_model::session_id::SessionKey;
use mcp_ui_upstream::session::Owned;
use mcp_ui_upstream::session::pool::Pool;
use mcp_ui_upstream::telemetry::Tracer;
use mcp_ui_upstream::upstream;
use mcp_ui_upstream::upstream::budget::Budget;
use mcp_ui_upstream::upstream::stdio::Children;
use mcp_ui_upstream::upstreams::Upstreams;

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
        .unwrap_or_else(crate::fd::default_max_connections);
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
        let key = session_key(config)?;
        let connect_timeout = Duration::from_secs(config.limits.connect_timeout_secs);
        let authorization_server = authorization_config
            .map(|a| authorization_server(config, a, &key, connect_timeout))
            .transpose()?;
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
        let metrics = Metrics::new(mounts.iter().map(|m| m.name.clone()));
        let by_path = mounts
            .iter()
            .enumerate()
            .map(|(i, m)| (m.path.clone(), i))
            .collect();
        let limits = &config.limits;
        let telemetry = telemetry(config)?;
        let client = upstream::client::client_for(connect_timeout, &mounts)
            .map_err(|problems| ConfigError::Invalid { problems })?;
        let origin_policy = origin_policy(config, authorization_server.as_ref());
        Ok(Arc::new(Gateway {
            telemetry,
            upstreams: Upstreams {
                sessions: Arc::new(Owned::new(mounts.len(), limits.max_sessions)),
                pools: Arc::new(pools(&mounts, limits)),
                client,
                children: Children::new(limits.max_stdio_children),
                buffers: Budget::new(limits.max_buffered_bytes),
            },
            readiness: Readiness::new(mounts.len()),
            mounts: mount_states(config, mounts),
            by_path,
            apps: app_states(config, apps),
            ids: Ids {
                key,
                opened: Default::default(),
                instance: instance(),
            },
            limits: limits.clone(),
            origin_policy: Arc::new(origin_policy),
            pending: pending(limits),
            live,
            upstream_tools: Arc::default(),
            shutdown: CancellationToken::new(),
            oauth: OAuth {
                passthrough: Arc::new(AuthState::new(
                    config.public_url.clone(),
                    config.tls_cert.is_some(),
                )),
                resource_server,
                authorization_server,
            },
            preview: config.preview_enabled(),
            openai_apps_challenge: config.openai_apps_challenge.as_deref().map(Arc::from),
            metrics: Arc::new(metrics),
        }))
    }
}

/// The key sessions, codes and tokens are sealed with: `session_key`, or
/// one made at start.
fn session_key(config: &Config) -> Result<SessionKey, ConfigError> {
    match &config.session_key {
        Some(hex) => SessionKey::from_hex(hex).map_err(|e| ConfigError::Invalid {
            problems: vec![format!("session_key: {e}")],
        }),
        None => Ok(SessionKey::random()),
    }
}

/// The gateway as the hosts' authorization server (`[authorization_server]`).
fn authorization_server(
    config: &Config,
    settings: mcp_ui_model::config::AuthorizationServer,
    key: &SessionKey,
    connect_timeout: Duration,
) -> Result<Arc<crate::oauth::authorization_server::state::AuthorizationServer>, ConfigError> {
    if config.session_key.is_none() {
        tracing::warn!(
            "session_key is unset: codes, refresh tokens and registered clients are sealed with a key made at start; they stop working when this process ends, and replicas do not accept each other's"
        );
    }
    crate::oauth::authorization_server::state::AuthorizationServer::new(
        settings,
        key.clone(),
        connect_timeout,
    )
    .map(Arc::new)
    .map_err(|problems| ConfigError::Invalid { problems })
}

/// Each mount, with its place, its restart record and Claude's widget
/// domain for it.
fn mount_states(config: &Config, mounts: Vec<mcp_ui_model::config::Mount>) -> Vec<MountState> {
    mounts
        .into_iter()
        .enumerate()
        .map(|(index, mount)| MountState {
            index,
            claude_domain: claude_domain(config.public_url.as_deref(), &mount.path),
            result_target: crate::oauth::passthrough::ResultTarget::of(&mount).map(Arc::new),
            config: mount,
            restarts: Arc::default(),
        })
        .collect()
}

/// What identifies this process in the ids of the sessions it owns.
fn instance() -> [u8; 16] {
    let mut instance = [0u8; 16];
    rand::rng().fill_bytes(&mut instance);
    instance
}

/// Each `[[app]]` endpoint, with Claude's widget domain for it.
fn app_states(
    config: &Config,
    apps: Vec<mcp_ui_model::config::App>,
) -> Vec<Arc<crate::apps::AppState>> {
    apps.into_iter()
        .map(|app| {
            let domain = claude_domain(config.public_url.as_deref(), &app.path);
            Arc::new(crate::apps::AppState::new(app).with_claude_domain(domain))
        })
        .collect()
}

/// Trace export, when configured (`[telemetry]`, `OTEL_*`).
fn telemetry(config: &Config) -> Result<Option<Arc<Tracer>>, ConfigError> {
    Tracer::from_config(&config.telemetry).map_err(|e| ConfigError::Invalid {
        problems: vec![e.to_string()],
    })
}

/// Requests in progress, none yet; rounds bounded by `limits`.
fn pending(limits: &mcp_ui_model::config::Limits) -> Pending {
    Pending {
        in_flight: Arc::default(),
        rounds: Arc::new(Rounds::new(MAX_ROUNDS, limits.max_rounds_per_caller)),
        reviving: Default::default(),
        reopening: Default::default(),
        reopened: Default::default(),
    }
}

/// The `Host` and `Origin` policy, with the authorization server's paths
/// open to any origin.
fn origin_policy(
    config: &Config,
    authorization_server: Option<
        &Arc<crate::oauth::authorization_server::state::AuthorizationServer>,
    >,
) -> OriginPolicy {
    OriginPolicy::new(config)
        .with_open_paths(authorization_server.map(|a| a.paths()).unwrap_or_default())
}
