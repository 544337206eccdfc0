//! A request set aside for its client's input, with what its upstream
//! asked: what the gateway's table of rounds holds (`Gateway::rounds`).

use serde_json::value::RawValue;

use crate::relay::waiting::Waiting;
use mcp_ui_wire::protocol::Caps;

/// A request waiting for its client's input.
pub(crate) struct Parked {
    pub(super) waiting: Waiting,
    pub(super) asked: Vec<Asked>,
    pub(super) mount: usize,
    /// The request it was given for (method and name or URI).
    pub(super) bound: u64,
    /// The client's capabilities, as its first request declared them.
    pub(super) caps: Caps,
    /// The caller whose round it is.
    pub(super) owner: u64,
}

/// One request of the upstream's, in the round.
pub(super) struct Asked {
    /// Its key in `inputRequests` (the id the gateway gave it, unquoted).
    pub(super) key: String,
    /// That id, as JSON.
    pub(super) id: Box<RawValue>,
    pub(super) method: String,
    pub(super) params: Option<Box<RawValue>>,
}
