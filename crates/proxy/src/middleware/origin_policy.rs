//! Which `Host` and `Origin` values the gateway accepts: the defence against
//! DNS rebinding (a loopback gateway answers loopback names, and only the
//! names `allowed_hosts` adds) and the origins whose browser pages may call
//! it (CORS). A request with two `Host` headers is refused (RFC 9112): the
//! policy must not judge one while a later hop reads the other. A refused
//! `Host` is logged once, with the setting that would accept it.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use http::header::{self, HeaderValue};
use http::{Request, Response};
use tower::{Layer, Service};

use super::Refusable;
use mcp_ui_model::config::Config;
use mcp_ui_model::outcome::Failure;
use mcp_ui_model::reply::Body;

/// Refuses (403) a request whose `Host` or `Origin` the policy does not
/// accept, before anything else looks at it.
#[derive(Clone)]
pub(crate) struct OriginLayer {
    policy: Arc<OriginPolicy>,
}

impl OriginLayer {
    pub fn new(policy: Arc<OriginPolicy>) -> Self {
        OriginLayer { policy }
    }
}

impl<S> Layer<S> for OriginLayer {
    type Service = CheckOrigin<S>;

    fn layer(&self, inner: S) -> CheckOrigin<S> {
        CheckOrigin {
            inner,
            policy: self.policy.clone(),
        }
    }
}

#[derive(Clone)]
pub(crate) struct CheckOrigin<S> {
    inner: S,
    policy: Arc<OriginPolicy>,
}

impl<S, B> Service<Request<B>> for CheckOrigin<S>
where
    S: Service<Request<B>, Response = Response<Body>>,
    S::Future: Unpin,
{
    type Response = Response<Body>;
    type Error = S::Error;
    type Future = Refusable<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        let mut hosts = req.headers().get_all(header::HOST).iter();
        let duplicate = hosts.next().is_some() && hosts.next().is_some();
        let refused = if duplicate {
            Some(Failure::DuplicateHost)
        } else if !self.policy.host_allowed(&req) {
            self.policy.log_refusal(&req);
            Some(Failure::HostNotAllowed)
        } else if crate::assets::claims(req.uri().path()) || self.policy.open(req.uri().path()) {
            // Widget files are public and immutable, and every host's
            // sandboxed frame (whatever its origin) must load them; the
            // authorization server's endpoints take any page's requests
            // (a consent form sends `Origin: null`).
            None
        } else {
            req.headers()
                .get(header::ORIGIN)
                .filter(|o| !self.policy.origin_allowed(o))
                .map(|_| Failure::OriginNotAllowed)
        };
        match refused {
            Some(failure) => Refusable::refused(failure.respond(None)),
            None => Refusable::Inner(self.inner.call(req)),
        }
    }
}

/// The most distinct refused `Host` values logged: past it, a page trying
/// names by the thousand (DNS rebinding) does not fill the log.
const MAX_LOGGED_HOSTS: usize = 32;

/// Which `Host` and `Origin` values are accepted.
#[derive(Debug)]
pub struct OriginPolicy {
    /// The listener is on a loopback address: loopback names are accepted
    /// whatever `allowed_hosts` adds (the preview and local clients keep
    /// working once a public name is configured).
    loopback_listener: bool,
    hosts: Vec<String>,
    /// The refused `Host` values already logged.
    logged: Mutex<HashSet<String>>,
    origins: Vec<String>,
    any_origin: bool,
    /// Paths any origin may call (the authorization server's).
    open_paths: Vec<String>,
}

impl OriginPolicy {
    pub fn new(config: &Config) -> Self {
        OriginPolicy {
            loopback_listener: config.listen.ip().is_loopback(),
            hosts: config
                .allowed_hosts
                .iter()
                .map(|h| h.to_ascii_lowercase())
                .collect(),
            origins: config
                .allowed_origins
                .iter()
                .map(|o| o.trim_end_matches('/').to_ascii_lowercase())
                .collect(),
            any_origin: config.allowed_origins.iter().any(|o| o == "*"),
            logged: Mutex::default(),
            open_paths: Vec::new(),
        }
    }

    /// The same, with `paths` open to any origin: requests from any page
    /// are taken, and their answers readable by it (never with
    /// credentials).
    pub fn with_open_paths(mut self, paths: Vec<String>) -> Self {
        self.open_paths = paths;
        self
    }

    /// Whether any origin may call `path`.
    pub(crate) fn open(&self, path: &str) -> bool {
        self.open_paths.iter().any(|p| p == path)
    }

    pub(crate) fn host_allowed<B>(&self, req: &Request<B>) -> bool {
        let Some(host) = host_of(req) else {
            return false;
        };
        let bare = strip_port(&host);
        if self
            .hosts
            .iter()
            .any(|h| h.eq_ignore_ascii_case(&host) || h.eq_ignore_ascii_case(bare))
        {
            return true;
        }
        if self.loopback_listener {
            return is_loopback_name(bare);
        }
        self.hosts.is_empty()
    }

