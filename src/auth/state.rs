//! Where OAuth lives for each mount: the gateway's own metadata URL for it,
//! the upstream's metadata URL as its challenges named it, and the rewritten
//! documents, cached briefly.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::header::{self, HeaderMap};

/// Where RFC 9728 puts protected-resource metadata.
pub const PRM_PATH: &str = "/.well-known/oauth-protected-resource";
/// How long a fetched upstream document is served from memory.
pub const PRM_TTL: Duration = Duration::from_secs(60);

/// Per-mount OAuth state: the upstream's metadata URL as its last challenge
/// named it, and the rewritten metadata, cached briefly.
#[derive(Default)]
pub struct AuthState {
    public_url: Option<String>,
    pub(super) challenge_urls: Mutex<HashMap<usize, String>>,
    /// Keyed by mount and base URL (without `public_url`, the base follows
    /// the request's `Host`).
    pub(super) cache: Mutex<HashMap<(usize, String), (Instant, Bytes)>>,
}

impl AuthState {
    pub fn new(public_url: Option<String>) -> Self {
        AuthState {
            public_url: public_url.map(|u| u.trim_end_matches('/').to_owned()),
            ..AuthState::default()
        }
    }

    /// The gateway's external base URL for a request with these headers.
    pub fn base(&self, headers: &HeaderMap) -> Option<String> {
        if let Some(u) = &self.public_url {
            return Some(u.clone());
        }
        headers
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .map(|h| format!("http://{h}"))
    }

    pub(super) fn remember_challenge_url(&self, mount: usize, url: String) {
        self.challenge_urls
            .lock()
            .expect("not poisoned")
            .insert(mount, url);
    }
}

/// The public URL of a mount (its protected-resource identifier).
pub fn resource_url(base: &str, mount_path: &str) -> String {
    format!("{base}{mount_path}")
}

/// The gateway's metadata URL for a mount (the path-inserted form).
pub fn prm_url(base: &str, mount_path: &str) -> String {
    format!("{base}{PRM_PATH}{mount_path}")
}

/// Which mount a well-known metadata path names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PrmTarget<'a> {
    /// The bare form: the only mount, or the one at `/`.
    Bare,
    /// The path-inserted form: the mount at this path.
    Mount(&'a str),
}

/// The mount a well-known path names, `None` when it is not one of the
/// metadata paths.
pub fn prm_target(path: &str) -> Option<PrmTarget<'_>> {
    let rest = path.strip_prefix(PRM_PATH)?;
    let rest = rest.trim_end_matches('/');
    if rest.is_empty() {
        return Some(PrmTarget::Bare);
    }
    rest.starts_with('/').then_some(PrmTarget::Mount(rest))
}

/// `http://host:port` of an upstream URL.
pub fn origin_of(url: &http::Uri) -> String {
    format!(
        "{}://{}",
        url.scheme_str().unwrap_or("http"),
        url.authority().map(|a| a.as_str()).unwrap_or_default()
    )
}
