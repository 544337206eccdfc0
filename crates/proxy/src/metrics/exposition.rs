//! The Prometheus text exposition (format 0.0.4) of the counters, written
//! by hand, with what the gateway knows at the time of the scrape.

use std::fmt::Write as _;
use std::sync::atomic::Ordering;

use http::Response;
use http::header::{self, HeaderValue};

use super::conventional::Conventional;
use super::histogram::Histogram;
use super::method::METHODS;
use super::table::{BUCKETS, Metrics, STATUS_MIN};
use mcp_ui_model::outcome::Outcome;
use mcp_ui_model::reply::Body;

impl Metrics {
    /// The Prometheus text exposition (format 0.0.4) of everything counted,
    /// with what the gateway knows at the time of the scrape.
    pub fn render(&self, snapshot: &Snapshot) -> String {
        let mut out = String::with_capacity(4096);
        family(
            &mut out,
            "mcp_gateway_build_info",
            "gauge",
            "The gateway's version; always 1.",
        );
        let _ = writeln!(
            out,
            "mcp_gateway_build_info{{version=\"{}\"}} 1",
            escape(env!("CARGO_PKG_VERSION"))
        );
        self.render_exchanges(&mut out);
        self.render_http(&mut out);
        self.render_connections(&mut out, snapshot);
        self.render_process(&mut out, snapshot);
        self.render_tls_and_traces(&mut out, snapshot);
        render_conventional(&mut out, &self.conventional);
        render_sessions(&mut out, &self.sessions);
        out
    }

    /// MCP exchanges by upstream, method and outcome, and their durations.
    fn render_exchanges(&self, out: &mut String) {
        family(
            out,
            "mcp_gateway_requests_total",
            "counter",
            "MCP exchanges by upstream, JSON-RPC method (GET and DELETE for the bodyless ones) and outcome.",
        );
        for (m, name) in self.mounts.iter().enumerate() {
            let name = escape(name);
            for (k, method) in METHODS.iter().enumerate() {
                for (o, outcome) in Outcome::ALL.iter().enumerate() {
                    let i = (m * METHODS.len() + k) * Outcome::ALL.len() + o;
                    let n = self.requests[i].load(Ordering::Relaxed);
                    if n > 0 {
                        let _ = writeln!(
                            out,
                            "mcp_gateway_requests_total{{upstream=\"{name}\",method=\"{}\",outcome=\"{}\"}} {n}",
                            escape(method),
                            outcome.label()
                        );
                    }
                }
            }
        }

        family(
            out,
            "mcp_gateway_request_duration_seconds",
            "histogram",
            "Time from a request's arrival to the end of its response (a POST's SSE answer to its last event; GET and DELETE to the response head).",
        );
        for (m, name) in self.mounts.iter().enumerate() {
            let name = escape(name);
            for (k, method) in METHODS.iter().enumerate() {
                let h = &self.durations[m * METHODS.len() + k];
                let labels = format!("upstream=\"{name}\",method=\"{}\"", escape(method));
                write_histogram(out, "mcp_gateway_request_duration_seconds", &labels, h);
            }
        }
    }

    /// HTTP responses by status code.
    fn render_http(&self, out: &mut String) {
        family(
            out,
            "mcp_gateway_http_requests_total",
            "counter",
            "HTTP responses by status code (every path; 0 for codes outside 100-599).",
        );
        for (i, c) in self.http_status.iter().enumerate() {
            let n = c.load(Ordering::Relaxed);
            if n > 0 {
                let status = STATUS_MIN as usize + i;
                let _ = writeln!(
                    out,
                    "mcp_gateway_http_requests_total{{status=\"{status}\"}} {n}"
                );
            }
        }
        let other = self.http_other.load(Ordering::Relaxed);
        if other > 0 {
            let _ = writeln!(
                out,
                "mcp_gateway_http_requests_total{{status=\"0\"}} {other}"
            );
        }
    }

    /// Sessions and connections by mount: open, known, started, revived.
    fn render_connections(&self, out: &mut String, snapshot: &Snapshot) {
        family(
            out,
            "mcp_gateway_sessions_open",
            "gauge",
            "Connections this process holds open with an upstream (stdio and legacy SSE, shared or a session's own, and held streamable HTTP sessions); the sessions of streamable HTTP clients that own theirs live in their sealed ids and are not counted.",
        );
        for (m, name) in self.mounts.iter().enumerate() {
            let n = snapshot.sessions_open.get(m).copied().unwrap_or(0);
            let _ = writeln!(
                out,
                "mcp_gateway_sessions_open{{upstream=\"{}\"}} {n}",
                escape(name)
            );
        }

        let per_mount = |out: &mut String, name: &str, values: &[u64]| {
            for (m, mount) in self.mounts.iter().enumerate() {
                let n = values.get(m).copied().unwrap_or(0);
                let _ = writeln!(out, "{name}{{upstream=\"{}\"}} {n}", escape(mount));
            }
        };
        family(
            out,
            "mcp_gateway_client_sessions",
            "gauge",
            "Client sessions this process knows: those on connections clients share, and those that own a connection of their own.",
        );
        per_mount(
            out,
            "mcp_gateway_client_sessions",
            &snapshot.client_sessions,
        );
        family(
            out,
            "mcp_gateway_upstream_connections",
            "gauge",
            "Upstream connections open: stdio children, legacy SSE streams and held streamable HTTP sessions, shared or a session's own.",
        );
        per_mount(
            out,
            "mcp_gateway_upstream_connections",
            &snapshot.upstream_connections,
        );
        family(
            out,
            "mcp_gateway_processes_started_total",
            "counter",
            "Stdio upstream processes started.",
        );
        per_mount(
            out,
            "mcp_gateway_processes_started_total",
            &snapshot.processes_started,
        );
        family(
            out,
            "mcp_gateway_sessions_revived_total",
            "counter",
            "Connections opened again in place of ones that ended under their clients (a crashed or reaped child, an upstream that forgot its session, a session id that outlived its process).",
        );
        per_mount(
            out,
            "mcp_gateway_sessions_revived_total",
            &snapshot.sessions_revived,
        );
    }

