//! Configuration: the typed settings, layered with figment as defaults →
//! `config/gateway.toml` (or `--config FILE`) → `MCP_UI_GATEWAY_*` environment
//! variables → command-line flags, then checked as a whole so one bad field is
//! reported by name, with the file it came from.
//!
//! One stage a module: `schema` is what may be written, with its defaults;
//! `load` reads and merges the layers; `validate` turns the result into the
//! mounts the gateway serves. [`app`] holds the `[[app]]` endpoints,
//! `problems` the wording of what is wrong where.

pub mod app;
pub mod auth;
pub mod authorization;
mod challenge;
mod load;
mod problems;
mod schema;
mod validate;

pub use app::{App, AppConfig, Member, MemberConfig};
pub use auth::{Auth, AuthConfig, AuthSetting, Introspection, IntrospectionConfig};
pub use authorization::{AuthorizationServer, AuthorizationServerConfig, Provider, ProviderConfig};
pub use load::{ConfigError, Overrides, load};
pub use schema::{AuthChallenge, Config, Limits, SessionMode, Telemetry, UpstreamConfig};
pub use validate::Resolved;
pub use validate::mount::{ConversationKey, Mount, Sessions, StdioCommand, Transport};

// What the tests name besides the public items.
#[cfg(test)]
use figment::providers::{Format, Serialized, Toml};
#[cfg(test)]
use validate::mount::is_reserved_path;

#[cfg(test)]
mod tests;
