//! Spans: what is recorded of one operation, and the handle that ends it.
//! A span is built only for a sampled trace; ending it queues it for export
//! without waiting ([`super::export`]).

use std::sync::Arc;

use super::context::{SpanId, TraceId, new_span_id};
pub(crate) use super::data::SpanData;
pub use super::data::{Kind, Value};
use super::data::{cut, cut_value};
use super::tracer::Tracer;

/// Where a span sits in its trace: enough to start a child of it.
#[derive(Clone)]
pub struct Parent {
    pub tracer: Arc<Tracer>,
    pub trace_id: TraceId,
    pub span_id: SpanId,
}

impl Parent {
    /// Start a child span.
    pub fn child(&self, name: String, kind: Kind) -> Span {
        Span::start(
            self.tracer.clone(),
            self.trace_id,
            new_span_id(),
            Some(self.span_id),
            name,
            kind,
        )
    }
}

impl std::fmt::Debug for Parent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Parent")
            .field("trace_id", &hex::encode(self.trace_id))
            .field("span_id", &hex::encode(self.span_id))
            .finish()
    }
}

/// A span being recorded; queued for export when ended or dropped.
pub struct Span {
    tracer: Arc<Tracer>,
    data: Option<SpanData>,
}

impl Span {
    pub fn start(
        tracer: Arc<Tracer>,
        trace_id: TraceId,
        span_id: SpanId,
        parent: Option<SpanId>,
        mut name: String,
        kind: Kind,
    ) -> Span {
        // A name is the method and its target (a tool name, a URI): the
        // client's to choose, so bounded like every value it gives.
        cut(&mut name, tracer.limits.name_chars);
        Span {
            tracer,
            data: Some(SpanData {
                trace_id,
                span_id,
                parent,
                tracestate: None,
                name,
                kind,
                start_nanos: mcp_ui_model::clock::unix_nanos(),
                end_nanos: 0,
                attributes: Vec::with_capacity(8),
                error: None,
            }),
        }
    }

    /// The context a child of this span starts from.
    pub fn parent(&self) -> Option<Parent> {
        self.data.as_ref().map(|d| Parent {
            tracer: self.tracer.clone(),
            trace_id: d.trace_id,
            span_id: d.span_id,
        })
    }

    pub fn set(&mut self, key: &'static str, value: impl Into<Value>) {
        if let Some(d) = &mut self.data {
            let mut value = value.into();
            cut_value(&mut value, self.tracer.limits.value_chars);
            d.attributes.push((key, value));
        }
    }

    /// Back-date the start (Unix nanoseconds).
    pub(crate) fn set_start(&mut self, nanos: u64) {
        if let Some(d) = &mut self.data {
            d.start_nanos = nanos;
        }
    }

    pub(crate) fn set_tracestate(&mut self, mut tracestate: Option<String>) {
        if let Some(d) = &mut self.data {
            if let Some(t) = &mut tracestate {
                cut(t, self.tracer.limits.value_chars);
            }
            d.tracestate = tracestate;
        }
    }

    /// Mark the span failed: `error.type`, and the status message.
    pub fn fail(&mut self, error_type: impl Into<Value>, mut message: String) {
        self.set("error.type", error_type);
        if let Some(d) = &mut self.data {
            cut(&mut message, self.tracer.limits.value_chars);
            d.error = Some(message);
        }
    }

    /// What the span holds so far, not ended: kept to be ended later
    /// (by [`Tracer::queue`] once its end is set).
    pub(super) fn into_data(mut self) -> Option<SpanData> {
        self.data.take()
    }

    /// End the span now.
    pub fn end(mut self) {
        self.finish();
    }

    fn finish(&mut self) {
        if let Some(mut d) = self.data.take() {
            d.end_nanos = mcp_ui_model::clock::unix_nanos().max(d.start_nanos);
            self.tracer.queue(d);
        }
    }
}

impl Drop for Span {
    fn drop(&mut self) {
        self.finish();
    }
}
