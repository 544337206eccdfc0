//! How hosts sign in to each endpoint, for Claude's sign-in rule
//! ([`super::directory::claude`]): read from the configuration, and for an
//! `[auth]` issuer other than the gateway's own, from that issuer's live
//! metadata (RFC 8414, then OpenID Connect Discovery), unless `--offline`.
//! An endpoint open to anyone, with nothing a host must present, needs no
//! sign-in and yields nothing.

use std::path::Path;
use std::time::Duration;

use super::directory::{SignIn, SignInKind};
use super::loaded::Loaded;
use mcp_ui_model::config::{Mount, Transport, auth::AuthSetting};

/// What each endpoint asks of the hosts, one [`SignIn`] per deciding
/// setting (the endpoints it decides for named in it); `file` is the
/// configuration file the settings are written in.
pub async fn gather(loaded: &Loaded, file: &Path, offline: bool) -> Vec<SignIn> {
    let mut out: Vec<SignIn> = Vec::new();
    let gateway = loaded.resolved.authorization_server.as_ref();
    for mount in &loaded.resolved.mounts {
        let (place, kind) = match &mount.auth {
            Some(auth) => match gateway {
                Some(server) if auth.issuer.trim_end_matches('/') == server.issuer => (
                    "authorization_server.registration.enabled".to_owned(),
                    SignInKind::Gateway {
                        registration: server.registration.enabled,
                        documents: server.documents.enabled,
                    },
                ),
                _ => (
                    issuer_place(loaded, mount),
                    SignInKind::Issuer {
                        issuer: auth.issuer.clone(),
                        metadata: None,
                    },
                ),
            },
            None => match (&mount.transport, mount.forward_headers.is_empty()) {
                (Transport::Http { .. }, false) => (
                    format!("{}.forward_headers", upstream_place(loaded, mount)),
                    SignInKind::Headers(
                        mount
                            .forward_headers
                            .iter()
                            .map(|h| h.as_str().to_owned())
                            .collect(),
                    ),
                ),
                _ => continue,
            },
        };
        match out.iter_mut().find(|s| s.place == place && s.kind == kind) {
            Some(known) => known.endpoints.push(mount.name.clone()),
            None => out.push(SignIn {
                file: file.to_path_buf(),
                place,
                endpoints: vec![mount.name.clone()],
                kind,
            }),
        }
    }
    if !offline {
        fetch_metadata(loaded, &mut out).await;
    }
    out
}

/// `upstream[i]` of a mount configured in the file, or the flags' upstream.
fn upstream_place(loaded: &Loaded, mount: &Mount) -> String {
    match loaded
        .config
        .upstreams
        .iter()
        .position(|u| u.name == mount.name)
    {
        Some(i) => format!("upstream[{i}]"),
        None => format!("upstream '{}'", mount.name),
    }
}

/// Where a mount's issuer is written: its own `auth` table's, else
/// `[auth]`'s.
fn issuer_place(loaded: &Loaded, mount: &Mount) -> String {
    let own = loaded.config.upstreams.iter().any(|u| {
        u.name == mount.name && matches!(&u.auth, Some(AuthSetting::Table(t)) if t.issuer.is_some())
    });
    if own {
        format!("{}.auth.issuer", upstream_place(loaded, mount))
    } else {
        "auth.issuer".to_owned()
    }
}

/// Each other issuer's metadata, fetched once, each request bounded in time
/// and size (the identity-provider client's bounds).
async fn fetch_metadata(loaded: &Loaded, sign_ins: &mut [SignIn]) {
    let connect = Duration::from_secs(loaded.config.limits.connect_timeout_secs.clamp(1, 10));
    let trusted: Vec<(&str, &std::path::PathBuf)> = loaded
        .resolved
        .mounts
        .iter()
        .filter_map(|m| {
            let auth = m.auth.as_ref()?;
            Some((auth.issuer.as_str(), auth.ca_file.as_ref()?))
        })
        .collect();
    let fetcher = match mcp_ui_proxy::oauth::fetch::Fetcher::new(connect, trusted) {
        Ok(fetcher) => fetcher,
        Err(why) => {
            let why = why.join("; ");
            for sign_in in sign_ins.iter_mut() {
                if let SignInKind::Issuer { metadata, .. } = &mut sign_in.kind {
                    *metadata = Some(Err(why.clone()));
                }
            }
            return;
        }
    };
    for sign_in in sign_ins.iter_mut() {
        if let SignInKind::Issuer { issuer, metadata } = &mut sign_in.kind {
            let found = fetcher.discover(issuer, issuer).await;
            *metadata = Some(found.map(|(_, doc)| doc).map_err(|e| e.to_string()));
        }
    }
}
