//! What a finished span holds: the data the exporter encodes.

use std::borrow::Cow;

use super::context::{SpanId, TraceId};

/// OTLP span kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Internal = 1,
    Server = 2,
    Client = 3,
}

/// An attribute value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Str(Cow<'static, str>),
    Int(i64),
}

impl From<&'static str> for Value {
    fn from(s: &'static str) -> Self {
        Value::Str(Cow::Borrowed(s))
    }
}

impl From<String> for Value {
    fn from(s: String) -> Self {
        Value::Str(Cow::Owned(s))
    }
}

impl From<i64> for Value {
    fn from(n: i64) -> Self {
        Value::Int(n)
    }
}

/// A finished span, as exported.
#[derive(Debug, Clone)]
pub struct SpanData {
    pub trace_id: TraceId,
    pub span_id: SpanId,
    pub parent: Option<SpanId>,
    pub tracestate: Option<String>,
    pub name: String,
    pub kind: Kind,
    pub start_nanos: u64,
    pub end_nanos: u64,
    pub attributes: Vec<(&'static str, Value)>,
    /// Set for a failed operation: the status message.
    pub error: Option<String>,
}
