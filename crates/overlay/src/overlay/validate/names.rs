//! Names that match nothing: what an overlay calls a tool its upstream does
//! not list, said with the name most likely meant, or the names there are.
//! Used by `check` against a probed listing and by `serve` against the
//! listings passing through.

/// Most tool names listed in a message.
const NAMES_SHOWN: usize = 12;

/// "upstream 'x' has no tool `y`", with the likely intended name among
/// `names` (the upstream's tools), or the names it does have.
pub fn unknown_tool(mount: &str, tool: &str, names: &[&str]) -> String {
    let mut reason = format!("upstream '{mount}' has no tool `{tool}`");
    if names.is_empty() {
        reason.push_str(" (it lists no tools)");
        return reason;
    }
    if let Some(name) = nearest(tool, names) {
        reason.push_str(&format!("; did you mean `{name}`?"));
        return reason;
    }
    let shown: Vec<String> = names
        .iter()
        .take(NAMES_SHOWN)
        .map(|n| format!("`{n}`"))
        .collect();
    let more = names.len().saturating_sub(NAMES_SHOWN);
    reason.push_str(&format!(" (its tools: {}", shown.join(", ")));
    if more > 0 {
        reason.push_str(&format!(", and {more} more"));
    }
    reason.push(')');
    reason
}

pub use crate::spelling::nearest;
