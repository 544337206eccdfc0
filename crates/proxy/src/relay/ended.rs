//! The ends of client sessions the relay sees, timed into
//! `mcp_server_session_duration_seconds` (see [`crate::metrics::session`]):
//! a `DELETE` answered, an HTTP upstream's 404 for its own session, and the
//! end of a session this process owns.

use std::sync::Arc;

use http::StatusCode;
use http::header::HeaderMap;

use super::context::{Ctx, PROTOCOL_HEADER, SESSION_HEADER, SessionRef};
use crate::gateway::Ids;
use crate::metrics::{Metrics, SessionEnd};
use mcp_ui_upstream::upstream::messages::{EndedBy, MessageSession};

/// The client's protocol revision, as its header says.
fn version(headers: &HeaderMap) -> Option<&str> {
    headers.get(PROTOCOL_HEADER).and_then(|v| v.to_str().ok())
}

/// Record the end of the session `headers` name, `end`, timed from the
/// start its id carries (an id sealed before ids carried one is not timed).
pub fn record(ids: &Ids, metrics: &Metrics, headers: &HeaderMap, end: SessionEnd) {
    let Some(token) = headers
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| ids.opened.open(&ids.key, v))
    else {
        return;
    };
    if let Some(lasted) = token.age() {
        metrics.record_session(version(headers), end, lasted);
    }
}

/// A `DELETE` answered `status`: a success ends the session; anything else
/// leaves it as it was (an HTTP upstream's 404 is [`expired`]).
pub fn deleted(ids: &Ids, metrics: &Metrics, headers: &HeaderMap, status: StatusCode) {
    if status.is_success() {
        record(ids, metrics, headers, SessionEnd::Deleted);
    }
}

/// An HTTP upstream answered `status` for the session it issued: a 404 says
/// it no longer knows it. A conforming client starts a new session then; one
/// that keeps sending the old id is counted each time it is told so.
pub fn expired(cx: &Ctx<'_>, status: StatusCode) {
    if status == StatusCode::NOT_FOUND
        && matches!(
            cx.session,
            SessionRef::Http {
                upstream: Some(_),
                ..
            }
        )
    {
        record(&cx.gw.ids, &cx.gw.metrics, cx.headers, SessionEnd::Expired);
    }
}

/// Time the session this process owns once it ends, unless the client
/// ended it (its `DELETE` is timed by [`deleted`]) or it never opened.
pub fn watch(metrics: Arc<Metrics>, session: Arc<MessageSession>) {
    // Detached on purpose: it ends with the session, which every path
    // (the client, the reaper, the upstream, shutdown) ends.
    tokio::spawn(async move {
        session.closed().cancelled().await;
        let end = match session.ended_by() {
            Some(EndedBy::Gateway) => SessionEnd::Ended,
            Some(EndedBy::Upstream) | None => SessionEnd::UpstreamClosed,
            Some(EndedBy::Client | EndedBy::Unopened | EndedBy::Probe) => return,
        };
        metrics.record_session(None, end, session.age());
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::Snapshot;

    /// A session the gateway reaps counts without an error; one whose
    /// upstream ends counts as `upstream_closed`; one the client deleted or
    /// that never opened is not counted here.
    #[tokio::test]
    async fn owned_sessions_are_timed_when_they_end() {
        let metrics = Arc::new(Metrics::new(["a".to_owned()]));
        let ends = [
            (EndedBy::Gateway, "idle"),
            (EndedBy::Upstream, "exited"),
            (EndedBy::Client, "deleted"),
            (EndedBy::Unopened, "initialize failed"),
        ];
        for (by, reason) in ends {
            let s = MessageSession::new("a".into(), None);
            watch(metrics.clone(), s.clone());
            s.end(by, reason);
            // Ended once: a later end does not change who ended it.
            s.end(EndedBy::Gateway, "shutdown");
            assert_eq!(s.ended_by(), Some(by));
        }
        let family = "mcp_server_session_duration_seconds_count";
        // The watchers run once the test yields; bounded.
        let mut text = String::new();
        for _ in 0..100 {
            text = metrics.render(&Snapshot::default());
            if text.matches(family).count() >= 2 {
                break;
            }
            tokio::task::yield_now().await;
        }
        assert!(text.contains(&format!("{family}{{network_transport=\"tcp\"}} 1")));
        assert!(text.contains(&format!(
            "{family}{{network_transport=\"tcp\",error_type=\"upstream_closed\"}} 1"
        )));
        assert_eq!(text.matches(family).count(), 2, "{text}");
    }
}