    /// Stdio children, overlay reloads and readiness.
    fn render_process(&self, out: &mut String, snapshot: &Snapshot) {
        family(
            out,
            "mcp_gateway_stdio_children",
            "gauge",
            "Stdio upstream processes the gateway's sessions started and not yet reaped.",
        );
        let _ = writeln!(
            out,
            "mcp_gateway_stdio_children {}",
            snapshot.stdio_children
        );

        family(
            out,
            "mcp_gateway_overlay_reloads_total",
            "counter",
            "Overlay reloads by result: ok (applied, or nothing to apply) or error (the last good overlays stayed).",
        );
        let _ = writeln!(
            out,
            "mcp_gateway_overlay_reloads_total{{result=\"ok\"}} {}",
            snapshot.reloads_ok
        );
        let _ = writeln!(
            out,
            "mcp_gateway_overlay_reloads_total{{result=\"error\"}} {}",
            snapshot.reloads_failed
        );

        family(
            out,
            "mcp_gateway_upstream_up",
            "gauge",
            "Whether the upstream answered the last readiness probe (1) or not (0); absent before the first /readyz.",
        );
        for (m, name) in self.mounts.iter().enumerate() {
            if let Some(Some(up)) = snapshot.upstream_up.get(m) {
                let _ = writeln!(
                    out,
                    "mcp_gateway_upstream_up{{upstream=\"{}\"}} {}",
                    escape(name),
                    u8::from(*up)
                );
            }
        }
    }

    /// TLS handshakes, and the trace spans exported when traces are.
    fn render_tls_and_traces(&self, out: &mut String, snapshot: &Snapshot) {
        family(
            out,
            "mcp_gateway_tls_handshakes_total",
            "counter",
            "TLS handshakes completed: side=\"listener\" with clients, side=\"upstream\" with https:// upstreams (pooled connections make them rare).",
        );
        let _ = writeln!(
            out,
            "mcp_gateway_tls_handshakes_total{{side=\"listener\"}} {}",
            self.tls_accepted.load(Ordering::Relaxed)
        );
        let _ = writeln!(
            out,
            "mcp_gateway_tls_handshakes_total{{side=\"upstream\"}} {}",
            snapshot.tls_upstream_handshakes
        );
        if let Some((exported, dropped, failed)) = snapshot.otlp_spans {
            family(
                out,
                "mcp_gateway_otlp_spans_total",
                "counter",
                "Trace spans by what became of them: exported, dropped (the export queue was full), failed (the collector refused or did not answer).",
            );
            for (result, n) in [
                ("exported", exported),
                ("dropped", dropped),
                ("failed", failed),
            ] {
                let _ = writeln!(
                    out,
                    "mcp_gateway_otlp_spans_total{{result=\"{result}\"}} {n}"
                );
            }
        }
    }
}

/// The MCP semantic conventions' operation histograms.
fn render_conventional(out: &mut String, c: &Conventional) {
    family(
        out,
        "mcp_server_operation_duration_seconds",
        "histogram",
        "MCP semantic conventions: each JSON-RPC request the gateway received, from its arrival to the end of its answer.",
    );
    render_operations(out, "mcp_server_operation_duration_seconds", &c.server);
    family(
        out,
        "mcp_client_operation_duration_seconds",
        "histogram",
        "MCP semantic conventions: each JSON-RPC request the gateway sent upstream, until its answer was ready to relay.",
    );
    render_operations(out, "mcp_client_operation_duration_seconds", &c.client);
}

/// The MCP semantic conventions' session durations.
fn render_sessions(out: &mut String, s: &super::session::Sessions) {
    let name = "mcp_server_session_duration_seconds";
    family(
        out,
        name,
        "histogram",
        "MCP semantic conventions: each client session, from its initialize to its end (a DELETE, the gateway's or the upstream's end).",
    );
    for (labels, counts, sum_nanos) in s.series() {
        write_buckets(
            out,
            name,
            &labels,
            &super::session::SESSION_BUCKETS,
            &counts,
            sum_nanos,
        );
    }
}

