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
    pub(crate) start_nanos: u64,
    pub(crate) end_nanos: u64,
    pub attributes: Vec<(&'static str, Value)>,
    /// Set for a failed operation: the status message.
    pub error: Option<String>,
}

impl SpanData {
    /// About how many bytes the span holds: what the export queue counts
    /// against its byte bound.
    pub(crate) fn weight(&self) -> usize {
        let text = |s: &Option<String>| s.as_ref().map_or(0, String::len);
        std::mem::size_of::<SpanData>()
            + self.name.len()
            + text(&self.tracestate)
            + text(&self.error)
            + self
                .attributes
                .iter()
                .map(|(k, v)| {
                    std::mem::size_of::<(&str, Value)>()
                        + k.len()
                        + match v {
                            Value::Str(s) => s.len(),
                            Value::Int(_) => 0,
                        }
                })
                .sum::<usize>()
    }
}

/// `s` cut to at most `max` characters (a `…` in place of the rest), at a
/// character boundary.
pub fn cut(s: &mut String, max: usize) {
    if let Some((at, _)) = s.char_indices().nth(max) {
        let at = s[..at].char_indices().next_back().map_or(0, |(i, _)| i);
        s.truncate(at);
        s.push('…');
        // What was cut is given back: the span may wait in the queue.
        s.shrink_to_fit();
    }
}

/// `v` cut as [`cut`] cuts a string.
pub(crate) fn cut_value(v: &mut Value, max: usize) {
    if let Value::Str(text) = v
        && text.len() > max
    {
        cut(text.to_mut(), max);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_cut_at_a_character_boundary() {
        let mut s = "é".repeat(10);
        cut(&mut s, 4);
        assert_eq!(s, "ééé…");
        assert_eq!(s.chars().count(), 4);
        let mut short = "abc".to_owned();
        cut(&mut short, 3);
        assert_eq!(short, "abc");
        let mut v = Value::from("x".repeat(5000));
        cut_value(&mut v, 1024);
        let Value::Str(v) = v else { unreachable!() };
        assert_eq!(v.chars().count(), 1024);
        let mut n = Value::Int(7);
        cut_value(&mut n, 1);
        assert_eq!(n, Value::Int(7));
    }
}
