//! The counters: fixed tables of atomics, built once per gateway, indexed by
//! (mount, method, outcome). Counting is a lookup and a few relaxed adds: no
//! lock, no allocation.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use http::StatusCode;

use super::conventional::Conventional;
use super::method::{METHODS, MethodId};
use super::session::{SessionEnd, Sessions};
use mcp_ui_model::outcome::Outcome;

pub(crate) use super::histogram::{BUCKETS, Histogram};

/// Lowest and highest HTTP status counted by code.
pub(super) const STATUS_MIN: u16 = 100;
pub(super) const STATUS_MAX: u16 = 599;

/// The gateway's counters; one per gateway, shared by every connection.
pub struct Metrics {
    pub(super) mounts: Vec<String>,
    /// `[mount][method][outcome]`.
    pub(super) requests: Box<[AtomicU64]>,
    /// `[mount][method]`.
    pub(super) durations: Box<[Histogram]>,
    /// By status code, `STATUS_MIN..=STATUS_MAX`; others count as 0 ("other").
    pub(super) http_status: Box<[AtomicU64]>,
    pub(super) http_other: AtomicU64,
    /// TLS handshakes completed at the listener.
    pub(super) tls_accepted: AtomicU64,
    /// The MCP semantic conventions' operation histograms.
    pub(super) conventional: Conventional,
    /// The MCP semantic conventions' session durations.
    pub(super) sessions: Sessions,
}

impl Metrics {
    /// Tables for the mounts, in mount order.
    pub fn new(mounts: impl IntoIterator<Item = String>) -> Self {
        let mounts: Vec<String> = mounts.into_iter().collect();
        let pairs = mounts.len() * METHODS.len();
        Metrics {
            requests: (0..pairs * Outcome::ALL.len())
                .map(|_| AtomicU64::new(0))
                .collect(),
            durations: (0..pairs).map(|_| Histogram::default()).collect(),
            http_status: (STATUS_MIN..=STATUS_MAX)
                .map(|_| AtomicU64::new(0))
                .collect(),
            http_other: AtomicU64::new(0),
            tls_accepted: AtomicU64::new(0),
            conventional: Conventional::default(),
            sessions: Sessions::default(),
            mounts,
        }
    }

    /// Time a client session that ended (see [`super::session`]);
    /// `version` is the client's `MCP-Protocol-Version`, when the end said.
    pub(crate) fn record_session(&self, version: Option<&str>, end: SessionEnd, lasted: Duration) {
        self.sessions.observe(version, end, lasted);
    }

    /// Count a TLS handshake completed at the listener.
    pub(crate) fn tls_accepted(&self) {
        self.tls_accepted.fetch_add(1, Ordering::Relaxed);
    }

    /// Count one exchange of `mount` that ended with `outcome` after `elapsed`.
    pub fn record(&self, mount: usize, method: MethodId, outcome: Outcome, elapsed: Duration) {
        let pair = mount * METHODS.len() + method.0 as usize;
        if let Some(c) = self
            .requests
            .get(pair * Outcome::ALL.len() + outcome as usize)
        {
            c.fetch_add(1, Ordering::Relaxed);
        }
        if let Some(h) = self.durations.get(pair) {
            h.observe(elapsed);
        }
        self.conventional.server(method, outcome, elapsed);
    }

    /// Time one request sent upstream (`mcp_client_operation_duration_seconds`).
    pub(crate) fn record_client(&self, method: MethodId, outcome: Outcome, elapsed: Duration) {
        self.conventional.client(method, outcome, elapsed);
    }

    /// Count one HTTP response by status.
    pub(crate) fn record_status(&self, status: StatusCode) {
        let s = status.as_u16();
        match self.http_status.get(s.wrapping_sub(STATUS_MIN) as usize) {
            Some(c) if s >= STATUS_MIN => c.fetch_add(1, Ordering::Relaxed),
            _ => self.http_other.fetch_add(1, Ordering::Relaxed),
        };
    }

    /// The number of exchanges counted for `mount`/`method`/`outcome`.
    pub fn requests(&self, mount: usize, method: MethodId, outcome: Outcome) -> u64 {
        let pair = mount * METHODS.len() + method.0 as usize;
        self.requests
            .get(pair * Outcome::ALL.len() + outcome as usize)
            .map_or(0, |c| c.load(Ordering::Relaxed))
    }
}
