//! The 2026-07-28 revision for every upstream: what a client of that
//! revision is owed whatever era the upstream speaks. Pure: the relay reads
//! the request and the upstream's answer, these functions decide.
//!
//! - [`check`]: a request of the revision validated as it requires (its
//!   `_meta`, the headers that repeat the body, the methods it removed);
//! - [`answer`]: an upstream's answer in the revision's form (`resultType`,
//!   `ttlMs` and `cacheScope`, "resource not found", the listings the
//!   gateway answers for an upstream without them), everything else as the
//!   upstream wrote it;
//! - [`discover`]: `server/discover` for an upstream that only answers
//!   `initialize`, from what it declared there;
//! - [`listen`]: `subscriptions/listen` for such an upstream: the filter,
//!   its acknowledgement, the notifications tagged with the subscription.

pub mod answer;
pub mod check;
pub mod discover;
pub mod listen;

pub use answer::{Answering, CacheScope, Caps, Hints, answer, cacheable, to_handshake};
pub use check::{
    Headers, Refusal, Seen, beyond, check, header_value, http_status, is_revision_request,
    status_of,
};
pub use discover::{Announced, META_SERVER_INFO, discover};
pub use listen::Filter;

#[cfg(test)]
mod tests;
