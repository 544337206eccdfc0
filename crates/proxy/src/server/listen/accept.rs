//! Accepting connections on one thread: each admitted (or refused at the
//! cap with a short 503), and served on a task of its own, over TLS when the
//! listener has it.

use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::TokioExecutor;
use hyper_util::server::conn::auto;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tower::Service;

use super::served::{Served, refuse};
use crate::gateway::Gateway;
use crate::server::conn::{Admission, Registry, Timeouts, Tracked};
use crate::server::tls::ListenerTls;

/// Accept and serve connections until `stop` fires. The listener is closed
/// on return; the connections go on until they finish or `stop` closes them.
pub(super) async fn accept(
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
