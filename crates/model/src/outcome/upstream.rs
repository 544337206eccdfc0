//! Why an upstream could not be used: the outcome vocabulary's upstream
//! side, which every upstream kind reports in.

/// Why an upstream could not be used; every message names the upstream.
#[derive(Debug, thiserror::Error)]
pub enum UpstreamError {
    #[error("upstream '{upstream}' is unreachable: {detail}")]
    Unreachable { upstream: String, detail: String },
    #[error("upstream '{upstream}' did not answer within {seconds} s")]
    Timeout { upstream: String, seconds: u64 },
    #[error("upstream '{upstream}' could not be started: {detail}")]
    Spawn { upstream: String, detail: String },
    #[error("upstream '{upstream}' sent an invalid reply: {detail}")]
    Protocol { upstream: String, detail: String },
    #[error(
        "upstream '{upstream}' keeps crashing ({crashes} in a row, last: {last}); next start allowed in {:.1} s",
        *retry_in_ms as f64 / 1000.0
    )]
    Backoff {
        upstream: String,
        crashes: u32,
        last: String,
        retry_in_ms: u64,
    },
    #[error(
        "upstream '{upstream}' could not be started: {max} stdio children are already running (limits.max_stdio_children)"
    )]
    ChildLimit { upstream: String, max: usize },
    #[error(
        "upstream '{upstream}' is not reading its input: {messages} messages ({bytes} bytes) already wait to be written to it (at most 256 messages or 16 MiB wait)"
    )]
    Backlog {
        upstream: String,
        messages: usize,
        bytes: usize,
    },
}
