//! Opening a connection to an upstream: TCP, TLS for an `https://` upstream
//! (HTTP/2 when it chooses it by ALPN), then the HTTP handshake, its I/O
//! driven on the thread that opened it. Failures name the upstream and the
//! innermost cause.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::client::conn::{http1, http2};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};

use crate::tls::Connector;
use mcp_ui_model::outcome::UpstreamError;

/// Most bytes read from a connection at once. Larger reads save few
/// syscalls, and a body held while it is read (a JSON answer the gateway
/// checks) would pin every one of those buffers.
const READ_BUFFER: usize = 64 * 1024;
/// HTTP/2 upstream connections: what one stream may have unread, and all of
/// them together (64 streams' worth).
const H2_STREAM_WINDOW: u32 = 1024 * 1024;
const H2_CONNECTION_WINDOW: u32 = 64 * 1024 * 1024;
/// HTTP/2 upstream connections are pinged this often, and closed when a ping
/// is not answered in time.
const H2_PING_INTERVAL: Duration = Duration::from_secs(30);
const H2_PING_TIMEOUT: Duration = Duration::from_secs(20);

/// A connection's request side: HTTP/1.1, one request at a time, or
/// HTTP/2, shared by concurrent requests.
pub(super) enum Sender {
    H1(http1::SendRequest<Full<Bytes>>),
    H2(http2::SendRequest<Full<Bytes>>),
}

impl Sender {
    pub(super) fn is_closed(&self) -> bool {
        match self {
            Sender::H1(s) => s.is_closed(),
            Sender::H2(s) => s.is_closed(),
        }
    }
}

/// Connect to `host:port` within `timeout`, over TLS when `tls` is set
/// (counted in `handshakes`), and make the HTTP handshake.
pub(super) async fn connect(
    upstream: &str,
    tls: Option<&Connector>,
    host: &str,
    port: u16,
    timeout: Duration,
    handshakes: &AtomicU64,
) -> Result<Sender, UpstreamError> {
    let unreachable = |detail: String| UpstreamError::Unreachable {
        upstream: upstream.to_owned(),
        detail,
    };
    let connecting = async {
        let stream = tokio::net::TcpStream::connect((host, port))
            .await
            .map_err(|e| e.to_string())?;
        let _ = stream.set_nodelay(true);
        match tls {
            None => Ok((Transported::Plain(stream), false)),
            Some(tls) => {
                let (stream, h2) = tls.connect(host, port, stream).await?;
                handshakes.fetch_add(1, Ordering::Relaxed);
                Ok((Transported::Tls(Box::new(stream)), h2))
            }
        }
    };
    let (stream, h2) = match tokio::time::timeout(timeout, connecting).await {
        Ok(Ok(s)) => s,
        Ok(Err(detail)) => return Err(unreachable(detail)),
        Err(_) => {
            return Err(unreachable(format!(
                "no connection within {} s (limits.connect_timeout_secs)",
                timeout.as_secs()
            )));
        }
    };
    match stream {
        Transported::Plain(io) => handshake(upstream, io, h2).await,
        Transported::Tls(io) => handshake(upstream, *io, h2).await,
    }
}

/// The HTTP handshake over a connected stream.
async fn handshake<I>(upstream: &str, io: I, h2: bool) -> Result<Sender, UpstreamError>
where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let failed = |e: hyper::Error| UpstreamError::Unreachable {
        upstream: upstream.to_owned(),
        detail: describe(&e),
    };
    if h2 {
        let (sender, conn) = http2::Builder::new(TokioExecutor::new())
            .timer(TokioTimer::new())
            // One connection carries every request of this thread to the
            // upstream: a stream its reader leaves unread must not use up
            // the connection's window for the others.
            .initial_stream_window_size(H2_STREAM_WINDOW)
            .initial_connection_window_size(H2_CONNECTION_WINDOW)
            // A connection that died silently is found and replaced.
            .keep_alive_interval(H2_PING_INTERVAL)
            .keep_alive_timeout(H2_PING_TIMEOUT)
            .keep_alive_while_idle(true)
            .handshake(TokioIo::new(io))
            .await
            .map_err(failed)?;
        drive(conn);
        return Ok(Sender::H2(sender));
    }
    let (sender, conn) = http1::Builder::new()
        .max_buf_size(READ_BUFFER)
        .handshake(TokioIo::new(io))
        .await
        .map_err(failed)?;
    drive(conn);
    Ok(Sender::H1(sender))
}

/// Run a connection's I/O on this thread until it ends.
fn drive<C>(conn: C)
where
    C: std::future::Future<Output = Result<(), hyper::Error>> + Send + 'static,
{
    tokio::spawn(async move {
        if let Err(e) = conn.await {
            tracing::debug!(error = %e, "upstream connection ended with an error");
        }
    });
}

/// A connected stream, before HTTP.
enum Transported {
    Plain(tokio::net::TcpStream),
    Tls(Box<tokio_rustls::client::TlsStream<tokio::net::TcpStream>>),
}

pub(super) fn request_error(
    upstream: &str,
    tls: Option<&Connector>,
    e: &hyper::Error,
) -> UpstreamError {
    // A TLS 1.3 server checks the client's certificate after the handshake:
    // its refusal arrives with the first request.
    if let Some(tls) = tls
        && let Some(detail) = crate::tls::explain_late(e, tls.has_client_cert())
    {
        return UpstreamError::Unreachable {
            upstream: upstream.to_owned(),
            detail,
        };
    }
    if e.is_parse() || e.is_parse_status() {
        UpstreamError::Protocol {
            upstream: upstream.to_owned(),
            detail: format!("its answer is not HTTP ({})", describe(e)),
        }
    } else {
        UpstreamError::Unreachable {
            upstream: upstream.to_owned(),
            detail: describe(e),
        }
    }
}

/// The innermost cause, which is what an operator can act on
/// ("Connection refused"), rather than hyper's outer wording.
fn describe(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cur: &(dyn std::error::Error + 'static) = e;
    let mut text = cur.to_string();
    while let Some(next) = cur.source() {
        cur = next;
        text = cur.to_string();
    }
    text
}
