//! Pure rewrites of MCP results that add what the overlays declare: plain
//! functions over `serde_json::Value` and the compiled [`crate::overlay`]
//! types, with no IO, clock, globals or async, so the relay can call them on
//! any path and tests can pin their output byte for byte.
//!
//! Shared promises: keys the overlay does not set keep their value and their
//! place (serde_json preserves order); unknown fields and pagination cursors
//! pass through; a tool without an overlay is not touched at all. Problems
//! never fail a rewrite: they come back as [`Warning`]s for the caller to log.
//!
//! - [`tools`]: `tools/list`, and the file-parameter rules it enforces;
//! - [`call`]: opt-in shaping of `tools/call` results;
//! - [`render`]: gateway-owned render tools, listed and answered here;
//! - [`resources`]: the widget resources in `resources/list` and `read`;
//! - [`capabilities`]: `initialize` and `server/discover` results;
//! - [`schema`]: the JSON Schema subset shaped results are checked against.

pub mod call;
pub mod capabilities;
pub mod render;
pub mod resources;
pub mod schema;
pub mod tools;

use std::fmt;

pub use call::tools_call_result;
pub use capabilities::{ListChanged, UI_EXTENSION, discover_result, initialize_result};
pub use resources::{list_entry, local_resources_list, read_result, resources_list};
pub use tools::{file_param_problems, tools_list};

/// Something a rewrite skipped or could not do, for the log. The result it
/// concerns is still valid (left as the upstream sent it, where it matters).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    /// What it is about: a tool name, a key, a URI.
    pub subject: String,
    pub reason: String,
}

impl Warning {
    pub(crate) fn new(subject: impl Into<String>, reason: impl Into<String>) -> Self {
        Warning {
            subject: subject.into(),
            reason: reason.into(),
        }
    }
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.subject, self.reason)
    }
}

/// `parent[key]` as an object, made one if it is absent or not an object
/// (appended at the end when new, so existing keys keep their order).
pub(crate) fn object_at<'a>(
    parent: &'a mut serde_json::Map<String, serde_json::Value>,
    key: &str,
) -> &'a mut serde_json::Map<String, serde_json::Value> {
    let slot = parent
        .entry(key)
        .or_insert_with(|| serde_json::Value::Object(Default::default()));
    if !slot.is_object() {
        *slot = serde_json::Value::Object(Default::default());
    }
    match slot {
        serde_json::Value::Object(map) => map,
        _ => unreachable!("made an object just above"),
    }
}
