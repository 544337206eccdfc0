//! Client sessions: the ids the gateway gives clients, the sessions it owns
//! with upstreams, how many requests each may have waiting, and the reaping
//! of idle ones.
//!
//! - [`app`]: the sealed id of a session with an app, one session per member;
//! - [`ended`]: the sessions their clients ended, so their ids stay ended;
//! - [`owned`]: the sessions this process holds open with stdio and legacy
//!   SSE upstreams for clients that own their connection, by number;
//! - [`pool`]: per mount, the connections clients share (a pool, one per
//!   conversation) and the client sessions they serve;
//! - [`in_flight`]: requests waiting for an upstream, per client session;
//! - [`reaper`]: ends sessions and connections idle beyond their time;
//! - [`reopened`]: streamable HTTP sessions opened again after their upstream
//!   forgot them, by the id they stand in for.

pub mod app;
pub mod ended;
pub mod flights;
pub mod in_flight;
pub mod owned;
pub mod pool;
pub mod reaper;
pub mod reopened;

pub use ended::Ended;
pub use flights::Flights;
pub use in_flight::InFlight;
pub use owned::{Held, Owned};
