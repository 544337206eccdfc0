//! The listener: connections accepted on one or more worker threads, each
//! served over HTTP/1.1 or HTTP/2 by [`crate::app`]'s service, and the
//! graceful shutdown that drains them.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tower::Service;

use crate::gateway::Gateway;
use crate::upstream::stdio::KILL_GRACE;

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
        self.run_workers(1, shutdown, grace).await;
    }

    /// [`Server::run`], with connections spread over `workers` threads: the
    /// calling one and `workers - 1` more, each with a single-threaded
    /// runtime accepting from the same socket. A connection, the requests
    /// on it, and the upstream connections and stdio children they start
    /// stay on the thread that accepted it: no work is handed between
    /// threads on the way through.
    pub async fn run_workers(self, workers: usize, shutdown: CancellationToken, grace: Duration) {
        let gateway = self.gateway;
        gateway.spawn_background();
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
        if !mine {
            let _ = tokio::time::timeout(Duration::from_secs(1), &mut drained).await;
        }
        let joined = tokio::task::spawn_blocking(move || {
            for t in threads {
                let _ = t.join();
            }
        });
        let _ = tokio::time::timeout(Duration::from_secs(5), joined).await;
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
    let app = crate::app::service(gateway);
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
        // One copy of the stack per connection, called in turn by the
        // connection's task (`call` only starts a request; its future runs on
        // its own). Its services are always ready: no `poll_ready` needed.
        let app = std::cell::RefCell::new(app.clone());
        let service = hyper::service::service_fn(move |req| app.borrow_mut().call(req));
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
        let config = crate::config::Config {
            overlays: std::path::PathBuf::from("/nonexistent/server-test-overlays"),
            ..Default::default()
        };
        let live = crate::live::Live::open(&config.overlays).expect("no overlays");
        let gw = Gateway::new(&config, Vec::new(), live).expect("gateway");
        let size = size_of_future(&crate::app::service(&gw));
        assert!(size <= 1024, "the service future is {size} bytes");
    }
}
