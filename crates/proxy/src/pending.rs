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
