//! The downstream side: the listener, HTTP/1.1 and HTTP/2 connections, and
//! the checks every request passes before it reaches the relay: mount lookup,
//! `Host`/`Origin` validation against DNS rebinding, CORS, methods, media
//! types and the body limit.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use http::header::{self, HeaderMap, HeaderValue};
use http::{Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::gateway::Gateway;
use crate::jsonrpc::code;
use crate::relay;
use crate::reply::{Body, empty, error, text};

/// Headers a browser host may send (CORS preflight).
const ALLOW_HEADERS: &str = "authorization, content-type, accept, mcp-session-id, mcp-protocol-version, last-event-id, mcp-method, mcp-name, x-request-id";
/// Headers a browser host may read.
const EXPOSE_HEADERS: &str = "mcp-session-id, mcp-protocol-version, www-authenticate, x-request-id";
/// The request id: taken from the client when sane, else made; returned on
/// every response and carried by every log line of the request.
pub const REQUEST_ID_HEADER: http::HeaderName = http::HeaderName::from_static("x-request-id");

/// A bound gateway, ready to serve.
pub struct Server {
    listener: TcpListener,
    gateway: Arc<Gateway>,
}

impl Server {
    pub async fn bind(gateway: Arc<Gateway>, addr: SocketAddr) -> std::io::Result<Self> {
        let listener = TcpListener::bind(addr).await?;
        Ok(Server { listener, gateway })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.listener
            .local_addr()
            .expect("bound listener has an address")
    }

    pub fn gateway(&self) -> &Arc<Gateway> {
        &self.gateway
    }

    /// Serve until `shutdown` fires, then stop accepting, let open exchanges
    /// finish for at most `grace`, and end every owned session. Connections
    /// are served on the calling runtime.
    pub async fn run(self, shutdown: CancellationToken, grace: Duration) {
        self.run_workers(1, shutdown, grace).await
    }

    /// [`Server::run`], with connections spread over `workers` threads: the
    /// calling one and `workers - 1` more, each with a single-threaded
    /// runtime accepting from the same socket. A connection, the requests
    /// on it, and the upstream connections and stdio children they start
    /// stay on the thread that accepted it: no work is handed between
    /// threads on the way through.
    pub async fn run_workers(self, workers: usize, shutdown: CancellationToken, grace: Duration) {
        let gateway = self.gateway;
        gateway.spawn_reaper();
        gateway.spawn_change_announcer();
        let listener = self.listener;
        // Fires once every owned session has been ended, for the workers
        // still draining.
        let closed = CancellationToken::new();
        let mut threads = Vec::new();
        let mut drains = Vec::new();
        let listener = if workers > 1 {
            let std = listener.into_std().expect("a bound listener");
            for n in 1..workers {
                let Ok(socket) = std.try_clone() else {
                    tracing::warn!(workers = n, "cannot share the listener; fewer workers");
                    break;
                };
                let (done, drained) = tokio::sync::oneshot::channel();
                let worker = Worker {
                    gateway: gateway.clone(),
                    shutdown: shutdown.clone(),
                    closed: closed.clone(),
                    grace,
                };
                match std::thread::Builder::new()
                    .name(format!("worker-{n}"))
                    .spawn(move || worker.run(socket, done))
                {
                    Ok(t) => {
                        threads.push(t);
                        drains.push(drained);
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "cannot start a worker thread; fewer workers");
                        break;
                    }
                }
            }
            TcpListener::from_std(std).expect("inside a runtime")
        } else {
            listener
        };
        let graceful = accept(&gateway, listener, &shutdown).await;
        // The listener is closed: new connections are refused at once.
        tracing::info!(
            grace_secs = grace.as_secs(),
            "shutting down: no new connections, draining open ones"
        );
        // Long-lived GET streams would hold the drain open: end them first.
        // Calls in flight go on, their children with them, until the grace.
        gateway.shutdown.cancel();
        let drained = graceful.shutdown();
        tokio::pin!(drained);
        let mut in_time = tokio::time::timeout(grace, &mut drained).await.is_ok();
        let mine = in_time;
        for d in drains {
            // A worker that never started drops its sender: nothing to drain.
            in_time &= d.await.unwrap_or(true);
        }
        if !in_time {
            tracing::warn!(
                grace_secs = grace.as_secs(),
                "calls still in flight after the grace period; ending them"
            );
        }
        // Calls still waiting get an error naming the upstream, then every
        // child is stopped and reaped.
        gateway.close_all("the gateway is shutting down").await;
        closed.cancel();
        if !mine {
            let _ = tokio::time::timeout(Duration::from_secs(1), &mut drained).await;
        }
        let joined = tokio::task::spawn_blocking(move || {
            for t in threads {
                let _ = t.join();
            }
        });
        let _ = tokio::time::timeout(Duration::from_secs(5), joined).await;
        let reaped = tokio::time::timeout(Duration::from_secs(5), async {
            while gateway.children.running() > 0 {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        });
        if reaped.await.is_err() {
            tracing::warn!(
                running = gateway.children.running(),
                "stdio children still running after shutdown"
            );
        }
    }
}

/// One extra worker thread of [`Server::run_workers`].
struct Worker {
    gateway: Arc<Gateway>,
    shutdown: CancellationToken,
    closed: CancellationToken,
    grace: Duration,
}

impl Worker {
    /// Serve on a single-threaded runtime of this thread until shutdown;
    /// `done` says whether the drain finished within the grace.
    fn run(self, socket: std::net::TcpListener, done: tokio::sync::oneshot::Sender<bool>) {
        let runtime = match tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(error = %e, "cannot start a worker runtime; fewer workers");
                return;
            }
        };
        runtime.block_on(async move {
            let listener = match TcpListener::from_std(socket) {
                Ok(l) => l,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot share the listener; fewer workers");
                    return;
                }
            };
            let graceful = accept(&self.gateway, listener, &self.shutdown).await;
            let drained = graceful.shutdown();
            tokio::pin!(drained);
            let in_time = tokio::time::timeout(self.grace, &mut drained).await.is_ok();
            let _ = done.send(in_time);
            // Sessions this thread started (their stdio children, their
            // upstream connections) may still serve calls that arrived on
            // other threads: this runtime runs until every session is closed.
            self.closed.cancelled().await;
            if !in_time {
                let _ = tokio::time::timeout(Duration::from_secs(1), &mut drained).await;
            }
        });
    }
}

