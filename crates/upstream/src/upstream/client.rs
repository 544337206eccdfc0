//! The HTTP client shared by every HTTP and legacy SSE upstream: keep-alive
//! connections pooled per worker thread, a connect timeout, and errors that
//! name the upstream. `https://` upstreams are reached over TLS
//! ([`crate::tls`]), with HTTP/2 when the upstream chooses it by
//! ALPN: one multiplexed connection per thread then, shared by every
//! request, instead of one idle HTTP/1.1 connection per request.
//!
//! A connection is driven by the runtime of the thread that opened it and
//! only ever lent to requests on that same thread, so a relayed request and
//! its upstream connection never hand work to another thread (each worker
//! runs its own single-threaded runtime: the proxy's `server`). A
//! connection goes back to its pool when the response body has been read to
//! its end; one whose body is dropped early is closed.
//!
//! A request's deadline bounds its whole answer: the head must come in time
//! ([`send`]) and so must the end of the body, which fails with
//! [`BodyError::Timeout`] once the deadline passes (a body that stalls or
//! trickles cannot hold a request, or grow, past it). A stream meant to
//! outlive its request is made [`UpstreamBody::unbounded`].

mod body;
mod connect;
mod pool;

pub use body::{BodyError, UpstreamBody};

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::Poll;
use std::time::Duration;

use bytes::Bytes;
use http::header::{self, HeaderValue};
use http_body_util::Full;

use crate::tls::Connector;
use body::Deadline;
use connect::{Sender, request_error};
use mcp_ui_model::config::{Mount, Transport};
use mcp_ui_model::outcome::UpstreamError;
use pool::{Checkin, Pool, Tls};

/// A pooled HTTP client. Cheap to clone: clones share the pool.
#[derive(Clone)]
pub struct Client {
    inner: Arc<Pool>,
}

/// A client with connection reuse. One per gateway process.
pub fn client(connect_timeout: Duration) -> Client {
    with_tls(connect_timeout, Tls::default())
}

fn with_tls(connect_timeout: Duration, tls: Tls) -> Client {
    Client {
        inner: Arc::new(Pool::new(connect_timeout, tls)),
    }
}

/// A client for `mounts`: each `https://` upstream's trusted roots, client
/// certificate and server name are read now, so that a missing or bad file
/// is an error at start, naming the upstream.
pub fn client_for(connect_timeout: Duration, mounts: &[Mount]) -> Result<Client, Vec<String>> {
    let https = mounts.iter().filter(|m| match &m.transport {
        Transport::Http { url } | Transport::Sse { url } => url.scheme_str() == Some("https"),
        Transport::Stdio(_) => false,
    });
    client_trusting(
        connect_timeout,
        https.map(|m| (format!("upstream '{}'", m.name), m.name.as_str(), &m.tls)),
    )
}

/// A client whose requests under each peer's name are made with that
/// peer's TLS settings (the rest with the system's roots): `peers` are
/// (what an error calls it, its name in [`send`], its settings), read now so
/// that a missing or bad file is an error at start. For upstreams, and for
/// the identity providers the gateway asks (`oauth::fetch`).
pub fn client_trusting<'a>(
    connect_timeout: Duration,
    peers: impl IntoIterator<Item = (String, &'a str, &'a mcp_ui_model::tls::UpstreamTls)>,
) -> Result<Client, Vec<String>> {
    let mut system = None;
    let mut roots = || system.get_or_insert_with(crate::tls::system_roots).clone();
    let mut tls = Tls::default();
    let mut problems = Vec::new();
    for (said, name, settings) in peers {
        match Connector::new(settings, &mut roots) {
            Ok(c) => {
                tls.by_upstream.insert(name.to_owned(), Arc::new(c));
            }
            Err(e) => problems.push(format!("{said}: {e}")),
        }
    }
    if problems.is_empty() {
        Ok(with_tls(connect_timeout, tls))
    } else {
        Err(problems)
    }
}

impl Client {
    /// TLS handshakes made with upstreams since start.
    pub fn tls_handshakes(&self) -> u64 {
        self.inner.handshakes.load(Ordering::Relaxed)
    }

