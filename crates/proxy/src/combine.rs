//! Apps: one endpoint combining several upstreams (`[[app]]`). Pure
//! functions over values, with the names each app has seen listed; the
//! exchanges themselves (asking members, sealing the app's session) are in
//! [`crate::app_endpoint`].
//!
//! - [`cursor`]: a page cursor carrying which member and that member's own
//!   cursor;
//! - [`ids`]: the ids of members' requests to the client, kept apart;
//! - [`init`]: one `initialize` result from the members';
//! - [`list`]: listing pages, prefixed per member;
//! - [`names`]: which member a tool, prompt or resource belongs to, and the
//!   collisions between members;
//! - [`state`]: an app and what it has learnt from listings.

pub mod cursor;
pub mod ids;
pub mod init;
pub mod list;
pub mod names;
pub mod state;

pub use list::Kind;
pub use names::Names;
pub(crate) use names::Owner;
pub(crate) use state::AppState;
