//! Apps: one endpoint combining several upstreams (`[[app]]`). The rules
//! by which it unites its members' answers, as pure functions over values;
//! the exchanges themselves (asking members, sealing the app's session and
//! cursors, the names each app has seen listed) are the gateway's app
//! endpoint.
//!
//! - [`ids`]: the ids of members' requests to the client, kept apart;
//! - [`init`]: one `initialize` result from the members';
//! - [`list`]: listing pages, prefixed per member;
//! - [`names`]: which member a tool, prompt or resource belongs to, and the
//!   collisions between members.

pub mod ids;
pub mod init;
pub mod list;
pub mod names;

pub use list::Kind;
pub use names::Names;
pub use names::Owner;