    /// Send `req` (absolute URI) on an idle connection to its host, or a new
    /// one. A request that never left on a reused connection (it had been
    /// closed) is tried once more on a fresh one.
    async fn exchange(
        &self,
        upstream: &str,
        mut req: http::Request<Full<Bytes>>,
    ) -> Result<http::Response<UpstreamBody>, UpstreamError> {
        let uri = req.uri().clone();
        let Some(authority) = uri.authority() else {
            return Err(UpstreamError::Unreachable {
                upstream: upstream.to_owned(),
                detail: format!("{uri} has no host"),
            });
        };
        let https = uri.scheme_str() == Some("https");
        let target = self.target(upstream, authority, https)?;
        let (key, tls) = (&target.key, target.tls.as_deref());
        // After a shared HTTP/2 connection fails, a new one.
        let mut fresh = false;
        loop {
            let (sender, reused) = self.sender(upstream, &target, fresh).await?;
            let sent = match sender {
                Sender::H1(mut sender) => {
                    for_h1(&mut req, authority, &uri);
                    if let Err(e) = sender.ready().await {
                        if reused {
                            continue;
                        }
                        return Err(request_error(upstream, tls, &e));
                    }
                    sender.try_send_request(req).await.map(|resp| {
                        let checkin = Checkin {
                            pool: Arc::downgrade(&self.inner),
                            key: key.clone(),
                            sender,
                        };
                        (resp, Some(checkin))
                    })
                }
                Sender::H2(mut sender) => {
                    // HTTP/2 carries the host as `:authority`, from the URI.
                    req.headers_mut().remove(header::HOST);
                    *req.uri_mut() = uri.clone();
                    if let Err(e) = sender.ready().await {
                        if reused {
                            self.inner.forget_shared(key);
                            fresh = true;
                            continue;
                        }
                        return Err(request_error(upstream, tls, &e));
                    }
                    let sent = sender.try_send_request(req).await;
                    if sent.is_err() && reused {
                        self.inner.forget_shared(key);
                        fresh = true;
                    }
                    sent.map(|resp| (resp, None))
                }
            };
            match sent {
                Ok((resp, checkin)) => {
                    return Ok(resp.map(|inner| UpstreamBody {
                        inner,
                        checkin,
                        deadline: None,
                        read: None,
                    }));
                }
                Err(mut e) => match e.take_message() {
                    Some(unsent) if reused => req = unsent,
                    _ => return Err(request_error(upstream, tls, e.error())),
                },
            }
        }
    }

    /// Where a request to `authority` goes: its TLS connector when `https`,
    /// the key of its connections in the pool, the host and port.
    fn target<'a>(
        &self,
        upstream: &str,
        authority: &'a http::uri::Authority,
        https: bool,
    ) -> Result<Target<'a>, UpstreamError> {
        let tls = if https {
            let c = self.inner.tls.connector(upstream).map_err(|detail| {
                UpstreamError::Unreachable {
                    upstream: upstream.to_owned(),
                    detail,
                }
            })?;
            Some(c)
        } else {
            None
        };
        // Connections to one address over TLS are kept per upstream: each
        // may trust other authorities or present another certificate.
        let key = if https {
            format!("{upstream} https://{}", authority.as_str())
        } else {
            authority.as_str().to_owned()
        };
        let host = authority
            .host()
            .trim_start_matches('[')
            .trim_end_matches(']');
        let port = authority.port_u16().unwrap_or(if https { 443 } else { 80 });
        Ok(Target {
            tls,
            key,
            host,
            port,
        })
    }

    /// An idle connection to `target` (unless `fresh` asks for a new one),
    /// else a new one; whether it was reused.
    async fn sender(
        &self,
        upstream: &str,
        target: &Target<'_>,
        fresh: bool,
    ) -> Result<(Sender, bool), UpstreamError> {
        let pooled = if fresh {
            None
        } else {
            self.inner.checkout(&target.key)
        };
        if let Some(s) = pooled {
            return Ok((s, true));
        }
        // Boxed: a connection (a TLS handshake above all) has a large state,
        // which every exchange would otherwise carry and move, pooled or not.
        let s = Box::pin(connect::connect(
            upstream,
            target.tls.as_deref(),
            target.host,
            target.port,
            self.inner.connect_timeout,
            &self.inner.handshakes,
        ))
        .await?;
        if let Sender::H2(h2) = &s {
            self.inner.share(&target.key, h2);
        }
        Ok((s, false))
    }
}

/// `req` as HTTP/1.1 sends it to `uri`: with a `Host` header, and the
/// origin form of the URI.
fn for_h1(req: &mut http::Request<Full<Bytes>>, authority: &http::uri::Authority, uri: &http::Uri) {
    if !req.headers().contains_key(header::HOST) {
        let value =
            HeaderValue::from_str(authority.as_str()).expect("an authority is a valid header");
        req.headers_mut().insert(header::HOST, value);
    }
    // On the wire, the origin form: `/path?query`.
    *req.uri_mut() = match uri.path_and_query() {
        Some(path) => http::Uri::from(path.clone()),
        None => http::Uri::from_static("/"),
    };
}

/// Where one request goes.
struct Target<'a> {
    tls: Option<Arc<Connector>>,
    /// The pool's key for its connections.
    key: String,
    host: &'a str,
    port: u16,
}

/// Send a request, waiting at most `timeout` for the response head; the
/// body then fails if it has not ended `timeout` after the request was sent.
pub async fn send(
    client: &Client,
    upstream: &str,
    req: http::Request<Full<Bytes>>,
    timeout: Duration,
) -> Result<http::Response<UpstreamBody>, UpstreamError> {
    // One timer for the head and then the body: registered once, moved into
    // the body with its place in the timer wheel kept.
    let mut timer = Box::pin(tokio::time::sleep(timeout));
    let mut exchange = std::pin::pin!(client.exchange(upstream, req));
    let head = std::future::poll_fn(|cx| match exchange.as_mut().poll(cx) {
        Poll::Ready(result) => Poll::Ready(Some(result)),
        Poll::Pending => timer.as_mut().poll(cx).map(|()| None),
    })
    .await;
    match head {
        Some(result) => result.map(|resp| {
            resp.map(|mut body| {
                body.deadline = Some(Deadline {
                    timer,
                    secs: timeout.as_secs(),
                    passed: false,
                });
                body
            })
        }),
        None => Err(UpstreamError::Timeout {
            upstream: upstream.to_owned(),
            seconds: timeout.as_secs(),
        }),
    }
}
