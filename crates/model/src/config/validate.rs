//! Validation: what serde cannot check, each upstream resolved into a
//! [`Mount`] (its path, transport, TLS and session mode) and each `[[app]]`
//! over them, once, into one [`Resolved`] value; every problem named by
//! its field.
//!
//! - `mount`: what a [`Mount`] is, and one `[[upstream]]` resolved into one.

use super::app::{self, App};
use super::load::ConfigError;
use super::schema::{Config, Limits, MIN_HEADER_BYTES, SessionMode};
use mount::{Mount, Transport, is_reserved_path};

pub(super) mod mount;

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
        let mut mounts = mount::resolve_mounts(&self.upstreams, &mut problems);
        let mut apps = app::resolve(&self.apps, &mount::mount_refs(&mounts), is_reserved_path)
            .unwrap_or_else(|errs| {
                problems.extend(errs);
                Vec::new()
            });
        let env = |var: &str| std::env::var(var).ok();
        let mut authorization_server = self.authorization_server.as_ref().and_then(|a| {
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
        self.resolve_mounts_auth(&mut mounts, own_issuer, &env, &mut problems);
        self.resolve_apps_auth(&mut apps, &mounts, own_issuer, &env, &mut problems);
        problems.extend(super::auth::endpoint::across_endpoints(
            self.public_url.as_deref(),
            &protected(&mounts, &apps),
        ));
        check_own_tokens(&mounts, &apps, &mut authorization_server, &mut problems);
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

    /// Each mount's `auth` over `[auth]`; `claims_to_env` only where each
    /// caller has a process of its own.
    fn resolve_mounts_auth(
        &self,
        mounts: &mut [Mount],
        own_issuer: Option<&str>,
        env: &dyn Fn(&str) -> Option<String>,
        problems: &mut Vec<String>,
    ) {
        let top = self.auth.as_ref();
        for (i, up) in self.upstreams.iter().enumerate() {
            let at = format!("upstream[{i}].");
            match super::auth::endpoint::resolve(top, up.auth.as_ref(), &at, own_issuer, env) {
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
    }

    /// Each app's `auth` over `[auth]`, which must cover its members'.
    fn resolve_apps_auth(
        &self,
        apps: &mut [App],
        mounts: &[Mount],
        own_issuer: Option<&str>,
        env: &dyn Fn(&str) -> Option<String>,
        problems: &mut Vec<String>,
    ) {
        let top = self.auth.as_ref();
        for (i, a) in self.apps.iter().enumerate() {
            let at = format!("app[{i}].");
            match super::auth::endpoint::resolve(top, a.auth.as_ref(), &at, own_issuer, env) {
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

/// The gateway's own tokens, when it is an authorization server: whether an
/// endpoint passes the provider's token on (which only it can know), and
/// that some endpoint accepts its tokens at all.
fn check_own_tokens(
    mounts: &[Mount],
    apps: &[App],
    authorization_server: &mut Option<super::authorization::AuthorizationServer>,
    problems: &mut Vec<String>,
) {
    let provider_tokens = mounts
        .iter()
        .filter_map(|m| m.auth.as_ref())
        .chain(apps.iter().filter_map(|x| x.auth.as_ref()))
        .any(|a| a.wants_provider_token());
    match authorization_server {
        Some(a) => a.provider_tokens = provider_tokens,
        None if provider_tokens => problems.push(format!(
            "auth.claims_to_headers / claims_to_env: \"{}\" is known only for users the gateway signs in ([authorization_server])",
            super::auth::PROVIDER_ACCESS_TOKEN
        )),
        None => {}
    }
    if let Some(a) = authorization_server {
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
}

/// The endpoints `[auth]` protects, mounts first, for the rules across them.
fn protected<'a>(
    mounts: &'a [Mount],
    apps: &'a [App],
) -> Vec<super::auth::endpoint::Protected<'a>> {
    let mounts = mounts.iter().enumerate().filter_map(|(i, m)| {
        Some(super::auth::endpoint::Protected {
            at: format!("upstream[{i}]."),
            label: format!("upstream \"{}\"", m.name),
            auth: m.auth.as_ref()?,
        })
    });
    let apps = apps.iter().enumerate().filter_map(|(i, a)| {
        Some(super::auth::endpoint::Protected {
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
