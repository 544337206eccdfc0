//! A request set aside for its client's input, with what its upstream
//! asked: what the gateway's table of rounds holds (`Gateway::rounds`).

use serde_json::value::RawValue;

use super::waiting::Waiting;
use mcp_ui_wire::protocol::Caps;

/// A request waiting for its client's input.
pub(crate) struct Parked {
    pub(crate) waiting: Waiting,
    pub(crate) asked: Vec<Asked>,
    pub(crate) mount: usize,
    /// The request it was given for (method and name or URI).
    pub(crate) bound: u64,
    /// The client's capabilities, as its first request declared them.
    pub(crate) caps: Caps,
    /// The caller whose round it is.
    pub(crate) owner: u64,
}

/// One request of the upstream's, in the round.
pub(crate) struct Asked {
    /// Its key in `inputRequests` (the id the gateway gave it, unquoted).
    pub(crate) key: String,
    /// That id, as JSON.
    pub(crate) id: Box<RawValue>,
    pub(crate) method: String,
    pub(crate) params: Option<Box<RawValue>>,
}
