//! The operation metrics of the MCP semantic conventions, under their
//! Prometheus names: `mcp_server_operation_duration_seconds` (each client
//! request, from its arrival to the end of its answer) and
//! `mcp_client_operation_duration_seconds` (each request sent upstream, to
//! the moment its answer is ready to relay), labelled `mcp_method_name` and,
//! for a failed operation, `error_type` (the outcome). Labels stay bounded:
//! known methods by name, others as `other`; never a session, a tool's
//! arguments or an id.

use std::time::Duration;

use super::histogram::Histogram;
use super::method::{METHODS, MethodId};
use mcp_ui_model::outcome::Outcome;

/// Latency histograms by `[method][outcome]`, for both sides.
pub(super) struct Conventional {
    pub(super) server: Box<[Histogram]>,
    pub(super) client: Box<[Histogram]>,
}

impl Default for Conventional {
    fn default() -> Self {
        let n = METHODS.len() * Outcome::ALL.len();
        Conventional {
            server: (0..n).map(|_| Histogram::default()).collect(),
            client: (0..n).map(|_| Histogram::default()).collect(),
        }
    }
}

/// The methods these metrics name: JSON-RPC methods, not the bodyless
/// exchanges, batches or responses.
fn is_operation(method: MethodId) -> bool {
    method == MethodId::OTHER || method.0 > MethodId::RESPONSE.0
}

impl Conventional {
    pub(super) fn server(&self, method: MethodId, outcome: Outcome, elapsed: Duration) {
        observe(&self.server, method, outcome, elapsed);
    }

    pub(super) fn client(&self, method: MethodId, outcome: Outcome, elapsed: Duration) {
        observe(&self.client, method, outcome, elapsed);
    }
}

fn observe(table: &[Histogram], method: MethodId, outcome: Outcome, elapsed: Duration) {
    if !is_operation(method) {
        return;
    }
    let i = method.0 as usize * Outcome::ALL.len() + outcome as usize;
    if let Some(h) = table.get(i) {
        h.observe(elapsed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{Metrics, Snapshot};

    #[test]
    fn conventional_histograms() {
        let m = Metrics::new(["a".to_owned()]);
        let call = MethodId::of("tools/call");
        m.record(0, call, Outcome::Ok, Duration::from_millis(3));
        m.record(0, call, Outcome::Timeout, Duration::from_secs(1));
        m.record(0, MethodId::GET, Outcome::Ok, Duration::from_secs(1));
        m.record_client(call, Outcome::Ok, Duration::from_millis(2));
        let text = m.render(&Snapshot::default());
        assert!(text.contains(
            "mcp_server_operation_duration_seconds_count{mcp_method_name=\"tools/call\"} 1"
        ));
        assert!(text.contains("mcp_server_operation_duration_seconds_count{mcp_method_name=\"tools/call\",error_type=\"timeout\"} 1"));
        assert!(text.contains(
            "mcp_client_operation_duration_seconds_count{mcp_method_name=\"tools/call\"} 1"
        ));
        assert!(!text.contains("operation_duration_seconds_count{mcp_method_name=\"GET\""));
    }
}
