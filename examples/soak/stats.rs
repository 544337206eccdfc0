//! What the soak counts: calls by kind, errors by kind (with the first few
//! in full), reloads and announcements, shared by every task.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Counters shared by every task.
#[derive(Default)]
pub struct Stats {
    pub calls: AtomicU64,
    pub skipped_busy: AtomicU64,
    pub by_op: Mutex<BTreeMap<&'static str, u64>>,
    pub errors: Mutex<BTreeMap<String, u64>>,
    pub first_errors: Mutex<Vec<String>>,
    pub list_changed: AtomicU64,
    pub reloads_good: AtomicU64,
    pub reloads_bad: AtomicU64,
    pub reloads_seen: AtomicU64,
    pub reloads_kept: AtomicU64,
    /// Counting stops once the measured run ends.
    pub measuring: AtomicBool,
}

impl Stats {
    pub fn op(&self, op: &'static str) {
        self.calls.fetch_add(1, Ordering::Relaxed);
        *self.by_op.lock().unwrap().entry(op).or_default() += 1;
    }

    pub fn error(&self, kind: String, detail: String) {
        *self.errors.lock().unwrap().entry(kind.clone()).or_default() += 1;
        let mut first = self.first_errors.lock().unwrap();
        if first.len() < 20 {
            first.push(format!("{kind}: {detail}"));
        }
    }

    pub fn error_count(&self) -> u64 {
        self.errors.lock().unwrap().values().sum()
    }
}

/// The error kind: the first word of the message and, for HTTP statuses and
/// JSON-RPC errors, the number.
pub fn kind_of(op: &str, e: &anyhow::Error) -> String {
    let text = format!("{e:#}");
    let mut words = text.split_whitespace();
    let first = words.next().unwrap_or("error").trim_end_matches(':');
    let kind = match first {
        "http" | "jsonrpc" => {
            let next = words.next().unwrap_or_default();
            let next = if next == "error" {
                words.next().unwrap_or_default()
            } else {
                next
            };
            format!("{first}_{}", next.trim_end_matches(':'))
        }
        other => other.to_owned(),
    };
    format!("{op}:{kind}")
}
