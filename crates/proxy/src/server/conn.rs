//! Each client connection's life: where it stands (waiting for its first
//! request head, part-way through a head, idle between requests, busy with
//! requests), the deadline of each of those phases, and the registry that
//! caps how many connections are open and closes the longest-idle one first
//! when a new client arrives at the cap.

use std::collections::HashMap;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body::{Body as HttpBody, Frame, SizeHint};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::Notify;

use mcp_ui_model::reply::{self, BoxError};

/// Where a connection stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Phase {
    /// Connected; no complete request head yet.
    Fresh = 0,
    /// Part-way through a request head after an idle spell (HTTP/1.1).
    Head = 1,
    /// Between requests.
    Idle = 2,
    /// Serving at least one request (its answer included).
    Busy = 3,
}

impl Phase {
    fn from_u8(v: u8) -> Phase {
        match v {
            0 => Phase::Fresh,
            1 => Phase::Head,
            2 => Phase::Idle,
            _ => Phase::Busy,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Phase::Fresh => "waiting for a first request",
            Phase::Head => "reading a request head",
            Phase::Idle => "idle",
            Phase::Busy => "serving",
        }
    }
}

/// How long each phase may last.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Timeouts {
    /// `Fresh` and `Head`: `limits.header_read_timeout_secs`.
    pub header: Duration,
    /// `Idle`: `limits.idle_connection_secs`.
    pub idle: Duration,
}

/// One client connection, shared by its reader, its requests' answers, its
/// task and the registry.
#[derive(Debug)]
pub struct Conn {
    id: u64,
    epoch: Instant,
    phase: AtomicU8,
    /// Requests whose answer has not been sent in full.
    active: AtomicU32,
    /// When the current phase began, in milliseconds since `epoch`.
    since: AtomicU64,
    /// HTTP/2 (by its preface): its frames between requests (pings,
    /// settings) are not a request head.
    h2: AtomicBool,
    read_any: AtomicBool,
    evict: Notify,
}

impl Conn {
    fn millis(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64
    }

    pub fn phase(&self) -> Phase {
        Phase::from_u8(self.phase.load(Ordering::Relaxed))
    }

    pub fn active(&self) -> u32 {
        self.active.load(Ordering::Relaxed)
    }

    /// How long the current phase has lasted.
    fn age(&self) -> Duration {
        let since = self.since.load(Ordering::Relaxed);
        Duration::from_millis(self.millis().saturating_sub(since))
    }

    /// What ran out, if the current phase has outlived its limit; otherwise
    /// how long until it would.
    pub fn expiry(&self, t: Timeouts) -> Result<Duration, &'static str> {
        let (limit, what) = match self.phase() {
            Phase::Fresh => (t.header, "no complete request head in time"),
            Phase::Head => (t.header, "request head not completed in time"),
            Phase::Idle => (t.idle, "idle"),
            // Requests bound themselves (timeouts, body floor rate); look
            // again after an idle period.
            Phase::Busy => return Ok(t.idle),
        };
        let age = self.age();
        if age >= limit {
            Err(what)
        } else {
            Ok(limit - age)
        }
    }

    /// A request starts: the connection is busy until the returned guard
    /// (moved into the answer's body) is dropped.
    pub(crate) fn begin(self: &Arc<Self>) -> Active {
        self.active.fetch_add(1, Ordering::Relaxed);
        self.phase.store(Phase::Busy as u8, Ordering::Relaxed);
        Active(self.clone())
    }

    /// Resolves once the registry picked this connection to make room.
    pub(crate) async fn evicted(&self) {
        self.evict.notified().await;
    }

    /// Bytes arrived from the client.
    fn on_read(&self, first: &[u8]) {
        if !self.read_any.swap(true, Ordering::Relaxed) && first.starts_with(b"PRI ") {
            self.h2.store(true, Ordering::Relaxed);
            // HTTP/2 has sent its preface: it is now between requests.
            self.set(Phase::Idle);
            return;
        }
        if self.phase() == Phase::Idle && !self.h2.load(Ordering::Relaxed) {
            self.set(Phase::Head);
        }
    }

    fn set(&self, phase: Phase) {
        self.since.store(self.millis(), Ordering::Relaxed);
        self.phase.store(phase as u8, Ordering::Relaxed);
    }
}

/// A request in progress on a [`Conn`].
#[derive(Debug)]
pub(crate) struct Active(Arc<Conn>);

impl Drop for Active {
    fn drop(&mut self) {
        if self.0.active.fetch_sub(1, Ordering::Relaxed) == 1 {
            self.0.set(Phase::Idle);
        }
    }
}

/// An answer's body that keeps its request counted as in progress until the
/// body is sent in full or dropped.
pub(crate) struct Tracked {
    body: reply::Body,
    _active: Active,
}

impl Tracked {
    pub fn new(body: reply::Body, active: Active) -> Self {
        Tracked {
            body,
            _active: active,
        }
    }
}

