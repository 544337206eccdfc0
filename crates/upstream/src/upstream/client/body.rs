//! The body of an upstream's response. It must end by its request's
//! deadline, however it stalls or trickles, unless made unbounded; read to
//! its end, it gives its connection back to the pool, and one dropped early
//! or failed closes it.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body as HttpBody, Frame, SizeHint};
use hyper::body::Incoming;

use super::pool::Checkin;

/// The body of an upstream's response; reading it to the end returns its
/// connection to the pool. It fails once its request's deadline has passed,
/// unless made [`unbounded`](UpstreamBody::unbounded).
pub struct UpstreamBody {
    pub(super) inner: Incoming,
    pub(super) checkin: Option<Checkin>,
    pub(super) deadline: Option<Deadline>,
    /// The whole body, read before it was passed on ([`UpstreamBody::read_whole`]).
    pub(super) read: Option<Bytes>,
}

/// When a body must have ended, and the bound it enforces (for messages).
pub(super) struct Deadline {
    pub(super) timer: Pin<Box<tokio::time::Sleep>>,
    pub(super) secs: u64,
    pub(super) passed: bool,
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
