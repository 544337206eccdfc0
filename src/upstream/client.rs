//! The HTTP client shared by every HTTP and legacy SSE upstream: HTTP/1.1
//! keep-alive connections pooled per worker thread, a connect timeout, and
//! errors that name the upstream.
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
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll};
use std::thread::ThreadId;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::header::{self, HeaderValue};
use http_body::{Body as HttpBody, Frame, SizeHint};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;

use super::error::UpstreamError;

/// Idle connections are closed after this long unused.
const IDLE_TIMEOUT: Duration = Duration::from_secs(90);
/// Most bytes read from a connection at once. Larger reads save few
/// syscalls, and a body held while it is read (a JSON answer the gateway
/// checks) would pin every one of those buffers.
const READ_BUFFER: usize = 64 * 1024;
/// Most idle connections kept per thread and upstream address.
const MAX_IDLE: usize = 256;

/// A pooled HTTP/1.1 client. Cheap to clone: clones share the pool.
#[derive(Clone)]
pub struct Client {
    inner: Arc<Pool>,
}

struct Pool {
    connect_timeout: Duration,
    /// Idle connections by the thread that drives them, then by
    /// `host:port`, most recently used last.
    idle: Mutex<HashMap<ThreadId, ByAddress, Hasher>>,
}

/// The pool's keys are thread ids and upstream addresses from the
/// configuration: no client chooses them.
type Hasher = foldhash::fast::RandomState;

/// One thread's idle connections, by `host:port`.
type ByAddress = HashMap<String, Vec<Idle>, Hasher>;

struct Idle {
    sender: SendRequest<Full<Bytes>>,
    since: Instant,
}

/// A client with connection reuse. One per gateway process.
pub fn client(connect_timeout: Duration) -> Client {
    Client {
        inner: Arc::new(Pool {
            connect_timeout,
            idle: Mutex::default(),
        }),
    }
}

/// The body of an upstream's response; reading it to the end returns its
/// connection to the pool. It fails once its request's deadline has passed,
/// unless made [`unbounded`](UpstreamBody::unbounded).
pub struct UpstreamBody {
    inner: Incoming,
    checkin: Option<Checkin>,
    deadline: Option<Deadline>,
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
    sender: SendRequest<Full<Bytes>>,
}

impl Pool {
    fn checkout(&self, key: &str) -> Option<SendRequest<Full<Bytes>>> {
        let thread = std::thread::current().id();
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        let list = idle.get_mut(&thread)?.get_mut(key)?;
        // Dropping a stale sender closes its connection.
        while let Some(c) = list.pop() {
            if !c.sender.is_closed() && c.since.elapsed() < IDLE_TIMEOUT {
                return Some(c.sender);
            }
        }
        None
    }

    fn checkin(&self, key: String, sender: SendRequest<Full<Bytes>>) {
        if sender.is_closed() {
            return;
        }
        let thread = std::thread::current().id();
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        let list = idle.entry(thread).or_default().entry(key).or_default();
        if list.len() < MAX_IDLE {
            list.push(Idle {
                sender,
                since: Instant::now(),
            });
        }
    }
}

impl Client {
    async fn connect(
        &self,
        upstream: &str,
        host: &str,
        port: u16,
    ) -> Result<SendRequest<Full<Bytes>>, UpstreamError> {
        let unreachable = |detail: String| UpstreamError::Unreachable {
            upstream: upstream.to_owned(),
            detail,
        };
        let timeout = self.inner.connect_timeout;
        let stream =
            match tokio::time::timeout(timeout, tokio::net::TcpStream::connect((host, port))).await
            {
                Ok(Ok(s)) => s,
                Ok(Err(e)) => return Err(unreachable(e.to_string())),
                Err(_) => {
                    return Err(unreachable(format!(
                        "no connection within {} s (limits.connect_timeout_secs)",
                        timeout.as_secs()
                    )));
                }
            };
        let _ = stream.set_nodelay(true);
        let (sender, conn) = hyper::client::conn::http1::Builder::new()
            .max_buf_size(READ_BUFFER)
            .handshake(TokioIo::new(stream))
            .await
            .map_err(|e| unreachable(describe(&e)))?;
        tokio::spawn(async move {
            if let Err(e) = conn.await {
                tracing::debug!(error = %e, "upstream connection ended with an error");
            }
        });
        Ok(sender)
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
        let key = authority.as_str().to_owned();
        let host = authority
            .host()
            .trim_start_matches('[')
            .trim_end_matches(']');
        let port = authority.port_u16().unwrap_or(80);
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
        loop {
            let (mut sender, reused) = match self.inner.checkout(&key) {
                Some(s) => (s, true),
                None => (self.connect(upstream, host, port).await?, false),
            };
            if let Err(e) = sender.ready().await {
                if reused {
                    continue;
                }
                return Err(request_error(upstream, &e));
            }
            match sender.try_send_request(req).await {
                Ok(resp) => {
                    let checkin = Checkin {
                        pool: Arc::downgrade(&self.inner),
                        key,
                        sender,
                    };
                    return Ok(resp.map(|inner| UpstreamBody {
                        inner,
                        checkin: Some(checkin),
                        deadline: None,
                    }));
                }
                Err(mut e) => match e.take_message() {
                    Some(unsent) if reused => req = unsent,
                    _ => return Err(request_error(upstream, e.error())),
                },
            }
        }
    }
}

/// Send a request, waiting at most `timeout` for the response head; the
/// body then fails if it has not ended `timeout` after the request was sent.
pub async fn send(
    client: &Client,
    upstream: &str,
    req: http::Request<Full<Bytes>>,
    timeout: Duration,
) -> Result<http::Response<UpstreamBody>, UpstreamError> {
    let deadline = tokio::time::Instant::now() + timeout;
    match tokio::time::timeout_at(deadline, client.exchange(upstream, req)).await {
        Ok(result) => result.map(|resp| {
            resp.map(|mut body| {
                body.deadline = Some(Deadline {
                    timer: Box::pin(tokio::time::sleep_until(deadline)),
                    secs: timeout.as_secs(),
                    passed: false,
                });
                body
            })
        }),
        Err(_) => Err(UpstreamError::Timeout {
            upstream: upstream.to_owned(),
            seconds: timeout.as_secs(),
        }),
    }
}

fn request_error(upstream: &str, e: &hyper::Error) -> UpstreamError {
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
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
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
