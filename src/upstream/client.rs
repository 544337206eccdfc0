//! The HTTP client shared by every HTTP and legacy SSE upstream: keep-alive
//! connections pooled per worker thread, a connect timeout, and errors that
//! name the upstream. `https://` upstreams are reached over TLS
//! ([`crate::tls::upstream`]), with HTTP/2 when the upstream chooses it by
//! ALPN: one multiplexed connection per thread then, shared by every
//! request, instead of one idle HTTP/1.1 connection per request.
//!
//! A connection is driven by the runtime of the thread that opened it and
//! only ever lent to requests on that same thread, so a relayed request and
//! its upstream connection never hand work to another thread (each worker
//! runs its own single-threaded runtime, see [`crate::server`]). A
//! connection goes back to its pool when the response body has been read to
//! its end; one whose body is dropped early is closed.
//!
//! A request's deadline bounds its whole answer: the head must come in time
//! ([`send`]) and so must the end of the body, which fails with
//! [`BodyError::Timeout`] once the deadline passes (a body that stalls or
//! trickles cannot hold a request, or grow, past it). A stream meant to
//! outlive its request is made [`UpstreamBody::unbounded`].

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::task::{Context, Poll};
use std::thread::ThreadId;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::header::{self, HeaderValue};
use http_body::{Body as HttpBody, Frame, SizeHint};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::client::conn::{http1, http2};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};

use crate::config::{Mount, Transport};
use crate::outcome::UpstreamError;
use crate::tls::Connector;

/// Idle connections are closed after this long unused.
const IDLE_TIMEOUT: Duration = Duration::from_secs(90);
/// Most bytes read from a connection at once. Larger reads save few
/// syscalls, and a body held while it is read (a JSON answer the gateway
/// checks) would pin every one of those buffers.
const READ_BUFFER: usize = 64 * 1024;
/// Most idle connections kept per thread and upstream address.
const MAX_IDLE: usize = 256;
/// HTTP/2 upstream connections: what one stream may have unread, and all of
/// them together (64 streams' worth).
const H2_STREAM_WINDOW: u32 = 1024 * 1024;
const H2_CONNECTION_WINDOW: u32 = 64 * 1024 * 1024;
/// HTTP/2 upstream connections are pinged this often, and closed when a ping
/// is not answered in time.
const H2_PING_INTERVAL: Duration = Duration::from_secs(30);
const H2_PING_TIMEOUT: Duration = Duration::from_secs(20);

/// A pooled HTTP client. Cheap to clone: clones share the pool.
#[derive(Clone)]
pub struct Client {
    inner: Arc<Pool>,
}

struct Pool {
    connect_timeout: Duration,
    /// Idle connections by the thread that drives them, then by
    /// `host:port` (and upstream, for TLS), most recently used last.
    idle: Mutex<HashMap<ThreadId, ByAddress, Hasher>>,
    tls: Tls,
    /// TLS handshakes made with upstreams, for `/metrics`.
    handshakes: AtomicU64,
}

/// How each `https://` upstream is connected to.
#[derive(Default)]
struct Tls {
    /// Built at start for every configured `https://` upstream.
    by_upstream: HashMap<String, Arc<Connector>, Hasher>,
    /// For an `https://` request of an upstream without its own settings:
    /// the system's roots, read on first use.
    default: OnceLock<Result<Arc<Connector>, String>>,
}

impl Tls {
    fn connector(&self, upstream: &str) -> Result<Arc<Connector>, String> {
        if let Some(c) = self.by_upstream.get(upstream) {
            return Ok(c.clone());
        }
        self.default
            .get_or_init(|| {
                Connector::new(&Default::default(), &mut crate::tls::upstream::system_roots)
                    .map(Arc::new)
            })
            .clone()
    }
}

/// A connection's request side: HTTP/1.1, one request at a time, or
/// HTTP/2, shared by concurrent requests.
enum Sender {
    H1(http1::SendRequest<Full<Bytes>>),
    H2(http2::SendRequest<Full<Bytes>>),
}

