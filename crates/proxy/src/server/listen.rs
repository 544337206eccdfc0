//! The listener: connections accepted on one or more worker threads, each
//! served over HTTP/1.1 or HTTP/2 (over TLS when configured, the protocol
//! chosen by ALPN) by [`crate::stack`]'s service and closed when its phase
//! outlives its limit, and the graceful shutdown that closes idle
//! connections at once and drains the others.
//!
//! - `worker`: the extra worker threads, each accepting from the socket;
//! - `served`: one accepted connection, served until it ends or is closed.

mod served;
mod worker;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::TokioExecutor;
use hyper_util::server::conn::auto;
use tokio::net::TcpListener;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tower::Service;

use super::conn::{Admission, Registry, Timeouts, Tracked};
use crate::gateway::Gateway;
use crate::server::tls::ListenerTls;
use mcp_ui_upstream::upstream::stdio::KILL_GRACE;
use served::{Served, refuse};

/// A bound gateway, ready to serve.
pub struct Server {
    listener: TcpListener,
    gateway: Arc<Gateway>,
    tls: Option<Arc<ListenerTls>>,
}

impl Server {
    pub async fn bind(gateway: Arc<Gateway>, addr: SocketAddr) -> std::io::Result<Self> {
        let listener = TcpListener::bind(addr).await?;
        Ok(Server::on(gateway, listener))
    }

    /// Serve on a socket already bound: its address (a port the system
    /// chose) can be known, and written into the configuration as
    /// `public_url`, before the gateway is made, with no moment at which
    /// another process could take the port.
    pub fn on(gateway: Arc<Gateway>, listener: TcpListener) -> Self {
        Server {
            listener,
            gateway,
            tls: None,
        }
    }

    /// Serve HTTPS: every connection begins with a TLS handshake, which must
    /// end within `limits.header_read_timeout_secs`.
    pub fn with_tls(mut self, tls: Arc<ListenerTls>) -> Self {
        self.tls = Some(tls);
        self
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.listener
            .local_addr()
            .expect("bound listener has an address")
    }

    pub fn gateway(&self) -> &Arc<Gateway> {
        &self.gateway
    }

    /// The connection cap in force: `limits.max_connections`, or the
    /// default derived from the file-descriptor limit.
    pub fn max_connections(&self) -> usize {
        self.gateway
            .limits
            .max_connections
            .unwrap_or_else(super::fd::default_max_connections)
    }

    /// Serve until `shutdown` fires, then stop accepting, let open exchanges
    /// finish for at most `grace`, and end every owned session. Connections
    /// are served on the calling runtime.
    pub async fn run(self, shutdown: CancellationToken, grace: Duration) {
        self.run_workers(1, shutdown, grace).await;
    }

