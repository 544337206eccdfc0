//! One latency histogram: fixed buckets of atomics.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Upper bounds of the latency buckets, in seconds (`+Inf` follows).
pub(crate) const BUCKETS: [f64; 15] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

/// One latency histogram: per-bucket (not cumulative) counts, the last one
/// for `+Inf`, and the sum in nanoseconds. `_count` is rendered as the sum of
/// the buckets, so it always agrees with the `+Inf` bucket.
#[derive(Default)]
pub(crate) struct Histogram {
    pub(super) buckets: [AtomicU64; BUCKETS.len() + 1],
    pub(super) sum_nanos: AtomicU64,
}

impl Histogram {
    pub(super) fn observe(&self, elapsed: Duration) {
        count(&self.buckets, &self.sum_nanos, &BUCKETS, elapsed);
    }
}

/// Counts `elapsed` in the first of `buckets` whose upper bound in `bounds`
/// (seconds) it does not exceed, else in the last (`+Inf`, one more than
/// `bounds`), and adds it to `sum_nanos`.
pub(super) fn count(
    buckets: &[AtomicU64],
    sum_nanos: &AtomicU64,
    bounds: &[f64],
    elapsed: Duration,
) {
    let secs = elapsed.as_secs_f64();
    let i = bounds
        .iter()
        .position(|b| secs <= *b)
        .unwrap_or(bounds.len());
    if let Some(bucket) = buckets.get(i) {
        bucket.fetch_add(1, Ordering::Relaxed);
    }
    let nanos = u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX);
    sum_nanos.fetch_add(nanos, Ordering::Relaxed);
}
