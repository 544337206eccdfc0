//! The tracer: the sampler, and the bounded queue finished spans go to.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};

use super::data::SpanData;
use super::export::{self, Counts, Msg};
use super::sampler::Sampler;
use super::settings::{self, SpanLimits};
use mcp_ui_model::config::Telemetry;

/// Starts spans and queues them for export. One per gateway, when tracing
/// is configured.
pub struct Tracer {
    sampler: Sampler,
    tx: mpsc::Sender<Msg>,
    counts: Arc<Counts>,
    /// What a span may hold, and the queue's bound in bytes.
    pub(super) limits: SpanLimits,
    /// Bytes of the spans in the queue (their weights), given back as the
    /// export thread takes them.
    queued: Arc<AtomicUsize>,
    /// Spans of requests to clients, waiting for their answers.
    pub(super) outbound: super::pending::Pending,
}

/// Why tracing could not start. A startup error, the operator's: a
/// `[telemetry]` setting or an `OTEL_*` variable is refused, or the export
/// thread did not start.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    /// A setting is refused; the message names it.
    #[error("{0}")]
    Setting(String),
    #[error("cannot start the trace exporter: {0}")]
    Exporter(#[source] std::io::Error),
}

impl Tracer {
    /// The tracer `file` and the `OTEL_*` environment configure (its export
    /// thread started), or `None` when neither sets an endpoint.
    pub fn from_config(file: &Telemetry) -> Result<Option<Arc<Tracer>>, TelemetryError> {
        let env = |k: &str| std::env::var(k).ok();
        let Some(s) = settings::resolve(file, &env).map_err(TelemetryError::Setting)? else {
            return Ok(None);
        };
        tracing::info!(
            endpoint = %s.target.url,
            sampler = ?s.sampler,
            "exporting traces over OTLP/HTTP"
        );
        let counts = Arc::new(Counts::default());
        let queued = Arc::new(AtomicUsize::new(0));
        let tx = export::start(s.target, s.max_queue, counts.clone(), queued.clone())
            .map_err(TelemetryError::Exporter)?;
        Ok(Some(Arc::new(Tracer {
            sampler: s.sampler,
            tx,
            counts,
            limits: s.limits,
            queued,
            outbound: Default::default(),
        })))
    }

    /// Whether a trace is recorded (see [`Sampler::sample`]).
    pub fn sample(&self, trace_id: &super::context::TraceId, parent: Option<bool>) -> bool {
        self.sampler.sample(trace_id, parent)
    }

    /// Queue a finished span; a queue full in spans or in bytes drops it
    /// (counted), never grows.
    pub(super) fn queue(&self, span: SpanData) {
        let weight = span.weight();
        if !take(&self.queued, weight, self.limits.queue_bytes) {
            self.counts.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        if self.tx.try_send(Msg::Span(Box::new(span))).is_err() {
            self.queued.fetch_sub(weight, Ordering::Relaxed);
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

/// Counts `n` more bytes in `used` if that keeps it within `max`; whether
/// it did.
fn take(used: &AtomicUsize, n: usize, max: usize) -> bool {
    used.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |u| {
        u.checked_add(n).filter(|t| *t <= max)
    })
    .is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_queue_is_bounded_in_bytes() {
        let used = AtomicUsize::new(0);
        assert!(take(&used, 600, 1000));
        assert!(!take(&used, 600, 1000), "over the bound: dropped");
        assert!(take(&used, 400, 1000), "exactly to the bound");
        assert!(!take(&used, 1, 1000));
        used.fetch_sub(600, Ordering::Relaxed);
        assert!(take(&used, 600, 1000), "room again once exported");
        assert!(!take(&used, usize::MAX, usize::MAX));
    }
}