impl Sender {
    fn is_closed(&self) -> bool {
        match self {
            Sender::H1(s) => s.is_closed(),
            Sender::H2(s) => s.is_closed(),
        }
    }
}

/// The pool's keys are thread ids and upstream addresses from the
/// configuration: no client chooses them.
type Hasher = foldhash::fast::RandomState;

/// One thread's idle connections, by `host:port`.
type ByAddress = HashMap<String, Vec<Idle>, Hasher>;

struct Idle {
    sender: Sender,
    since: Instant,
}

/// A client with connection reuse. One per gateway process.
pub fn client(connect_timeout: Duration) -> Client {
    with_tls(connect_timeout, Tls::default())
}

fn with_tls(connect_timeout: Duration, tls: Tls) -> Client {
    Client {
        inner: Arc::new(Pool {
            connect_timeout,
            idle: Mutex::default(),
            tls,
            handshakes: AtomicU64::new(0),
        }),
    }
}

/// A client for `mounts`: each `https://` upstream's trusted roots, client
/// certificate and server name are read now, so that a missing or bad file
/// is an error at start, naming the upstream.
pub fn client_for(connect_timeout: Duration, mounts: &[Mount]) -> Result<Client, Vec<String>> {
    let mut system = None;
    let mut roots = || {
        system
            .get_or_insert_with(crate::tls::upstream::system_roots)
            .clone()
    };
    let mut tls = Tls::default();
    let mut problems = Vec::new();
    for m in mounts {
        let https = match &m.transport {
            Transport::Http { url } | Transport::Sse { url } => url.scheme_str() == Some("https"),
            Transport::Stdio(_) => false,
        };
        if !https {
            continue;
        }
        match Connector::new(&m.tls, &mut roots) {
            Ok(c) => {
                tls.by_upstream.insert(m.name.clone(), Arc::new(c));
            }
            Err(e) => problems.push(format!("upstream '{}': {e}", m.name)),
        }
    }
    if problems.is_empty() {
        Ok(with_tls(connect_timeout, tls))
    } else {
        Err(problems)
    }
}

/// The body of an upstream's response; reading it to the end returns its
/// connection to the pool. It fails once its request's deadline has passed,
/// unless made [`unbounded`](UpstreamBody::unbounded).
pub struct UpstreamBody {
    inner: Incoming,
    checkin: Option<Checkin>,
    deadline: Option<Deadline>,
    /// The whole body, read before it was passed on ([`UpstreamBody::read_whole`]).
    read: Option<Bytes>,
}

/// When a body must have ended, and the bound it enforces (for messages).
struct Deadline {
    timer: Pin<Box<tokio::time::Sleep>>,
    secs: u64,
    passed: bool,
}

/// Why an upstream's body could not be read to its end.
#[derive(Debug, thiserror::Error)]
pub enum BodyError {
    /// The connection failed or the body was malformed.
    #[error(transparent)]
    Read(#[from] hyper::Error),
    /// The body had not ended when its request's deadline passed.
    #[error("its answer had not ended within {secs} s (limits.request_timeout_secs)")]
    Timeout { secs: u64 },
}

struct Checkin {
    pool: Weak<Pool>,
    key: String,
    sender: http1::SendRequest<Full<Bytes>>,
}

impl Pool {
    fn checkout(&self, key: &str) -> Option<Sender> {
        let thread = std::thread::current().id();
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        let list = idle.get_mut(&thread)?.get_mut(key)?;
        // Dropping a stale sender closes its connection.
        while let Some(c) = list.pop() {
            if c.sender.is_closed() {
                continue;
            }
            match &c.sender {
                // Shared: it stays in the pool for the next request.
                Sender::H2(s) => {
                    let s = s.clone();
                    list.push(c);
                    return Some(Sender::H2(s));
                }
                Sender::H1(_) if c.since.elapsed() < IDLE_TIMEOUT => return Some(c.sender),
                Sender::H1(_) => {}
            }
        }
        None
    }

