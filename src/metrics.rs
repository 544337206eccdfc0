//! Operational metrics, served at `/metrics`:
//!
//! - [`method`]: the JSON-RPC methods counted by name;
//! - [`table`]: the counters and latency histograms, atomics in fixed tables;
//! - [`exchange`]: one exchange timed and counted, with its outcome;
//! - [`exposition`]: the Prometheus text of it all.

pub mod exchange;
pub mod exposition;
pub mod method;
pub mod table;

pub use exchange::Exchange;
pub use exposition::{CONTENT_TYPE, Snapshot, escape, response};
pub use method::{METHODS, MethodId};
pub use table::{BUCKETS, Metrics};
