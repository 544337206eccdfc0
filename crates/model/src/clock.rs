//! The gateway's one wall clock: the time since the Unix epoch that
//! tokens, codes, sealed session ids, request states and spans are dated
//! by. The pure crates take the time as an argument; everything that reads
//! it reads it here. (Intervals and deadlines use tokio's monotonic clock,
//! which tests can pause; this one they cannot.)

use std::time::{Duration, SystemTime, UNIX_EPOCH};

fn since_epoch() -> Duration {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
}

/// Seconds since the Unix epoch.
pub fn unix_secs() -> u64 {
    since_epoch().as_secs()
}

/// Milliseconds since the Unix epoch.
pub fn unix_millis() -> u64 {
    u64::try_from(since_epoch().as_millis()).unwrap_or(u64::MAX)
}

/// Nanoseconds since the Unix epoch.
pub fn unix_nanos() -> u64 {
    u64::try_from(since_epoch().as_nanos()).unwrap_or(u64::MAX)
}
