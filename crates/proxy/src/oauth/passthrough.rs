//! OAuth through the gateway: upstream challenges rewritten to point at the
//! gateway's own protected-resource metadata (RFC 9728), that metadata served
//! per mount from the upstream's document with `resource` set to the mount's
//! public URL, and in-band challenges (`_meta["mcp/www_authenticate"]`) for
//! tool calls.
//!
//! Tokens never pass through here: `Authorization` is forwarded by the relay
//! to the mount's own upstream only, and nothing in this module logs headers.
//!
//! - [`state`]: per-mount OAuth state and the gateway's metadata URLs;
//! - [`challenge`]: challenges rewritten, in headers and in tool results;
//! - [`metadata`]: the protected-resource metadata the gateway serves;
//! - [`cache`]: the upstream's metadata, one document per mount, expiring;
//! - [`app`]: an app's metadata, from its members', and their challenges
//!   pointed at it.

pub mod app;
pub mod cache;
pub mod challenge;
pub mod metadata;
pub mod state;

pub(crate) use challenge::rewrite_result_challenges;
pub(crate) use challenge::{in_band_result, may_carry_challenge, refusal_of, rewrite_challenges};
pub use metadata::Fetch;
pub(crate) use metadata::{serve_own, serve_prm};
pub(crate) use state::{AuthState, PrmTarget, ResultTarget, prm_target, prm_url, resource_url};