    /// [`Server::run`], with connections spread over `workers` threads: the
    /// calling one and `workers - 1` more, each with a single-threaded
    /// runtime accepting from the same socket. A connection, the requests
    /// on it, and the upstream connections and stdio children they start
    /// stay on the thread that accepted it: no work is handed between
    /// threads on the way through.
    pub async fn run_workers(self, workers: usize, shutdown: CancellationToken, grace: Duration) {
        let registry = Arc::new(Registry::new(self.max_connections()));
        let gateway = self.gateway;
        let tls = self.tls;
        gateway.spawn_background();
        let listener = self.listener;
        // Fires once every owned session has been ended, for the workers
        // still serving connections.
        let closed = CancellationToken::new();
        let (listener, threads) = worker::spawn(
            listener,
            workers,
            &gateway,
            tls.as_ref(),
            &registry,
            &shutdown,
            &closed,
        );
        accept(&gateway, tls.as_ref(), listener, &shutdown, &registry).await;
        // The listener is closed: new connections are refused at once.
        tracing::info!(
            grace_secs = grace.as_secs(),
            "shutting down: no new connections; idle ones closed, open exchanges draining"
        );
        // Long-lived GET streams would hold the drain open: end them first.
        // Calls in flight go on, their children with them, until the grace.
        gateway.shutdown.cancel();
        let in_time = drain(&registry, grace).await;
        if !in_time {
            let left = registry.census();
            tracing::warn!(
                grace_secs = grace.as_secs(),
                requests = left.requests,
                connections = left.busy,
                "calls still in flight after the grace period; ending them"
            );
        }
        // Calls still waiting get an error naming the upstream, then every
        // child is stopped and reaped.
        gateway.close_all("the gateway is shutting down").await;
        // Each child's process group is ended (SIGTERM, SIGKILL after
        // `stdio::KILL_GRACE`) by the runtime that started it: keep every
        // runtime up until then.
        let reaped = tokio::time::timeout(KILL_GRACE + Duration::from_secs(3), async {
            while gateway.children.running() > 0 {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        });
        if reaped.await.is_err() {
            tracing::warn!(
                running = gateway.children.running(),
                "stdio children still running after shutdown; killing their groups"
            );
        }
        closed.cancel();
        if !in_time {
            let _ = tokio::time::timeout(Duration::from_secs(1), registry.drained()).await;
        }
        let joined = tokio::task::spawn_blocking(move || {
            for t in threads {
                let _ = t.join();
            }
        });
        let _ = tokio::time::timeout(Duration::from_secs(5), joined).await;
    }
}

/// Wait at most `grace` for every connection to close, saying every few
/// seconds what the wait is for. Whether they all closed in time.
async fn drain(registry: &Registry, grace: Duration) -> bool {
    let deadline = Instant::now() + grace;
    let drained = registry.drained();
    tokio::pin!(drained);
    // Said after a second, then every five.
    let mut every = Duration::from_secs(1);
    loop {
        let next = (Instant::now() + every).min(deadline);
        every = Duration::from_secs(5);
        tokio::select! {
            _ = &mut drained => return true,
            _ = tokio::time::sleep_until(next) => {}
        }
        if Instant::now() >= deadline {
            return false;
        }
        let now = registry.census();
        tracing::info!(
            requests = now.requests,
            connections = now.busy,
            "shutting down: waiting for requests in flight to finish"
        );
    }
}

/// Accept and serve connections until `stop` fires. The listener is closed
/// on return; the connections go on until they finish or `stop` closes them.
async fn accept(
    gateway: &Arc<Gateway>,
    tls: Option<&Arc<ListenerTls>>,
    listener: TcpListener,
    stop: &CancellationToken,
    registry: &Arc<Registry>,
) {
    let app = crate::stack::service(gateway);
    let limits = &gateway.limits;
    let builder = builder(limits);
    let timeouts = Timeouts {
        header: Duration::from_secs(limits.header_read_timeout_secs),
        idle: Duration::from_secs(limits.idle_connection_secs),
    };
    keep_a_timer(stop.clone());
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    accept_failed(registry, &e).await;
                    continue;
                }
            },
            _ = stop.cancelled() => break,
        };
        let conn = match registry.admit() {
            Admission::Admitted(c) => c,
            Admission::Refused => {
                refuse(&stream);
                if registry.should_warn() {
                    tracing::warn!(
                        max = registry.max(),
                        "every connection is busy (limits.max_connections): new clients get 503"
                    );
                }
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        // One copy of the stack per connection, called in turn by the
        // connection's task (`call` only starts a request; its future runs on
        // its own). Its services are always ready: no `poll_ready` needed.
        let app = std::cell::RefCell::new(app.clone());
        let this = conn.clone();
        let service =
            hyper::service::service_fn(move |mut req: http::Request<hyper::body::Incoming>| {
                req.extensions_mut()
                    .insert(crate::oauth::authorization_server::Peer(peer));
                let active = this.begin();
                let answer = app.borrow_mut().call(req);
                async move {
                    let resp = answer.await?;
                    Ok::<_, std::convert::Infallible>(resp.map(|b| Tracked::new(b, active)))
                }
            });
        let served = Served {
            builder: builder.clone(),
            conn,
            registry: registry.clone(),
            stop: stop.clone(),
            timeouts,
            peer,
        };
        match tls {
            None => {
                tokio::spawn(served.run(stream, service));
            }
            Some(tls) => {
                let (acceptor, metrics) = (tls.acceptor().clone(), gateway.metrics.clone());
                tokio::spawn(served.run_tls(acceptor, metrics, stream, service));
            }
        }
    }
}

/// The builder of every connection's HTTP/1.1 or HTTP/2 server.
fn builder(limits: &mcp_ui_model::config::Limits) -> Arc<auto::Builder<TokioExecutor>> {
    let mut builder = auto::Builder::new(TokioExecutor::new());
    // What a connection may hold before its request head is complete.
    builder.http1().max_buf_size(limits.max_header_bytes);
    builder
        .http2()
        .max_header_list_size(u32::try_from(limits.max_header_bytes).unwrap_or(u32::MAX));
    Arc::new(builder)
}

/// A timer always pending on this thread until `stop`: the timeout every
/// relayed request sets is then never the earliest, and setting it does not
/// wake the thread's event loop (a syscall and a spurious wake-up per
/// request).
fn keep_a_timer(stop: CancellationToken) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                _ = stop.cancelled() => return,
            }
        }
    });
}

/// Accepting failed (out of file descriptors and the like): close the
/// longest-idle connection if there is one, and wait rather than spin.
async fn accept_failed(registry: &Registry, e: &std::io::Error) {
    let room = registry.make_room();
    if registry.should_warn() {
        tracing::warn!(error = %e, closed_idle = room, "accept failed");
    }
    tokio::time::sleep(Duration::from_millis(if room { 5 } else { 50 })).await;
}

#[cfg(test)]
mod tests {
    use http::Request;
    use hyper::body::Incoming;

    use super::*;

    /// hyper keeps room for the service future of every open connection,
    /// idle or not: what an exchange needs must not live in it.
    #[test]
    fn a_connection_holds_little_for_its_exchanges() {
        fn size_of_future<S: Service<Request<Incoming>>>(_: &S) -> usize {
            std::mem::size_of::<S::Future>()
        }
        let config = mcp_ui_model::config::Config {
            overlays: std::path::PathBuf::from("/nonexistent/server-test-overlays"),
            ..Default::default()
        };
        let live = crate::live::Live::open(&config.overlays).expect("no overlays");
        let gw = Gateway::new(&config, Default::default(), live).expect("gateway");
        let size = size_of_future(&crate::stack::service(&gw));
        assert!(size <= 1024, "the service future is {size} bytes");
    }
}
