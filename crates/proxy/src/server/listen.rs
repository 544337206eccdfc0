//! The listener: connections accepted on one or more worker threads, each
//! served over HTTP/1.1 or HTTP/2 (over TLS when configured, the protocol
//! chosen by ALPN) by [`crate::stack`]'s service and closed when its phase
//! outlives its limit, and the graceful shutdown that closes idle
//! connections at once and drains the others.
//!
//! - `accept`: a thread's accepting and serving of connections;
//! - `worker`: the extra worker threads, each accepting from the socket;
//! - `served`: one accepted connection, served until it ends or is closed.

mod accept;
mod served;
mod worker;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::conn::Registry;
use crate::gateway::Gateway;
use crate::server::tls::ListenerTls;
use accept::accept;
use mcp_ui_upstream::upstream::stdio::KILL_GRACE;

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
            .unwrap_or_else(crate::fd::default_max_connections)
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
            while gateway.upstreams.children.running() > 0 {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        });
        if reaped.await.is_err() {
            tracing::warn!(
                running = gateway.upstreams.children.running(),
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

#[cfg(test)]
mod tests {
    use http::Request;
    use hyper::body::Incoming;
    use tower::Service;

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
