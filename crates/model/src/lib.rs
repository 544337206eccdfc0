//! What every layer of the gateway shares, and nothing that moves bytes:
//! the settings, the sealed session ids, how an exchange ended. The crates
//! that reach upstreams (`mcp-ui-upstream`) and serve hosts (`mcp-ui-proxy`)
//! both speak in these types.
//!
//! - [`config`]: layered configuration and its validation into one settings
//!   value.
//! - [`session_id`]: the sealed session ids and their key, and what a client
//!   said of itself at `initialize`, carried in them.
//! - [`outcome`]: how an exchange ended, the one source of both the answer
//!   to a failure and its metrics label; [`reply`]: the response body type
//!   and the gateway's own responses.
//! - [`tls`]: the TLS settings of an upstream, the PEM files and the
//!   cryptography both sides use.
//! - [`body`]: a request's or a fetched answer's body, read whole within
//!   bounds; [`clock`]: the one wall clock.

pub mod body;
pub mod clock;
pub mod config;
pub mod outcome;
pub mod reply;
pub mod session_id;
pub mod tls;