    /// Logs, once per `Host` value, that a request for it was refused and
    /// how to accept it.
    fn log_refusal<B>(&self, req: &Request<B>) {
        let host = match (host_of(req), req.headers().get(header::HOST)) {
            (Some(host), _) => host.into_owned(),
            (None, Some(raw)) => String::from_utf8_lossy(raw.as_bytes()).into_owned(),
            (None, None) => String::new(),
        };
        let mut logged = self.logged.lock().unwrap_or_else(|e| e.into_inner());
        if logged.len() > MAX_LOGGED_HOSTS || logged.contains(&host) {
            return;
        }
        logged.insert(host.clone());
        if logged.len() > MAX_LOGGED_HOSTS {
            tracing::warn!(
                "refused requests for more than {MAX_LOGGED_HOSTS} different Host values; \
                 further ones are refused without a log line"
            );
            return;
        }
        if host.is_empty() {
            tracing::warn!("refused a request without a Host header (403)");
            return;
        }
        let name = strip_port(&host);
        tracing::warn!(
            host = ?host,
            "refused a request for Host {host:?} (403): the name is not accepted; to serve it, \
             add {name:?} to `allowed_hosts` at the top of the configuration file (before any \
             [section]), or to MCP_UI_GATEWAY_ALLOWED_HOSTS (e.g. '[{name:?}]')"
        );
    }

    pub fn origin_allowed(&self, origin: &HeaderValue) -> bool {
        let Ok(origin) = origin.to_str() else {
            return false;
        };
        let origin = origin.to_ascii_lowercase();
        if self.any_origin || self.origins.contains(&origin) {
            return true;
        }
        let Some((scheme, rest)) = origin.split_once("://") else {
            return false;
        };
        matches!(scheme, "http" | "https") && is_loopback_name(strip_port(rest))
    }
}

/// The request's `Host` header, or the authority of its target (HTTP/2).
fn host_of<B>(req: &Request<B>) -> Option<std::borrow::Cow<'_, str>> {
    match req.headers().get(header::HOST) {
        Some(h) => h.to_str().ok().map(Into::into),
        None => req.uri().authority().map(|a| a.to_string().into()),
    }
}

fn strip_port(host: &str) -> &str {
    if let Some(rest) = host.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    host.rsplit_once(':').map(|(h, _)| h).unwrap_or(host)
}

/// `localhost`, a name under it, or a loopback address (any case).
fn is_loopback_name(host: &str) -> bool {
    let suffix = host
        .len()
        .checked_sub(".localhost".len())
        .and_then(|i| host.get(i..));
    host.eq_ignore_ascii_case("localhost")
        || suffix.is_some_and(|s| s.eq_ignore_ascii_case(".localhost"))
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(listen: &str, hosts: &[&str], origins: &[&str]) -> OriginPolicy {
        OriginPolicy::new(&Config {
            listen: listen.parse().unwrap(),
            allowed_hosts: hosts.iter().map(|s| s.to_string()).collect(),
            allowed_origins: origins.iter().map(|s| s.to_string()).collect(),
            ..Config::default()
        })
    }

    fn req(host: &str) -> Request<()> {
        Request::get("/mcp").header("host", host).body(()).unwrap()
    }

    #[test]
    fn loopback_bind_accepts_only_loopback_hosts() {
        let p = policy("127.0.0.1:0", &[], &[]);
        for ok in [
            "localhost",
            "localhost:8787",
            "127.0.0.1:1",
            "[::1]:80",
            "127.1.2.3",
        ] {
            assert!(p.host_allowed(&req(ok)), "{ok}");
        }
        for bad in [
            "evil.example",
            "evil.example:8787",
            "127.0.0.1.evil.example",
            "localhost.evil.example",
        ] {
            assert!(!p.host_allowed(&req(bad)), "{bad}");
        }
    }

    #[test]
    fn loopback_bind_with_allowed_hosts_keeps_loopback_names() {
        let p = policy("127.0.0.1:0", &["gw.example.com"], &[]);
        for ok in [
            "gw.example.com",
            "localhost",
            "localhost:8787",
            "127.0.0.1:1",
            "[::1]:80",
        ] {
            assert!(p.host_allowed(&req(ok)), "{ok}");
        }
        for bad in ["evil.example", "127.0.0.1.evil.example"] {
            assert!(!p.host_allowed(&req(bad)), "{bad}");
        }
        // On a public address, only the names listed.
        let p = policy("0.0.0.0:0", &["gw.example.com"], &[]);
        assert!(!p.host_allowed(&req("localhost:8787")));
    }

    #[tokio::test]
    async fn two_host_headers_are_a_bad_request() {
        use tower::ServiceExt;
        let policy = std::sync::Arc::new(policy("127.0.0.1:0", &[], &[]));
        let inner = tower::service_fn(|_req: Request<()>| {
            std::future::ready(Ok::<_, std::convert::Infallible>(
                mcp_ui_model::reply::status(http::StatusCode::OK),
            ))
        });
        let svc = OriginLayer::new(policy).layer(inner);
        let one = Request::get("/mcp")
            .header("host", "localhost")
            .body(())
            .unwrap();
        assert_eq!(svc.clone().oneshot(one).await.unwrap().status(), 200);
        let two = Request::get("/mcp")
            .header("host", "localhost")
            .header("host", "evil.example")
            .body(())
            .unwrap();
        assert_eq!(svc.oneshot(two).await.unwrap().status(), 400);
    }

    #[test]
    fn configured_hosts_and_origins() {
        let p = policy(
            "0.0.0.0:0",
            &["gw.example.com"],
            &["https://app.example.com"],
        );
        assert!(p.host_allowed(&req("gw.example.com:443")));
        assert!(!p.host_allowed(&req("other.example.com")));
        assert!(p.origin_allowed(&HeaderValue::from_static("https://app.example.com")));
        assert!(p.origin_allowed(&HeaderValue::from_static("http://localhost:5173")));
        assert!(!p.origin_allowed(&HeaderValue::from_static("https://evil.example")));
        assert!(!p.origin_allowed(&HeaderValue::from_static("null")));
    }
}
