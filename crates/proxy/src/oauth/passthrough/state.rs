//! Where OAuth lives for each mount: the gateway's own metadata URL for it,
//! the upstream's metadata URL as its challenges named it, and the
//! upstream's metadata documents, cached briefly.

use std::collections::HashMap;
use std::sync::Mutex;

use http::header::{self, HeaderMap};

use super::cache::PrmCache;

/// Where RFC 9728 puts protected-resource metadata.
pub(crate) const PRM_PATH: &str = "/.well-known/oauth-protected-resource";

/// Per-mount OAuth state: the upstream's metadata URL as its last challenge
/// named it, and the upstream's metadata, cached briefly.
#[derive(Default)]
pub struct AuthState {
    public_url: Option<String>,
    /// The listener serves HTTPS: a base taken from `Host` is `https://`.
    https: bool,
    pub(super) challenge_urls: Mutex<HashMap<usize, String>>,
    /// One upstream document per mount, whatever the request's `Host`.
    pub prm_cache: PrmCache,
    /// Per app, the last reason its members could not be one protected
    /// resource that was logged: logged again only when it changes.
    pub(super) app_conflicts: Mutex<HashMap<String, String>>,
}

impl AuthState {
    pub fn new(public_url: Option<String>, https: bool) -> Self {
        AuthState {
            public_url: public_url.map(|u| u.trim_end_matches('/').to_owned()),
            https,
            ..AuthState::default()
        }
    }

    /// The gateway's external base URL for a request with these headers:
    /// `public_url`, or else `http://` (`https://` when the listener serves
    /// TLS) and the request's `Host`, normalised (the name in lower case, no
    /// default port). `None` without a `Host` that is a
    /// plain `host[:port]`.
    pub fn base(&self, headers: &HeaderMap) -> Option<String> {
        if let Some(u) = &self.public_url {
            return Some(u.clone());
        }
        let host = headers.get(header::HOST)?.to_str().ok()?;
        let authority: http::uri::Authority = host.parse().ok()?;
        if authority.as_str().contains('@') {
            return None;
        }
        let name = authority.host().to_ascii_lowercase();
        let (scheme, default_port) = if self.https {
            ("https", 443)
        } else {
            ("http", 80)
        };
        Some(match authority.port_u16() {
            Some(p) if p == default_port => format!("{scheme}://{name}"),
            None => format!("{scheme}://{name}"),
            Some(port) => format!("{scheme}://{name}:{port}"),
        })
    }

    /// The configured `public_url`, without a trailing slash.
    pub fn public_url(&self) -> Option<&str> {
        self.public_url.as_deref()
    }

    /// Whether the answers that name the gateway's base URL depend on the
    /// request's `Host` (no `public_url` is configured).
    pub(crate) fn base_follows_host(&self) -> bool {
        self.public_url.is_none()
    }

    pub(super) fn remember_challenge_url(&self, mount: usize, url: String) {
        self.challenge_urls
            .lock()
            .expect("not poisoned")
            .insert(mount, url);
    }
}

/// The public URL of a mount (its protected-resource identifier).
pub(crate) fn resource_url(base: &str, mount_path: &str) -> String {
    format!("{base}{mount_path}")
}

/// The gateway's metadata URL for a mount (the path-inserted form).
pub(crate) fn prm_url(base: &str, mount_path: &str) -> String {
    format!("{base}{PRM_PATH}{mount_path}")
}

/// Which mount a well-known metadata path names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PrmTarget<'a> {
    /// The bare form: the only mount, or the one at `/`.
    Bare,
    /// The path-inserted form: the mount at this path.
    Mount(&'a str),
}

/// The mount a well-known path names, `None` when it is not one of the
/// metadata paths.
pub(crate) fn prm_target(path: &str) -> Option<PrmTarget<'_>> {
    let rest = path.strip_prefix(PRM_PATH)?;
    let rest = rest.trim_end_matches('/');
    if rest.is_empty() {
        return Some(PrmTarget::Bare);
    }
    rest.starts_with('/').then_some(PrmTarget::Mount(rest))
}

/// What an in-band challenge in a tool result of a mount's upstream is
/// pointed at: the gateway's metadata for the mount's path, in place of
/// the upstream's origin. `None` for a stdio upstream, which has no URL.
#[derive(Debug)]
pub(crate) struct ResultTarget {
    pub(crate) path: String,
    pub(crate) origin: String,
}

impl ResultTarget {
    pub(crate) fn of(mount: &mcp_ui_model::config::Mount) -> Option<ResultTarget> {
        use mcp_ui_model::config::Transport;
        let (Transport::Http { url } | Transport::Sse { url }) = &mount.transport else {
            return None;
        };
        Some(ResultTarget {
            path: mount.path.clone(),
            origin: origin_of(url),
        })
    }
}

/// `http://host:port` of an upstream URL.
pub(crate) fn origin_of(url: &http::Uri) -> String {
    format!(
        "{}://{}",
        url.scheme_str().unwrap_or("http"),
        url.authority().map(|a| a.as_str()).unwrap_or_default()
    )
}

#[cfg(test)]
mod tests {
    use http::header::HeaderValue;

    use super::*;

    fn base(public_url: Option<&str>, host: Option<&'static str>) -> Option<String> {
        let mut h = HeaderMap::new();
        if let Some(host) = host {
            h.insert(header::HOST, HeaderValue::from_static(host));
        }
        AuthState::new(public_url.map(Into::into), false).base(&h)
    }

    #[test]
    fn the_base_is_the_public_url_or_the_normalised_host() {
        let cases = [
            ("localhost:8787", "http://localhost:8787"),
            ("A.LocalHost:8787", "http://a.localhost:8787"),
            ("localhost:80", "http://localhost"),
            ("[::1]:9", "http://[::1]:9"),
            ("127.0.0.1", "http://127.0.0.1"),
        ];
        for (host, want) in cases {
            assert_eq!(base(None, Some(host)).as_deref(), Some(want), "{host}");
        }
        for bad in ["user@localhost", "local\"host", ""] {
            assert_eq!(base(None, Some(bad)), None, "{bad}");
        }
        assert_eq!(base(None, None), None);
        assert_eq!(
            base(Some("https://gw.example/"), Some("other:1")).as_deref(),
            Some("https://gw.example")
        );
    }

    #[test]
    fn behind_tls_the_base_is_https() {
        let mut h = HeaderMap::new();
        let https = AuthState::new(None, true);
        for (host, want) in [
            ("localhost:8443", "https://localhost:8443"),
            ("gw.example:443", "https://gw.example"),
            ("gw.example:80", "https://gw.example:80"),
        ] {
            h.insert(header::HOST, HeaderValue::from_static(host));
            assert_eq!(https.base(&h).as_deref(), Some(want), "{host}");
        }
    }
}