/// Accept and serve connections until `stop` fires; the returned handle
/// drains those still open. The listener is closed on return.
async fn accept(
    gateway: &Arc<Gateway>,
    listener: TcpListener,
    stop: &CancellationToken,
) -> hyper_util::server::graceful::GracefulShutdown {
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let builder = auto::Builder::new(TokioExecutor::new());
    // A timer always pending on this thread: the timeout every relayed
    // request sets is then never the earliest, and setting it does not wake
    // the thread's event loop (a syscall and a spurious wake-up per request).
    let ticker = stop.clone();
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                _ = ticker.cancelled() => return,
            }
        }
    });
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    // Out of file descriptors and the like: wait, don't spin.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = stop.cancelled() => break,
        };
        let _ = stream.set_nodelay(true);
        let gw = gateway.clone();
        let service = hyper::service::service_fn(move |req| {
            let gw = gw.clone();
            async move { Ok::<_, Infallible>(handle(gw, req).await) }
        });
        let conn = builder.serve_connection_with_upgrades(TokioIo::new(stream), service);
        let conn = graceful.watch(conn.into_owned());
        tokio::spawn(async move {
            if let Err(e) = conn.await {
                tracing::debug!(client.addr = %peer, error = %e, "connection ended with an error");
            }
        });
    }
    graceful
}

