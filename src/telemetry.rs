//! OpenTelemetry traces, by the MCP semantic conventions, exported over
//! OTLP/HTTP protobuf. Off unless an endpoint is configured; then the hot
//! path pays one branch on `Option<Arc<Tracer>>` and nothing else.
//!
//! - [`settings`]: `[telemetry]` and the standard `OTEL_*` variables;
//! - [`context`]: W3C `traceparent`/`tracestate`;
//! - [`sampler`]: the standard samplers;
//! - [`meta`]: trace context in `params._meta`, read and written losslessly;
//! - [`span`]: spans and their handles; [`otlp`]: their protobuf encoding;
//! - [`export`]: the bounded queue and the export thread;
//! - [`exchange`]: the spans of one client request through the relay.

pub mod context;
pub mod exchange;
pub mod export;
pub mod meta;
pub mod otlp;
pub mod sampler;
pub mod settings;
pub mod span;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};

pub use exchange::Traced;
pub use span::{Kind, Parent, Span};

use crate::config::Telemetry;
use export::{Counts, Msg};
use sampler::Sampler;
use span::SpanData;

/// Starts spans and queues them for export. One per gateway, when tracing
/// is configured.
pub struct Tracer {
    sampler: Sampler,
    tx: mpsc::Sender<Msg>,
    counts: Arc<Counts>,
}

impl Tracer {
    /// The tracer `file` and the `OTEL_*` environment configure (its export
    /// thread started), or `None` when neither sets an endpoint.
    pub fn from_config(file: &Telemetry) -> Result<Option<Arc<Tracer>>, String> {
        let env = |k: &str| std::env::var(k).ok();
        let Some(s) = settings::resolve(file, &env)? else {
            return Ok(None);
        };
        tracing::info!(
            endpoint = %s.target.url,
            sampler = ?s.sampler,
            "exporting traces over OTLP/HTTP"
        );
        let counts = Arc::new(Counts::default());
        let tx = export::start(s.target, s.max_queue, counts.clone())
            .map_err(|e| format!("cannot start the trace exporter: {e}"))?;
        Ok(Some(Arc::new(Tracer {
            sampler: s.sampler,
            tx,
            counts,
        })))
    }

    /// Queue a finished span; a full queue drops it (counted).
    fn queue(&self, span: SpanData) {
        if self.tx.try_send(Msg::Span(Box::new(span))).is_err() {
            self.counts.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Export every span queued so far, waiting at most `timeout`; whether
    /// it was done in time.
    pub async fn flush(&self, timeout: Duration) -> bool {
        let (done, finished) = oneshot::channel();
        let flushed =
            async { self.tx.send(Msg::Flush(done)).await.is_ok() && finished.await.is_ok() };
        tokio::time::timeout(timeout, flushed)
            .await
            .unwrap_or(false)
    }

    /// Spans exported, dropped at a full queue, and failed to export.
    pub fn counts(&self) -> (u64, u64, u64) {
        let c = &self.counts;
        (
            c.exported.load(Ordering::Relaxed),
            c.dropped.load(Ordering::Relaxed),
            c.failed.load(Ordering::Relaxed),
        )
    }
}
