//! Pure rewrites of MCP results that add what the overlays declare: plain
//! functions over `serde_json::Value` and the compiled [`mcp_ui_overlay::overlay`]
//! types, with no IO, clock, globals or async, so the relay can call them on
//! any path and tests can pin their output byte for byte.
//!
//! Shared promises: keys the overlay does not set keep their value and their
//! place (serde_json preserves order); unknown fields and pagination cursors
//! pass through; a tool without an overlay is not touched at all. Problems
//! never fail a rewrite: they come back as [`Warning`]s for the caller to log.
//!
//! - [`tools`]: `tools/list`, and the file-parameter rules it enforces; a
//!   page is rewritten in its text ([`tools::page`]);
//! - [`call`]: opt-in shaping of `tools/call` results;
//! - [`listing`]: the overlays against an upstream's live `tools/list`;
//! - [`render`]: gateway-owned render tools, listed and answered here;
//! - [`resources`]: the widget resources in `resources/list` and `read`;
//! - [`capabilities`]: `initialize` and `server/discover` results;
//! - [`schema`]: the JSON Schema subset shaped results are checked against;
//! - [`warning`]: what a rewrite reports instead of failing.

pub mod call;
pub mod capabilities;
pub mod listing;
mod object;
pub mod render;
pub mod resources;
pub mod schema;
pub mod tools;
pub mod warning;

pub use call::tools_call_result;
pub use capabilities::{ListChanged, UI_EXTENSION, discover_result, initialize_result};
pub use resources::{local_resources_list, read_result, resources_list};
pub(crate) use tools::page::tools_list_page;
pub use tools::{file_param_problems, tools_list};
pub use warning::Warning;