/// One HTTP request, start to finish.
pub async fn handle(gw: Arc<Gateway>, req: Request<Incoming>) -> Response<Body> {
    use tracing::Instrument;
    let origin = req.headers().get(header::ORIGIN).cloned();
    let request_id = crate::metrics::request_id(req.headers().get(REQUEST_ID_HEADER));
    let span = tracing::info_span!("request", request_id = %request_id.to_str().unwrap_or(""));
    // Boxed: hyper keeps room for this future for as long as the connection
    // is open, idle or not; the exchange's own state lives only while it runs.
    let mut resp = Box::pin(route(&gw, req).instrument(span)).await;
    gw.metrics.record_status(resp.status());
    resp.headers_mut().insert(REQUEST_ID_HEADER, request_id);
    if let Some(origin) = origin.filter(|o| gw.hosts.origin_allowed(o)) {
        let h = resp.headers_mut();
        h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
        h.insert(
            header::ACCESS_CONTROL_EXPOSE_HEADERS,
            HeaderValue::from_static(EXPOSE_HEADERS),
        );
        h.append(header::VARY, HeaderValue::from_static("origin"));
    }
    resp
}

async fn route(gw: &Arc<Gateway>, req: Request<Incoming>) -> Response<Body> {
    if !gw.hosts.host_allowed(&req) {
        return error(
            StatusCode::FORBIDDEN,
            code::UPSTREAM_ERROR,
            "Forbidden: Host header not allowed",
        );
    }
    if let Some(origin) = req.headers().get(header::ORIGIN)
        && !gw.hosts.origin_allowed(origin)
    {
        return error(
            StatusCode::FORBIDDEN,
            code::UPSTREAM_ERROR,
            "Forbidden: Origin not allowed",
        );
    }
    let path = req.uri().path();
    if path == "/healthz" {
        return text(StatusCode::OK, "ok\n");
    }
    if let Some(target) = crate::auth::prm_target(path) {
        return match (gw.prm_mount(target), req.method()) {
            (Some(mount), &Method::GET | &Method::HEAD) => {
                let fetch = crate::auth::Fetch {
                    client: &gw.client,
                    timeout: gw.request_timeout(),
                };
                let config = &gw.mounts[mount].mount;
                crate::auth::serve_prm(&gw.auth, mount, config, &fetch, req.headers()).await
            }
            (Some(_), &Method::OPTIONS) => preflight(),
            (Some(_), _) => {
                let mut r = text(StatusCode::METHOD_NOT_ALLOWED, "Method Not Allowed\n");
                r.headers_mut()
                    .insert(header::ALLOW, HeaderValue::from_static("GET, OPTIONS"));
                r
            }
            (None, _) => text(
                StatusCode::NOT_FOUND,
                "not found: no mount at this protected-resource metadata path\n",
            ),
        };
    }
    if path == "/metrics" {
        return crate::metrics::response(gw.metrics_text().await);
    }
    if path == "/readyz" {
        return crate::health::readyz(&gw.readiness, &gw.upstreams()).await;
    }
    if crate::preview::claims(path) && !gw.by_path.contains_key(path) {
        let mounts = gw.mounts.iter().map(|m| &m.mount);
        return crate::preview::serve(gw.preview, mounts, req.method(), req.uri());
    }
    let Some(&mount) = gw
        .by_path
        .get(path)
        .or_else(|| gw.by_path.get(path.trim_end_matches('/')))
    else {
        return text(
            StatusCode::NOT_FOUND,
            "not found: this gateway serves MCP at its mount paths\n",
        );
    };
    match *req.method() {
        Method::POST => post(gw, mount, req).await,
        Method::GET => {
            if !accepts(req.headers(), "text/event-stream") {
                return error(
                    StatusCode::NOT_ACCEPTABLE,
                    code::INVALID_REQUEST,
                    "Not Acceptable: Accept must include text/event-stream",
                );
            }
            let exchange = gw.metrics.exchange(mount, crate::metrics::MethodId::GET);
            let resp = relay::get(gw, mount, req).await;
            exchange.finish_head(&resp);
            resp
        }
        Method::DELETE => {
            let exchange = gw.metrics.exchange(mount, crate::metrics::MethodId::DELETE);
            let resp = relay::delete(gw, mount, req).await;
            exchange.finish_head(&resp);
            resp
        }
        Method::OPTIONS => preflight(),
        _ => {
            let mut r = error(
                StatusCode::METHOD_NOT_ALLOWED,
                code::INVALID_REQUEST,
                "Method Not Allowed",
            );
            r.headers_mut().insert(
                header::ALLOW,
                HeaderValue::from_static("GET, POST, DELETE, OPTIONS"),
            );
            r
        }
    }
}