    /// Stop sharing this thread's HTTP/2 connections to `key`: one failed.
    fn forget_shared(&self, key: &str) {
        let thread = std::thread::current().id();
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(list) = idle.get_mut(&thread).and_then(|a| a.get_mut(key)) {
            list.retain(|c| matches!(c.sender, Sender::H1(_)));
        }
    }

    /// Share a new HTTP/2 connection with the requests that follow, in place
    /// of any shared before (opened by requests that came together before the
    /// first was up): those close once their requests end.
    fn share(&self, key: &str, sender: &http2::SendRequest<Full<Bytes>>) {
        let thread = std::thread::current().id();
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        let list = idle
            .entry(thread)
            .or_default()
            .entry(key.to_owned())
            .or_default();
        list.retain(|c| matches!(c.sender, Sender::H1(_)) && !c.sender.is_closed());
        list.push(Idle {
            sender: Sender::H2(sender.clone()),
            since: Instant::now(),
        });
    }

    fn checkin(&self, key: String, sender: http1::SendRequest<Full<Bytes>>) {
        if sender.is_closed() {
            return;
        }
        let thread = std::thread::current().id();
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        let list = idle.entry(thread).or_default().entry(key).or_default();
        if list.len() < MAX_IDLE {
            list.push(Idle {
                sender: Sender::H1(sender),
                since: Instant::now(),
            });
        }
    }
}

impl Client {
    /// TLS handshakes made with upstreams since start.
    pub fn tls_handshakes(&self) -> u64 {
        self.inner.handshakes.load(Ordering::Relaxed)
    }

