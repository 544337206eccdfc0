//! W3C trace context: the `traceparent` and `tracestate` a client sends (in
//! its HTTP headers or in `params._meta`) and the ones the gateway passes on.

/// A 16-byte trace id and an 8-byte span id; all zeros is invalid.
pub(crate) type TraceId = [u8; 16];
pub(crate) type SpanId = [u8; 8];

/// Longest `tracestate` carried (the W3C limit is 32 members of at most 256
/// characters each; longer values are dropped, not cut).
pub(crate) const MAX_TRACESTATE: usize = 512;

/// A remote span's context, as received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Remote {
    pub trace_id: TraceId,
    pub span_id: SpanId,
    pub sampled: bool,
    /// The vendor data that comes with it, passed on as received.
    pub tracestate: Option<String>,
}

/// Parses a `traceparent` value: `00-<32 hex>-<16 hex>-<2 hex>` (a later
/// version may append fields after a `-`); zero ids and version `ff` are
/// invalid.
pub(crate) fn parse_traceparent(v: &str) -> Option<(TraceId, SpanId, bool)> {
    let b = v.trim().as_bytes();
    if b.len() < 55 || b[2] != b'-' || b[35] != b'-' || b[52] != b'-' {
        return None;
    }
    let [version] = lower_hex::<1>(&b[0..2])?;
    if version == 0xff || (version == 0 && b.len() != 55) || (b.len() > 55 && b[55] != b'-') {
        return None;
    }
    let trace_id = lower_hex::<16>(&b[3..35])?;
    let span_id = lower_hex::<8>(&b[36..52])?;
    let [flags] = lower_hex::<1>(&b[53..55])?;
    if trace_id == [0; 16] || span_id == [0; 8] {
        return None;
    }
    Some((trace_id, span_id, flags & 1 == 1))
}

/// A remote context from a `traceparent` and an optional `tracestate`
/// (kept when it is printable ASCII of at most [`MAX_TRACESTATE`] bytes).
pub fn remote(traceparent: &str, tracestate: Option<&str>) -> Option<Remote> {
    let (trace_id, span_id, sampled) = parse_traceparent(traceparent)?;
    let tracestate = tracestate
        .map(str::trim)
        .filter(|s| !s.is_empty() && s.len() <= MAX_TRACESTATE)
        .filter(|s| s.bytes().all(|c| (0x20..0x7f).contains(&c)))
        .map(str::to_owned);
    Some(Remote {
        trace_id,
        span_id,
        sampled,
        tracestate,
    })
}

/// The `traceparent` of a span.
pub fn traceparent(trace_id: &TraceId, span_id: &SpanId, sampled: bool) -> String {
    let flags = if sampled { "01" } else { "00" };
    format!(
        "00-{}-{}-{flags}",
        hex::encode(trace_id),
        hex::encode(span_id)
    )
}

/// The `N` bytes written as `2 * N` lowercase hex digits in `text`; the
/// W3C trace context allows no other case.
fn lower_hex<const N: usize>(text: &[u8]) -> Option<[u8; N]> {
    if text.iter().any(u8::is_ascii_uppercase) {
        return None;
    }
    let mut out = [0u8; N];
    hex::decode_to_slice(text, &mut out).ok()?;
    Some(out)
}

/// A new random trace id.
pub(crate) fn new_trace_id() -> TraceId {
    loop {
        let id: TraceId = rand::random();
        if id != [0; 16] {
            return id;
        }
    }
}

/// A new random span id.
pub(crate) fn new_span_id() -> SpanId {
    loop {
        let id: SpanId = rand::random();
        if id != [0; 8] {
            return id;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traceparents() {
        let v = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let (t, s, sampled) = parse_traceparent(v).unwrap();
        assert!(sampled);
        assert_eq!(traceparent(&t, &s, true), v);
        assert!(
            parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00")
                .is_some_and(|p| !p.2)
        );
        // Zero ids, bad version, uppercase, wrong length.
        assert!(
            parse_traceparent("00-00000000000000000000000000000000-00f067aa0ba902b7-01").is_none()
        );
        assert!(
            parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01").is_none()
        );
        assert!(
            parse_traceparent("ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01").is_none()
        );
        assert!(
            parse_traceparent("00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01").is_none()
        );
        assert!(
            parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x")
                .is_none()
        );
        // A later version may carry more.
        assert!(
            parse_traceparent("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-abc")
                .is_some()
        );
        assert!(parse_traceparent("").is_none());
        assert!(remote(v, Some("a=b\u{7}")).unwrap().tracestate.is_none());
        assert_eq!(
            remote(v, Some("rojo=1")).unwrap().tracestate.as_deref(),
            Some("rojo=1")
        );
    }
}
