//! Operational metrics, served at `/metrics`:
//!
//! - [`method`]: the JSON-RPC methods counted by name;
//! - [`histogram`]: one latency histogram;
//! - [`table`]: the counters and latency histograms, atomics in fixed tables;
//! - [`exchange`]: one exchange timed and counted, with its outcome;
//! - [`conventional`]: the operation histograms of the MCP semantic
//!   conventions;
//! - [`session`]: the session durations of the MCP semantic conventions;
//! - [`exposition`]: the Prometheus text of it all.

pub mod conventional;
pub mod exchange;
pub mod exposition;
pub mod histogram;
pub mod method;
pub mod session;
pub mod table;

pub(crate) use exchange::Exchange;
pub(crate) use exposition::Snapshot;
pub use exposition::{CONTENT_TYPE, escape, response};
pub(crate) use method::MethodId;
pub(crate) use session::SessionEnd;
pub(crate) use table::Metrics;
