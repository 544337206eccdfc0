//! `mcp_server_session_duration_seconds`, the session metric of the MCP
//! semantic conventions: how long each client session lasted, from the
//! `initialize` that opened it to its end. Labelled `mcp_protocol_version`
//! (a known revision, `other`, or absent when the end did not say),
//! `network_transport` and, for a session that ended in error,
//! `error_type`. Never a session id.
//!
//! A session ends, for the gateway, when
//! - the client deletes it (`DELETE`; timed from the start its sealed id
//!   carries, so any replica can);
//! - the gateway ends a session it owns (idle beyond its limit, or at
//!   shutdown);
//! - the upstream ends it: a stdio child exits or a legacy SSE connection
//!   breaks (`error_type="upstream_closed"`), or an HTTP upstream answers
//!   404 for the session it had issued (`error_type="session_expired"`).
//!
//! A client that simply stops using an HTTP-upstream session is not seen to
//! end: no server-side store holds it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use mcp_ui_wire::protocol::KNOWN_VERSIONS;

/// Upper bounds of the session buckets, in seconds (`+Inf` follows): a
/// second to a day.
pub(crate) const SESSION_BUCKETS: [f64; 14] = [
    1.0, 5.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0, 7200.0, 14400.0, 28800.0,
    86400.0,
];

/// How a session ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionEnd {
    /// The client deleted it.
    Deleted,
    /// The gateway ended it: idle beyond its limit, or shutdown.
    Ended,
    /// The upstream ended it (a child exited, a connection broke).
    UpstreamClosed,
    /// The upstream no longer knows it (404).
    Expired,
}

impl SessionEnd {
    const ALL: [SessionEnd; 4] = [
        SessionEnd::Deleted,
        SessionEnd::Ended,
        SessionEnd::UpstreamClosed,
        SessionEnd::Expired,
    ];

    /// `error_type`, for an end in error.
    pub fn error_type(self) -> Option<&'static str> {
        match self {
            SessionEnd::Deleted | SessionEnd::Ended => None,
            SessionEnd::UpstreamClosed => Some("upstream_closed"),
            SessionEnd::Expired => Some("session_expired"),
        }
    }
}

/// The `mcp_protocol_version` label of a client's `MCP-Protocol-Version`:
/// a known revision by index, past them `other`; `None` when absent.
fn version_index(version: Option<&str>) -> usize {
    match version {
        None => 0,
        Some(v) => KNOWN_VERSIONS
            .iter()
            .position(|k| *k == v)
            .map_or(KNOWN_VERSIONS.len() + 1, |i| i + 1),
    }
}

fn version_label(index: usize) -> Option<&'static str> {
    match index {
        0 => None,
        i => Some(KNOWN_VERSIONS.get(i - 1).copied().unwrap_or("other")),
    }
}

const VERSIONS: usize = KNOWN_VERSIONS.len() + 2;

/// One session-duration histogram.
#[derive(Default)]
struct Buckets {
    counts: [AtomicU64; SESSION_BUCKETS.len() + 1],
    sum_nanos: AtomicU64,
}

/// Session durations by `[version][end]`.
pub(super) struct Sessions {
    table: Box<[Buckets]>,
}

impl Default for Sessions {
    fn default() -> Self {
        Sessions {
            table: (0..VERSIONS * SessionEnd::ALL.len())
                .map(|_| Buckets::default())
                .collect(),
        }
    }
}

impl Sessions {
    pub(super) fn observe(&self, version: Option<&str>, end: SessionEnd, lasted: Duration) {
        let i = version_index(version) * SessionEnd::ALL.len() + end as usize;
        let Some(b) = self.table.get(i) else {
            return;
        };
        super::histogram::count(&b.counts, &b.sum_nanos, &SESSION_BUCKETS, lasted);
    }

    /// Each series with something counted: its labels, its per-bucket
    /// counts and its sum in nanoseconds.
    pub(super) fn series(&self) -> Vec<(String, Vec<u64>, u64)> {
        let mut out = Vec::new();
        for v in 0..VERSIONS {
            for (e, end) in SessionEnd::ALL.iter().enumerate() {
                let b = &self.table[v * SessionEnd::ALL.len() + e];
                let counts: Vec<u64> = b.counts.iter().map(|c| c.load(Ordering::Relaxed)).collect();
                if counts.iter().all(|c| *c == 0) {
                    continue;
                }
                let mut labels = String::new();
                if let Some(version) = version_label(v) {
                    labels.push_str(&format!("mcp_protocol_version=\"{version}\","));
                }
                labels.push_str("network_transport=\"tcp\"");
                if let Some(error) = end.error_type() {
                    labels.push_str(&format!(",error_type=\"{error}\""));
                }
                out.push((labels, counts, b.sum_nanos.load(Ordering::Relaxed)));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{Metrics, Snapshot};

    #[test]
    fn session_durations_with_bounded_labels() {
        let m = Metrics::new(["a".to_owned()]);
        m.record_session(
            Some("2025-06-18"),
            SessionEnd::Deleted,
            Duration::from_secs(90),
        );
        m.record_session(Some("made-up"), SessionEnd::Expired, Duration::from_secs(2));
        m.record_session(None, SessionEnd::UpstreamClosed, Duration::from_secs(4000));
        let text = m.render(&Snapshot::default());
        assert!(text.contains("# TYPE mcp_server_session_duration_seconds histogram"));
        assert!(text.contains("mcp_server_session_duration_seconds_count{mcp_protocol_version=\"2025-06-18\",network_transport=\"tcp\"} 1"), "{text}");
        assert!(text.contains("mcp_server_session_duration_seconds_bucket{mcp_protocol_version=\"2025-06-18\",network_transport=\"tcp\",le=\"60\"} 0"));
        assert!(text.contains("mcp_server_session_duration_seconds_bucket{mcp_protocol_version=\"2025-06-18\",network_transport=\"tcp\",le=\"120\"} 1"));
        assert!(text.contains("mcp_server_session_duration_seconds_count{mcp_protocol_version=\"other\",network_transport=\"tcp\",error_type=\"session_expired\"} 1"));
        assert!(text.contains("mcp_server_session_duration_seconds_count{network_transport=\"tcp\",error_type=\"upstream_closed\"} 1"));
        assert!(!text.contains("made-up"));
    }
}
