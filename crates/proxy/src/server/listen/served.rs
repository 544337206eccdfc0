//! One accepted connection, served over HTTP/1.1 or HTTP/2 (after its TLS
//! handshake when the listener has TLS) until it ends, its phase outlives
//! its limit, a newcomer needs its place, or shutdown; and the short 503 of
//! a connection refused at the cap.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use tokio::net::TcpStream;
use tokio::time::Instant;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;

use crate::metrics::Metrics;
use crate::server::conn::{Conn, Phase, Registry, Timeouts, Tracked, Watched};

/// One accepted connection, served until it ends or is closed.
pub(super) struct Served {
    pub(super) builder: Arc<auto::Builder<TokioExecutor>>,
    pub(super) conn: Arc<Conn>,
    pub(super) registry: Arc<Registry>,
    pub(super) stop: CancellationToken,
    pub(super) timeouts: Timeouts,
    pub(super) peer: SocketAddr,
}

impl Served {
    /// Serve HTTP on `stream` (TCP, or TLS after its handshake) until the
    /// client closes it, its phase outlives its limit, the registry needs its
    /// place, or shutdown (at once when it serves no request, after its
    /// requests otherwise).
    pub(super) async fn run<I, S>(self, stream: I, service: S)
    where
        I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
        S: hyper::service::Service<
                http::Request<hyper::body::Incoming>,
                Response = http::Response<Tracked>,
                Error = std::convert::Infallible,
            > + Send
            + 'static,
        S::Future: Send + 'static,
    {
        let Served {
            builder,
            conn,
            registry,
            stop,
            timeouts,
            peer,
        } = self;
        let io = TokioIo::new(Watched::new(stream, conn.clone()));
        let served = builder
            .serve_connection_with_upgrades(io, service)
            .into_owned();
        tokio::pin!(served);
        let timer = tokio::time::sleep(conn.expiry(timeouts).unwrap_or_default());
        tokio::pin!(timer);
        let mut closing = false;
        let why = loop {
            tokio::select! {
                ended = served.as_mut() => {
                    if let Err(e) = ended {
                        tracing::debug!(client.addr = %peer, error = %e, "connection ended with an error");
                    }
                    break None;
                }
                () = &mut timer => {
                    let busy = conn.phase() == Phase::Busy;
                    match conn.expiry(timeouts) {
                        _ if closing && !busy => break Some("shutting down"),
                        Err(why) => break Some(why),
                        Ok(_) if closing => timer.as_mut().reset(Instant::now() + TICK),
                        Ok(left) => timer.as_mut().reset(Instant::now() + left),
                    }
                }
                () = conn.evicted() => break Some("closed for a new client at limits.max_connections"),
                () = stop.cancelled(), if !closing => {
                    if conn.phase() != Phase::Busy {
                        break Some("shutting down");
                    }
                    closing = true;
                    served.as_mut().graceful_shutdown();
                    timer.as_mut().reset(Instant::now() + TICK);
                }
            }
        };
        if let Some(why) = why {
            tracing::debug!(client.addr = %peer, phase = conn.phase().name(), reason = why, "connection closed");
        }
        registry.remove(&conn);
    }

    /// [`Self::run`] once the TLS handshake on `stream` is done. The
    /// handshake is the head of the connection: it must end within the
    /// head's limit, and gives way to a newcomer or to shutdown like a
    /// connection that sent nothing.
    pub(super) async fn run_tls<S>(
        self,
        acceptor: TlsAcceptor,
        metrics: Arc<Metrics>,
        stream: TcpStream,
        service: S,
    ) where
        S: hyper::service::Service<
                http::Request<hyper::body::Incoming>,
                Response = http::Response<Tracked>,
                Error = std::convert::Infallible,
            > + Send
            + 'static,
        S::Future: Send + 'static,
    {
        let handshake = tokio::time::timeout(self.timeouts.header, acceptor.accept(stream));
        let why = tokio::select! {
            done = handshake => match done {
                Ok(Ok(stream)) => {
                    metrics.tls_accepted();
                    self.run(stream, service).await;
                    return;
                }
                Ok(Err(e)) => format!("TLS handshake failed: {e}"),
                Err(_) => "no TLS handshake within limits.header_read_timeout_secs".to_owned(),
            },
            () = self.conn.evicted() => "closed for a new client at limits.max_connections".to_owned(),
            () = self.stop.cancelled() => "shutting down".to_owned(),
        };
        tracing::debug!(client.addr = %self.peer, reason = %why, "connection closed");
        self.registry.remove(&self.conn);
    }
}

/// How often a connection draining at shutdown looks whether its last
/// request is answered.
const TICK: Duration = Duration::from_millis(100);

/// At the cap with every connection busy: a short 503 and close, without
/// reading the request.
pub(super) fn refuse(stream: &TcpStream) {
    const BUSY: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nRetry-After: 1\r\nConnection: close\r\nContent-Length: 51\r\n\r\nevery connection is busy (limits.max_connections)\r\n";
    let _ = stream.try_write(BUSY);
}
