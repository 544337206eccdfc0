//! The tracer: the sampler, and the bounded queue finished spans go to.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};

use super::data::SpanData;
use super::export::{self, Counts, Msg};
use super::sampler::Sampler;
use super::settings;
use crate::config::Telemetry;

/// Starts spans and queues them for export. One per gateway, when tracing
/// is configured.
pub struct Tracer {
    sampler: Sampler,
    tx: mpsc::Sender<Msg>,
    counts: Arc<Counts>,
    /// Spans of requests to clients, waiting for their answers.
    pub(super) outbound: super::pending::Pending,
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
            outbound: Default::default(),
        })))
    }

    /// Whether a trace is recorded (see [`Sampler::sample`]).
    pub fn sample(&self, trace_id: &super::context::TraceId, parent: Option<bool>) -> bool {
        self.sampler.sample(trace_id, parent)
    }

    /// Queue a finished span; a full queue drops it (counted).
    pub(super) fn queue(&self, span: SpanData) {
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
