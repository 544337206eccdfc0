//! The pure core of the gateway: plain functions over values and the
//! compiled overlays, with no IO, clock, globals or async, so every path
//! can call them and tests can pin their output byte for byte.
//!
//! - [`bridge`]: the 2026-07-28 revision for every upstream: requests
//!   validated as it requires, answers in its form, `server/discover` for
//!   an upstream of the handshake era;
//! - [`combine`]: the rules by which an app (`[[app]]`) unites its
//!   members' answers: `initialize`, pages, names and request ids;
//! - [`plan`]: what to do with a request (forward it, rewrite its answer,
//!   answer it here), decided from its envelope and the overlays, and the
//!   rewrite of the answer applied;
//! - [`rewrite`]: the rewrites themselves: `tools/list`, shaped results,
//!   render tools, widget resources, capabilities, the overlays compared
//!   with a live listing.

pub mod bridge;
pub mod combine;
pub mod plan;
pub mod rewrite;