fn render_operations(out: &mut String, name: &str, table: &[Histogram]) {
    for (k, method) in METHODS.iter().enumerate() {
        for (o, outcome) in Outcome::ALL.iter().enumerate() {
            let h = &table[k * Outcome::ALL.len() + o];
            let mut labels = format!("mcp_method_name=\"{}\"", escape(method));
            if *outcome != Outcome::Ok {
                let _ = write!(labels, ",error_type=\"{}\"", outcome.label());
            }
            write_histogram(out, name, &labels, h);
        }
    }
}

/// One histogram's series (`_bucket`, `_sum`, `_count`) with `labels`;
/// nothing while it has counted nothing.
fn write_histogram(out: &mut String, name: &str, labels: &str, h: &Histogram) {
    let counts: Vec<u64> = h
        .buckets
        .iter()
        .map(|b| b.load(Ordering::Relaxed))
        .collect();
    write_buckets(
        out,
        name,
        labels,
        &BUCKETS,
        &counts,
        h.sum_nanos.load(Ordering::Relaxed),
    );
}

/// One histogram's series from its per-bucket `counts` (the last for
/// `+Inf`) over `bounds`; nothing while it has counted nothing.
fn write_buckets(
    out: &mut String,
    name: &str,
    labels: &str,
    bounds: &[f64],
    counts: &[u64],
    sum_nanos: u64,
) {
    let total: u64 = counts.iter().sum();
    if total == 0 {
        return;
    }
    let mut cumulative = 0;
    for (i, c) in counts.iter().enumerate() {
        cumulative += c;
        let le = bounds.get(i).map_or("+Inf".to_owned(), |b| b.to_string());
        let _ = writeln!(out, "{name}_bucket{{{labels},le=\"{le}\"}} {cumulative}");
    }
    let sum = sum_nanos as f64 / 1e9;
    let _ = writeln!(out, "{name}_sum{{{labels}}} {sum}");
    let _ = writeln!(out, "{name}_count{{{labels}}} {total}");
}

/// What the gateway knows at scrape time, apart from the counters.
#[derive(Debug, Default, Clone)]
pub struct Snapshot {
    /// Open sessions by mount index.
    pub(crate) sessions_open: Vec<usize>,
    /// By mount index: client sessions known, upstream connections open,
    /// processes started, connections revived.
    pub(crate) client_sessions: Vec<u64>,
    pub(crate) upstream_connections: Vec<u64>,
    pub processes_started: Vec<u64>,
    pub(crate) sessions_revived: Vec<u64>,
    /// Stdio children running.
    pub stdio_children: usize,
    pub(crate) reloads_ok: u64,
    pub(crate) reloads_failed: u64,
    /// The last readiness result by mount index, if any.
    pub upstream_up: Vec<Option<bool>>,
    /// TLS handshakes made with `https://` upstreams.
    pub(crate) tls_upstream_handshakes: u64,
    /// Spans exported, dropped and failed, when traces are exported.
    pub(crate) otlp_spans: Option<(u64, u64, u64)>,
}

fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {}", escape_help(help));
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

/// A label value: backslash, double quote and newline escaped.
pub fn escape(value: &str) -> String {
    let mut s = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '\\' => s.push_str("\\\\"),
            '"' => s.push_str("\\\""),
            '\n' => s.push_str("\\n"),
            c => s.push(c),
        }
    }
    s
}

/// A HELP text: backslash and newline escaped.
fn escape_help(text: &str) -> String {
    text.replace('\\', "\\\\").replace('\n', "\\n")
}

/// The media type of the exposition.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The `/metrics` response.
pub fn response(body: String) -> Response<Body> {
    let mut r = Response::new(mcp_ui_model::reply::full(body));
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE));
    r
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use http::StatusCode;

    use super::*;
    use crate::metrics::MethodId;

    #[test]
    fn exposition_counts_and_escapes() {
        let m = Arc::new(Metrics::new(["a\"b".to_owned()]));
        m.record(
            0,
            MethodId::of("tools/call"),
            Outcome::Ok,
            Duration::from_millis(3),
        );
        m.record(
            0,
            MethodId::of("tools/call"),
            Outcome::JsonRpcError,
            Duration::from_secs(40),
        );
        m.record_status(StatusCode::OK);
        let text = m.render(&Snapshot::default());
        assert!(text.contains(
            "mcp_gateway_requests_total{upstream=\"a\\\"b\",method=\"tools/call\",outcome=\"ok\"} 1"
        ));
        assert!(text.contains("le=\"0.005\"} 1\n"));
        assert!(text.contains("le=\"30\"} 1\n"));
        assert!(text.contains("le=\"+Inf\"} 2\n"));
        assert!(text.contains("mcp_gateway_request_duration_seconds_count{upstream=\"a\\\"b\",method=\"tools/call\"} 2\n"));
        assert!(text.contains("mcp_gateway_http_requests_total{status=\"200\"} 1\n"));
    }
}