    async fn connect(
        &self,
        upstream: &str,
        tls: Option<&Connector>,
        host: &str,
        port: u16,
    ) -> Result<Sender, UpstreamError> {
        let unreachable = |detail: String| UpstreamError::Unreachable {
            upstream: upstream.to_owned(),
            detail,
        };
        let timeout = self.inner.connect_timeout;
        let connecting = async {
            let stream = tokio::net::TcpStream::connect((host, port))
                .await
                .map_err(|e| e.to_string())?;
            let _ = stream.set_nodelay(true);
            match tls {
                None => Ok((Transported::Plain(stream), false)),
                Some(tls) => {
                    let (stream, h2) = tls.connect(host, port, stream).await?;
                    self.inner.handshakes.fetch_add(1, Ordering::Relaxed);
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
            Transported::Plain(io) => self.handshake(upstream, io, h2).await,
            Transported::Tls(io) => self.handshake(upstream, *io, h2).await,
        }
    }

    /// The HTTP handshake over a connected stream.
    async fn handshake<I>(&self, upstream: &str, io: I, h2: bool) -> Result<Sender, UpstreamError>
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
        // After a shared HTTP/2 connection fails, a new one.
        let mut fresh = false;
        loop {
            let pooled = if fresh {
                None
            } else {
                self.inner.checkout(&key)
            };
            let (sender, reused) = match pooled {
                Some(s) => (s, true),
                None => {
                    // Boxed: a connection (a TLS handshake above all) has
                    // a large state, which every exchange would otherwise
                    // carry and move, pooled or not.
                    let s = Box::pin(self.connect(upstream, tls.as_deref(), host, port)).await?;
                    if let Sender::H2(h2) = &s {
                        self.inner.share(&key, h2);
                    }
                    (s, false)
                }
            };
            let sent = match sender {
                Sender::H1(mut sender) => {
                    if !req.headers().contains_key(header::HOST) {
                        let value = HeaderValue::from_str(authority.as_str())
                            .expect("an authority is a valid header");
                        req.headers_mut().insert(header::HOST, value);
                    }
                    // On the wire, the origin form: `/path?query`.
                    *req.uri_mut() = match uri.path_and_query() {
                        Some(path) => http::Uri::from(path.clone()),
                        None => http::Uri::from_static("/"),
                    };
                    if let Err(e) = sender.ready().await {
                        if reused {
                            continue;
                        }
                        return Err(request_error(upstream, tls.as_deref(), &e));
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
                            self.inner.forget_shared(&key);
                            fresh = true;
                            continue;
                        }
                        return Err(request_error(upstream, tls.as_deref(), &e));
                    }
                    let sent = sender.try_send_request(req).await;
                    if sent.is_err() && reused {
                        self.inner.forget_shared(&key);
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
                    _ => return Err(request_error(upstream, tls.as_deref(), e.error())),
                },
            }
        }
    }
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

fn request_error(upstream: &str, tls: Option<&Connector>, e: &hyper::Error) -> UpstreamError {
    // A TLS 1.3 server checks the client's certificate after the handshake:
    // its refusal arrives with the first request.
    if let Some(tls) = tls
        && let Some(detail) = crate::tls::upstream::explain_late(e, tls.has_client_cert())
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

impl UpstreamBody {
    /// The same body without a deadline: a stream that outlives its request
    /// (a GET stream, a legacy SSE connection), or one whose reader ends it
    /// at [`deadline`](UpstreamBody::deadline) in its own way.
    pub fn unbounded(mut self) -> Self {
        self.deadline = None;
        self
    }

    /// When the body must have ended, if it is bounded.
    pub fn deadline(&self) -> Option<tokio::time::Instant> {
        self.deadline.as_ref().map(|d| d.timer.deadline())
    }

    /// The whole body (at most `limit` bytes, else `None`), and a body
    /// that gives it again: an answer looked at before it is passed on.
    pub async fn read_whole(mut self, limit: usize) -> (Option<Bytes>, UpstreamBody) {
        use http_body_util::BodyExt;
        let mut out = Vec::new();
        let whole = loop {
            match self.frame().await {
                None => break true,
                Some(Ok(f)) => {
                    if let Ok(d) = f.into_data() {
                        out.extend_from_slice(&d);
                    }
                    // Too long: what was read goes on first, then the rest.
                    if out.len() > limit {
                        break false;
                    }
                }
                Some(Err(_)) => break false,
            }
        };
        let bytes = Bytes::from(out);
        self.read = Some(bytes.clone());
        (whole.then_some(bytes), self)
    }

    fn give_back(&mut self) {
        if let Some(c) = self.checkin.take()
            && let Some(pool) = c.pool.upgrade()
        {
            pool.checkin(c.key, c.sender);
        }
    }
}

impl HttpBody for UpstreamBody {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        if let Some(read) = self.read.take() {
            return Poll::Ready(Some(Ok(Frame::data(read))));
        }
        // The deadline first: a body that trickles is always ready with a
        // few more bytes, and must still end on time.
        if let Some(d) = self.deadline.as_mut() {
            if d.passed {
                return Poll::Ready(None);
            }
            if d.timer.as_mut().poll(cx).is_ready() {
                d.passed = true;
                let secs = d.secs;
                // Its connection is closed with it: the rest of the answer
                // may still come.
                self.checkin = None;
                return Poll::Ready(Some(Err(BodyError::Timeout { secs })));
            }
        }
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        match &polled {
            Poll::Ready(None) => self.give_back(),
            Poll::Ready(Some(Err(_))) => self.checkin = None,
            _ => {}
        }
        polled.map(|f| f.map(|r| r.map_err(BodyError::Read)))
    }

    fn is_end_stream(&self) -> bool {
        self.read.is_none() && self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        match &self.read {
            Some(b) if self.inner.is_end_stream() => SizeHint::with_exact(b.len() as u64),
            Some(b) => {
                let mut hint = SizeHint::new();
                hint.set_lower(b.len() as u64);
                hint
            }
            None => self.inner.size_hint(),
        }
    }
}

impl Drop for UpstreamBody {
    fn drop(&mut self) {
        // Read to its end but never polled past it (hyper stops at a known
        // length): the connection is still good.
        if self.inner.is_end_stream() {
            self.give_back();
        }
    }
}