impl HttpBody for Tracked {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// A client socket that tells its [`Conn`] when bytes arrive.
pub(crate) struct Watched<S> {
    inner: S,
    conn: Arc<Conn>,
}

impl<S> Watched<S> {
    pub fn new(inner: S, conn: Arc<Conn>) -> Self {
        Watched { inner, conn }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Watched<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(r, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.conn.on_read(&buf.filled()[before..]);
        }
        r
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Watched<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

/// Every open client connection of the process, across worker threads.
#[derive(Debug)]
pub(crate) struct Registry {
    max: usize,
    epoch: Instant,
    open: Mutex<Open>,
    /// Fires when the last connection closes.
    empty: Notify,
    /// When a refusal was last logged, in milliseconds since `epoch`.
    warned: AtomicU64,
}

#[derive(Debug, Default)]
struct Open {
    next: u64,
    conns: HashMap<u64, Arc<Conn>>,
}

/// What [`Registry::admit`] decided.
pub(crate) enum Admission {
    Admitted(Arc<Conn>),
    /// At the cap with every connection busy.
    Refused,
}

impl Registry {
    pub fn new(max: usize) -> Self {
        Registry {
            max,
            epoch: Instant::now(),
            open: Mutex::new(Open::default()),
            empty: Notify::new(),
            warned: AtomicU64::new(u64::MAX),
        }
    }

    pub fn max(&self) -> usize {
        self.max
    }

    /// A new client connected: admit it, closing the longest-idle
    /// connection at the cap.
    pub(crate) fn admit(&self) -> Admission {
        let mut open = self.lock();
        if open.conns.len() >= self.max && !evict_one(&mut open.conns) {
            return Admission::Refused;
        }
        open.next += 1;
        let conn = Arc::new(Conn {
            id: open.next,
            epoch: self.epoch,
            phase: AtomicU8::new(Phase::Fresh as u8),
            active: AtomicU32::new(0),
            since: AtomicU64::new(self.epoch.elapsed().as_millis() as u64),
            h2: AtomicBool::new(false),
            read_any: AtomicBool::new(false),
            evict: Notify::new(),
        });
        open.conns.insert(conn.id, conn.clone());
        Admission::Admitted(conn)
    }

    /// Close the longest-idle connection to free a file descriptor (the
    /// process ran out). Whether there was one.
    pub(crate) fn make_room(&self) -> bool {
        evict_one(&mut self.lock().conns)
    }

    /// `conn` has closed.
    pub fn remove(&self, conn: &Conn) {
        let mut open = self.lock();
        open.conns.remove(&conn.id);
        if open.conns.is_empty() {
            self.empty.notify_waiters();
        }
    }

    pub fn len(&self) -> usize {
        self.lock().conns.len()
    }

    /// The connections serving requests, and those requests.
    pub(crate) fn census(&self) -> Census {
        let open = self.lock();
        let mut c = Census::default();
        for conn in open.conns.values() {
            if conn.phase() == Phase::Busy {
                c.busy += 1;
                c.requests += conn.active() as usize;
            }
        }
        c
    }

    /// Resolves once no connection is open.
    pub async fn drained(&self) {
        loop {
            let notified = self.empty.notified();
            if self.len() == 0 {
                return;
            }
            notified.await;
        }
    }

    /// Whether a refusal or an accept failure should be logged now: at most
    /// once every ten seconds.
    pub(crate) fn should_warn(&self) -> bool {
        let now = self.epoch.elapsed().as_millis() as u64;
        let last = self.warned.load(Ordering::Relaxed);
        if last != u64::MAX && now.saturating_sub(last) < 10_000 {
            return false;
        }
        self.warned
            .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Open> {
        self.open.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Busy connections at one moment.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Census {
    /// Connections serving requests.
    pub busy: usize,
    /// The requests they serve.
    pub requests: usize,
}

/// Tell the connection that has waited longest without a request in
/// progress to close, and forget it. Whether there was one.
fn evict_one(conns: &mut HashMap<u64, Arc<Conn>>) -> bool {
    let victim = conns
        .values()
        .filter(|c| c.phase() != Phase::Busy)
        .max_by_key(|c| c.age())
        .map(|c| c.id);
    match victim.and_then(|id| conns.remove(&id)) {
        Some(conn) => {
            conn.evict.notify_one();
            true
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: Timeouts = Timeouts {
        header: Duration::from_secs(10),
        idle: Duration::from_secs(120),
    };

    fn admitted(r: &Registry) -> Arc<Conn> {
        match r.admit() {
            Admission::Admitted(c) => c,
            Admission::Refused => panic!("refused"),
        }
    }

    #[test]
    fn phases_follow_bytes_and_requests() {
        let r = Registry::new(8);
        let c = admitted(&r);
        assert_eq!(c.phase(), Phase::Fresh);
        c.on_read(b"POST /mcp HTTP/1.1\r\n");
        assert_eq!(c.phase(), Phase::Fresh, "a first head keeps its deadline");
        let a = c.begin();
        let b = c.begin();
        assert_eq!((c.phase(), c.active()), (Phase::Busy, 2));
        drop(a);
        assert_eq!(c.phase(), Phase::Busy);
        drop(b);
        assert_eq!(c.phase(), Phase::Idle);
        c.on_read(b"GET");
        assert_eq!(c.phase(), Phase::Head);
        assert!(c.expiry(T).is_ok());
    }

    #[test]
    fn http2_frames_between_requests_are_not_a_head() {
        let r = Registry::new(8);
        let c = admitted(&r);
        c.on_read(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
        assert_eq!(c.phase(), Phase::Idle);
        c.on_read(b"\0\0\0\x06\0\0\0\0\0");
        assert_eq!(c.phase(), Phase::Idle);
    }

    #[test]
    fn the_cap_closes_an_idle_connection_before_refusing() {
        let r = Registry::new(2);
        let busy = admitted(&r);
        let _serving = busy.begin();
        let idle = admitted(&r);
        let third = admitted(&r);
        assert_eq!(r.len(), 2, "the idle one made room");
        assert!(!r.lock().conns.contains_key(&idle.id));
        let _also = third.begin();
        assert!(matches!(r.admit(), Admission::Refused), "all busy");
        r.remove(&busy);
        r.remove(&third);
        assert_eq!(r.len(), 0);
    }

    #[test]
    fn warnings_are_rate_limited() {
        let r = Registry::new(1);
        assert!(r.should_warn());
        assert!(!r.should_warn());
    }
}
