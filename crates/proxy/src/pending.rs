//! Requests in progress that outlive the exchange that sent them, and what
//! the gateway holds of them: a request waiting for what its upstream says
//! ([`waiting`]), what finishes its answer ([`finish`]), and those set aside
//! for their client's input (a 2026-07-28 round, [`round`]) in a bounded
//! table ([`parked`]). Leaves beneath the gateway: none of them knows the
//! exchange or the gateway, so the gateway's table holds them by type.

pub mod finish;
pub mod parked;
pub mod round;
pub mod waiting;

use std::sync::Arc;

use mcp_ui_upstream::session::{Flights, InFlight, reopened::Reopened};

/// The requests set aside for their round.
pub(crate) type Rounds = parked::Parked<Box<round::Parked>>;

/// Requests in progress, shared by every connection.
pub struct Pending {
    /// Requests waiting for an upstream, per client session.
    pub in_flight: Arc<InFlight>,
    /// 2026-07-28 requests of 2025 upstreams waiting for the client's
    /// input (`relay::rounds`).
    pub(crate) rounds: Arc<Rounds>,
    /// Revivals in flight: of a session this process owns by (mount, the
    /// instance and number its id names), of an HTTP upstream's session by
    /// (mount, the upstream id): one at a time each.
    pub reviving: Flights<(usize, [u8; 16], u64)>,
    pub reopening: Flights<(usize, String)>,
    /// Streamable HTTP sessions opened again in place of forgotten ones.
    pub reopened: Reopened,
}
