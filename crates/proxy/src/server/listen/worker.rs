//! The extra worker threads of a listener: each a single-threaded runtime
//! accepting from the same socket, kept up until every owned session is
//! closed after shutdown.

use std::sync::Arc;

use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::gateway::Gateway;
use crate::server::conn::Registry;
use crate::server::tls::ListenerTls;

/// One extra worker thread of [`super::Server::run_workers`].
struct Worker {
    gateway: Arc<Gateway>,
    tls: Option<Arc<ListenerTls>>,
    registry: Arc<Registry>,
    shutdown: CancellationToken,
    closed: CancellationToken,
}

impl Worker {
    /// Serve on a single-threaded runtime of this thread until every owned
    /// session is closed after shutdown.
    fn run(self, socket: std::net::TcpListener) {
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
            super::accept::accept(
                &self.gateway,
                self.tls.as_ref(),
                listener,
                &self.shutdown,
                &self.registry,
            )
            .await;
            // This thread's connections, and the sessions it started (their
            // stdio children, their upstream connections), may still serve
            // calls: this runtime runs until every session is closed.
            self.closed.cancelled().await;
        });
    }
}

/// Start `workers - 1` worker threads accepting from `listener` as well;
/// the listener back (for the calling thread), and the threads started.
/// Fewer start when the socket cannot be shared or a thread not started.
pub(super) fn spawn(
    listener: TcpListener,
    workers: usize,
    gateway: &Arc<Gateway>,
    tls: Option<&Arc<ListenerTls>>,
    registry: &Arc<Registry>,
    shutdown: &CancellationToken,
    closed: &CancellationToken,
) -> (TcpListener, Vec<std::thread::JoinHandle<()>>) {
    let mut threads = Vec::new();
    if workers <= 1 {
        return (listener, threads);
    }
    let std = listener.into_std().expect("a bound listener");
    for n in 1..workers {
        let Ok(socket) = std.try_clone() else {
            tracing::warn!(workers = n, "cannot share the listener; fewer workers");
            break;
        };
        let worker = Worker {
            gateway: gateway.clone(),
            tls: tls.cloned(),
            registry: registry.clone(),
            shutdown: shutdown.clone(),
            closed: closed.clone(),
        };
        match std::thread::Builder::new()
            .name(format!("worker-{n}"))
            .spawn(move || worker.run(socket))
        {
            Ok(t) => threads.push(t),
            Err(e) => {
                tracing::warn!(error = %e, "cannot start a worker thread; fewer workers");
                break;
            }
        }
    }
    (
        TcpListener::from_std(std).expect("inside a runtime"),
        threads,
    )
}
