//! What a client's clones share: idle keep-alive connections by the worker
//! thread that drives them and upstream address, the TLS settings of each
//! `https://` upstream, and the count of TLS handshakes. An HTTP/1.1
//! connection is lent to one request at a time and closed once idle too
//! long; an HTTP/2 one is shared by every request of its thread.

use std::collections::HashMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::thread::ThreadId;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::Full;
use hyper::client::conn::{http1, http2};

use super::connect::Sender;
use crate::tls::Connector;

/// Idle connections are closed after this long unused.
const IDLE_TIMEOUT: Duration = Duration::from_secs(90);
/// Most idle connections kept per thread and upstream address.
const MAX_IDLE: usize = 256;

pub(super) struct Pool {
    pub(super) connect_timeout: Duration,
    /// Idle connections by the thread that drives them, then by
    /// `host:port` (and upstream, for TLS), most recently used last.
    idle: Mutex<HashMap<ThreadId, ByAddress, Hasher>>,
    pub(super) tls: Tls,
    /// TLS handshakes made with upstreams, for `/metrics`.
    pub(super) handshakes: AtomicU64,
}

/// How each `https://` upstream is connected to.
#[derive(Default)]
pub(super) struct Tls {
    /// Built at start for every configured `https://` upstream.
    pub(super) by_upstream: HashMap<String, Arc<Connector>, Hasher>,
    /// For an `https://` request of an upstream without its own settings:
    /// the system's roots, read on first use.
    default: OnceLock<Result<Arc<Connector>, String>>,
}

impl Tls {
    pub(super) fn connector(&self, upstream: &str) -> Result<Arc<Connector>, String> {
        if let Some(c) = self.by_upstream.get(upstream) {
            return Ok(c.clone());
        }
        self.default
            .get_or_init(|| {
                Connector::new(&Default::default(), &mut crate::tls::system_roots).map(Arc::new)
            })
            .clone()
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

/// A connection lent to a request, to go back to its pool once the answer
/// has been read to its end.
pub(super) struct Checkin {
    pub(super) pool: Weak<Pool>,
    pub(super) key: String,
    pub(super) sender: http1::SendRequest<Full<Bytes>>,
}

impl Pool {
    pub(super) fn new(connect_timeout: Duration, tls: Tls) -> Pool {
        Pool {
            connect_timeout,
            idle: Mutex::default(),
            tls,
            handshakes: AtomicU64::new(0),
        }
    }

    pub(super) fn checkout(&self, key: &str) -> Option<Sender> {
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
    pub(super) fn forget_shared(&self, key: &str) {
        let thread = std::thread::current().id();
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(list) = idle.get_mut(&thread).and_then(|a| a.get_mut(key)) {
            list.retain(|c| matches!(c.sender, Sender::H1(_)));
        }
    }

    /// Share a new HTTP/2 connection with the requests that follow, in place
    /// of any shared before (opened by requests that came together before the
    /// first was up): those close once their requests end.
    pub(super) fn share(&self, key: &str, sender: &http2::SendRequest<Full<Bytes>>) {
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

    pub(super) fn checkin(&self, key: String, sender: http1::SendRequest<Full<Bytes>>) {
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
