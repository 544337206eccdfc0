//! The exporter: spans queue in a bounded channel (a full queue drops the
//! span and counts it, never waits), and a thread of its own sends them in
//! batches to the collector over OTLP/HTTP protobuf with the gateway's
//! upstream client (`https://` collectors are verified with the system's
//! roots). Batches go when full, when the oldest span has waited the
//! schedule delay, on a flush, and when the last tracer handle is dropped.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http::header::{CONTENT_TYPE, HeaderMap};
use http::{Request, Uri};
use http_body_util::{BodyExt, Full};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use super::data::SpanData;
use super::otlp;
use crate::upstream::client::{BodyError, client, send};
use mcp_ui_model::outcome::UpstreamError;

/// Most spans in one export request.
pub(crate) const MAX_BATCH: usize = 512;

/// The name the collector goes by in the client's error messages.
const COLLECTOR: &str = "otlp collector";

/// Most bytes of a collector's answer read (an `ExportTraceServiceResponse`
/// is a few bytes, a partial success a few hundred): past it the answer is
/// dropped with its connection, never held.
pub(crate) const MAX_ANSWER_BYTES: usize = 64 * 1024;

/// Where and how spans are sent.
#[derive(Debug, Clone)]
pub struct Target {
    pub url: Uri,
    pub headers: HeaderMap,
    pub timeout: Duration,
    pub delay: Duration,
    pub resource: Vec<(String, String)>,
}

/// What the queue carries.
pub enum Msg {
    Span(Box<SpanData>),
    /// Send everything queued before it, then say so.
    Flush(oneshot::Sender<()>),
}

/// Spans by what became of them, for `/metrics`.
#[derive(Debug, Default)]
pub struct Counts {
    pub exported: AtomicU64,
    /// Dropped at a full queue.
    pub dropped: AtomicU64,
    /// In a batch the collector refused or did not answer in time.
    pub failed: AtomicU64,
}

/// Start the export thread; spans sent to the returned queue (of
/// `capacity`) are exported until every sender is dropped.
pub fn start(
    target: Target,
    capacity: usize,
    counts: Arc<Counts>,
    queued: Arc<AtomicUsize>,
) -> std::io::Result<mpsc::Sender<Msg>> {
    let (tx, rx) = mpsc::channel(capacity.max(1));
    std::thread::Builder::new()
        .name("otlp-export".into())
        .spawn(move || {
            let runtime = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(rt) => rt,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot start the trace exporter");
                    return;
                }
            };
            runtime.block_on(run(rx, target, counts, queued));
        })?;
    Ok(tx)
}

async fn run(
    mut rx: mpsc::Receiver<Msg>,
    target: Target,
    counts: Arc<Counts>,
    queued: Arc<AtomicUsize>,
) {
    // A span taken from the queue no longer counts against its bound.
    let taken = |s: &SpanData| {
        queued.fetch_sub(s.weight(), Ordering::Relaxed);
    };
    let client = client(target.timeout);
    let mut batch: Vec<SpanData> = Vec::with_capacity(MAX_BATCH);
    let mut due: Option<Instant> = None;
    loop {
        let msg = tokio::select! {
            m = rx.recv() => m,
            () = sleep_until(due) => {
                export(&client, &target, &counts, &mut batch).await;
                due = None;
                continue;
            }
        };
        match msg {
            Some(Msg::Span(s)) => {
                taken(&s);
                batch.push(*s);
                due.get_or_insert_with(|| Instant::now() + target.delay);
                if batch.len() >= MAX_BATCH {
                    export(&client, &target, &counts, &mut batch).await;
                    due = None;
                }
            }
            Some(Msg::Flush(done)) => {
                while let Ok(Msg::Span(s)) = rx.try_recv() {
                    taken(&s);
                    batch.push(*s);
                    if batch.len() >= MAX_BATCH {
                        export(&client, &target, &counts, &mut batch).await;
                    }
                }
                export(&client, &target, &counts, &mut batch).await;
                due = None;
                let _ = done.send(());
            }
            None => {
                export(&client, &target, &counts, &mut batch).await;
                return;
            }
        }
    }
}

async fn sleep_until(due: Option<Instant>) {
    match due {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Send `batch` (emptied) in one request; its outcome is counted, and a
/// failure logged.
async fn export(
    client: &crate::upstream::client::Client,
    target: &Target,
    counts: &Counts,
    batch: &mut Vec<SpanData>,
) {
    if batch.is_empty() {
        return;
    }
    let n = batch.len() as u64;
    let body = otlp::export_request(&target.resource, batch);
    batch.clear();
    let mut req = Request::new(Full::new(Bytes::from(body)));
    *req.method_mut() = http::Method::POST;
    *req.uri_mut() = target.url.clone();
    let h = req.headers_mut();
    for (k, v) in &target.headers {
        h.append(k.clone(), v.clone());
    }
    h.insert(
        CONTENT_TYPE,
        http::HeaderValue::from_static("application/x-protobuf"),
    );
    let timed_out = || {
        format!(
            "the collector had not answered within {} ms (telemetry timeout_ms, OTEL_EXPORTER_OTLP_TIMEOUT)",
            target.timeout.as_millis()
        )
    };
    let result = match send(client, COLLECTOR, req, target.timeout).await {
        Ok(resp) => {
            let status = resp.status();
            // Read to the end, so the connection goes back to the pool, but
            // no further than a collector's answer can be.
            let mut body = resp.into_body();
            let mut read = 0usize;
            let end = loop {
                match body.frame().await {
                    None => break Ok(()),
                    Some(Ok(frame)) => {
                        read += frame.data_ref().map_or(0, Bytes::len);
                        if read > MAX_ANSWER_BYTES {
                            break Err(format!(
                                "the collector's answer passed {MAX_ANSWER_BYTES} bytes; the rest was not read"
                            ));
                        }
                    }
                    Some(Err(BodyError::Timeout { .. })) => break Err(timed_out()),
                    Some(Err(e)) => break Err(e.to_string()),
                }
            };
            match (status.is_success(), end) {
                (true, end) => end,
                (false, _) => Err(format!("the collector answered {status}")),
            }
        }
        Err(UpstreamError::Timeout { .. }) => Err(timed_out()),
        Err(e) => Err(e.to_string()),
    };
    match result {
        Ok(()) => counts.exported.fetch_add(n, Ordering::Relaxed),
        Err(e) => {
            tracing::warn!(url = %target.url, spans = n, error = %e, "trace export failed");
            counts.failed.fetch_add(n, Ordering::Relaxed)
        }
    };
}
