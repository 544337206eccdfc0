//! The OTLP/HTTP protobuf body of a batch of spans: an
//! `opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest` with
//! one resource and one instrumentation scope, written by hand (only the
//! fields the gateway emits; field numbers from opentelemetry-proto).

use super::data::{SpanData, Value};

/// The instrumentation scope's name.
pub(crate) const SCOPE: &str = "mcp-ui-gateway";

/// The encoded request for `spans` under `resource` attributes.
pub(crate) fn export_request(resource: &[(String, String)], spans: &[SpanData]) -> Vec<u8> {
    // Resource { repeated KeyValue attributes = 1 }
    let mut res = Vec::new();
    for (k, v) in resource {
        message(&mut res, 1, |b| key_value(b, k, &Value::from(v.clone())));
    }
    // InstrumentationScope { name = 1; version = 2 }
    let mut scope_spans = Vec::new();
    message(&mut scope_spans, 1, |b| {
        string(b, 1, SCOPE);
        string(b, 2, env!("CARGO_PKG_VERSION"));
    });
    // ScopeSpans { scope = 1; repeated Span spans = 2 }
    for s in spans {
        message(&mut scope_spans, 2, |b| span(b, s));
    }
    // ResourceSpans { resource = 1; repeated ScopeSpans scope_spans = 2 }
    let mut rs = Vec::new();
    bytes(&mut rs, 1, &res);
    bytes(&mut rs, 2, &scope_spans);
    // ExportTraceServiceRequest { repeated ResourceSpans resource_spans = 1 }
    let mut out = Vec::with_capacity(rs.len() + 8);
    bytes(&mut out, 1, &rs);
    out
}

fn span(b: &mut Vec<u8>, s: &SpanData) {
    bytes(b, 1, &s.trace_id);
    bytes(b, 2, &s.span_id);
    if let Some(ts) = &s.tracestate {
        string(b, 3, ts);
    }
    if let Some(p) = &s.parent {
        bytes(b, 4, p);
    }
    string(b, 5, &s.name);
    tag(b, 6, 0);
    varint(b, s.kind as u64);
    tag(b, 7, 1);
    b.extend_from_slice(&s.start_nanos.to_le_bytes());
    tag(b, 8, 1);
    b.extend_from_slice(&s.end_nanos.to_le_bytes());
    for (k, v) in &s.attributes {
        message(b, 9, |b| key_value(b, k, v));
    }
    // Status { message = 2; code = 3 (STATUS_CODE_ERROR = 2) }
    if let Some(msg) = &s.error {
        message(b, 15, |b| {
            string(b, 2, msg);
            tag(b, 3, 0);
            varint(b, 2);
        });
    }
    // flags = 16 (fixed32): the W3C trace flags (sampled) and
    // "has the remote-ness of the parent been recorded" (0x100).
    tag(b, 16, 5);
    b.extend_from_slice(&0x101u32.to_le_bytes());
}

/// KeyValue { key = 1; AnyValue value = 2 }, AnyValue { string_value = 1;
/// int_value = 3 }.
fn key_value(b: &mut Vec<u8>, k: &str, v: &Value) {
    string(b, 1, k);
    message(b, 2, |b| match v {
        Value::Str(s) => string(b, 1, s),
        Value::Int(n) => {
            tag(b, 3, 0);
            varint(b, *n as u64);
        }
    });
}

fn tag(b: &mut Vec<u8>, field: u32, wire: u8) {
    varint(b, u64::from(field) << 3 | u64::from(wire));
}

fn varint(b: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        b.push((v as u8) | 0x80);
        v >>= 7;
    }
    b.push(v as u8);
}

fn bytes(b: &mut Vec<u8>, field: u32, data: &[u8]) {
    tag(b, field, 2);
    varint(b, data.len() as u64);
    b.extend_from_slice(data);
}

fn string(b: &mut Vec<u8>, field: u32, s: &str) {
    bytes(b, field, s.as_bytes());
}

/// A nested message, written to a scratch buffer for its length.
fn message(b: &mut Vec<u8>, field: u32, write: impl FnOnce(&mut Vec<u8>)) {
    let mut inner = Vec::new();
    write(&mut inner);
    bytes(b, field, &inner);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::telemetry::data::Kind;

    #[test]
    fn varints_and_layout() {
        let mut b = Vec::new();
        varint(&mut b, 300);
        assert_eq!(b, [0xac, 0x02]);
        let mut b = Vec::new();
        varint(&mut b, (-1i64) as u64);
        assert_eq!(b.len(), 10);
        let span = SpanData {
            trace_id: [1; 16],
            span_id: [2; 8],
            parent: None,
            tracestate: None,
            name: "tools/call x".into(),
            kind: Kind::Server,
            start_nanos: 1,
            end_nanos: 2,
            attributes: vec![("a", Value::Int(-5))],
            error: None,
        };
        let out = export_request(&[("service.name".into(), "gw".into())], &[span]);
        // resource_spans, field 1, length-delimited.
        assert_eq!(out[0], 0x0a);
        assert!(out.windows(12).any(|w| w == b"tools/call x"));
    }
}
