//! The spans of requests to clients that wait for their answers (see
//! [`super::outbound`]): a bounded table by client session and request id.

use std::collections::HashMap;
use std::sync::Mutex;

use super::data::SpanData;

/// Most spans of requests to clients waiting for their answers.
pub(crate) const MAX_OPEN: usize = 1024;

/// Longest a span waits for its answer (a user may take a while to answer
/// an elicitation); then it is pushed out, unanswered, by the next request.
pub(crate) const MAX_WAIT_NANOS: u64 = 15 * 60 * 1_000_000_000;

/// A client session (`""` for none) and a request id (its JSON text).
pub type Key = (Box<str>, String);

/// Spans waiting for the client's answer.
#[derive(Default)]
pub struct Pending {
    open: Mutex<Open>,
}

#[derive(Default)]
struct Open {
    next: u64,
    /// The order each was opened in, and its span.
    spans: HashMap<Key, (u64, SpanData)>,
}

impl Pending {
    /// Keep `span` until its answer; the spans it pushes out: one under the
    /// same key, those that waited beyond [`MAX_WAIT_NANOS`], and the
    /// oldest when the table is full.
    pub fn insert(&self, key: Key, span: SpanData) -> Vec<SpanData> {
        let mut out = Vec::new();
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let since = span.start_nanos.saturating_sub(MAX_WAIT_NANOS);
        if open.spans.values().any(|(_, s)| s.start_nanos < since) {
            let expired: Vec<Key> = open
                .spans
                .iter()
                .filter(|(_, (_, s))| s.start_nanos < since)
                .map(|(k, _)| k.clone())
                .collect();
            for k in expired {
                out.extend(open.spans.remove(&k).map(|(_, s)| s));
            }
        }
        if open.spans.len() >= MAX_OPEN
            && !open.spans.contains_key(&key)
            && let Some(oldest) = open
                .spans
                .iter()
                .min_by_key(|(_, (n, _))| *n)
                .map(|(k, _)| k.clone())
            && let Some((_, s)) = open.spans.remove(&oldest)
        {
            out.push(s);
        }
        open.next += 1;
        let n = open.next;
        if let Some((_, s)) = open.spans.insert(key, (n, span)) {
            out.push(s);
        }
        out
    }

    /// The span waiting under `key`, taken out.
    pub fn take(&self, key: &Key) -> Option<SpanData> {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        open.spans.remove(key).map(|(_, s)| s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::telemetry::span::Kind;

    fn span(start_nanos: u64) -> SpanData {
        SpanData {
            trace_id: [1; 16],
            span_id: [2; 8],
            parent: None,
            tracestate: None,
            name: "sampling/createMessage".into(),
            kind: Kind::Client,
            start_nanos,
            end_nanos: 0,
            attributes: Vec::new(),
            error: None,
        }
    }

    fn key(n: usize) -> Key {
        ("s".into(), n.to_string())
    }

    #[test]
    fn bounded_in_number_and_in_time() {
        let p = Pending::default();
        let t = 10 * MAX_WAIT_NANOS;
        for n in 0..MAX_OPEN {
            assert!(p.insert(key(n), span(t + n as u64)).is_empty());
        }
        // Full: the oldest is pushed out.
        let out = p.insert(key(MAX_OPEN), span(t + MAX_OPEN as u64));
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].start_nanos, t);
        assert!(p.take(&key(0)).is_none());
        assert!(p.take(&key(1)).is_some());
        // The same key again: the earlier one is pushed out.
        assert_eq!(p.insert(key(2), span(t + 5000)).len(), 1);
        // Much later: every span that waited too long is pushed out.
        let later = t + 2 * MAX_WAIT_NANOS;
        assert_eq!(p.insert(key(0), span(later)).len(), MAX_OPEN - 1);
        assert!(p.take(&key(0)).is_some());
        assert!(p.take(&key(3)).is_none());
    }
}