async fn post(gw: &Arc<Gateway>, mount: usize, req: Request<Incoming>) -> Response<Body> {
    let json = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json"));
    if !json {
        return error(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            code::INVALID_REQUEST,
            "Unsupported Media Type: Content-Type must be application/json",
        );
    }
    if !(accepts(req.headers(), "application/json") && accepts(req.headers(), "text/event-stream"))
    {
        return error(
            StatusCode::NOT_ACCEPTABLE,
            code::INVALID_REQUEST,
            "Not Acceptable: Accept must include both application/json and text/event-stream",
        );
    }
    let limit = gw.limits.max_body_bytes;
    let (parts, body) = req.into_parts();
    let bytes = match Limited::new(body, limit).collect().await {
        Ok(c) => c.to_bytes(),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => {
            return error(
                StatusCode::PAYLOAD_TOO_LARGE,
                code::INVALID_REQUEST,
                &format!(
                    "Payload Too Large: the body exceeds {limit} bytes (limits.max_body_bytes)"
                ),
            );
        }
        Err(e) => {
            return error(
                StatusCode::BAD_REQUEST,
                code::PARSE_ERROR,
                &format!("could not read the body: {e}"),
            );
        }
    };
    relay::post(gw, mount, parts, bytes).await
}

/// Whether `Accept` admits `media` (wildcards count; no header does not).
fn accepts(headers: &HeaderMap, media: &str) -> bool {
    let (ty, _) = media.split_once('/').expect("type/subtype");
    headers.get_all(header::ACCEPT).iter().any(|v| {
        v.as_bytes().split(|&b| b == b',').any(|item| {
            let item = item.split(|&b| b == b';').next().unwrap_or_default();
            let item = item.trim_ascii();
            item.eq_ignore_ascii_case(media.as_bytes())
                || item == b"*/*"
                || item
                    .strip_suffix(b"/*")
                    .is_some_and(|t| t.eq_ignore_ascii_case(ty.as_bytes()))
        })
    })
}

fn preflight() -> Response<Body> {
    let mut r = Response::new(empty());
    *r.status_mut() = StatusCode::NO_CONTENT;
    let h = r.headers_mut();
    h.insert(
        header::ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static("GET, POST, DELETE, OPTIONS"),
    );
    h.insert(
        header::ACCESS_CONTROL_ALLOW_HEADERS,
        HeaderValue::from_static(ALLOW_HEADERS),
    );
    h.insert(
        header::ACCESS_CONTROL_MAX_AGE,
        HeaderValue::from_static("86400"),
    );
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    /// hyper keeps room for the service future of every open connection,
    /// idle or not: what an exchange needs must not live in it.
    #[test]
    fn a_connection_holds_little_for_its_exchanges() {
        fn size_of_future<F, Fut>(_: F) -> usize
        where
            F: Fn(Arc<Gateway>, Request<Incoming>) -> Fut,
        {
            std::mem::size_of::<Fut>()
        }
        let size = size_of_future(handle);
        assert!(size <= 1024, "the service future is {size} bytes");
    }

    #[test]
    fn accept_matching() {
        let mut h = HeaderMap::new();
        h.insert(
            header::ACCEPT,
            HeaderValue::from_static("application/json, text/event-stream"),
        );
        assert!(accepts(&h, "application/json") && accepts(&h, "text/event-stream"));
        h.insert(header::ACCEPT, HeaderValue::from_static("application/json"));
        assert!(!accepts(&h, "text/event-stream"));
        h.insert(header::ACCEPT, HeaderValue::from_static("*/*"));
        assert!(accepts(&h, "text/event-stream"));
    }
}
