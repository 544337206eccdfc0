//! One `initialize` result from the members': their capabilities united,
//! their instructions each under its member's name, the oldest protocol
//! version any member settled on, and the app as the server.

use serde_json::{Map, Value, json};

/// The app's `initialize` result from `members` (name, result), in order;
/// `None` when there is none.
pub fn initialize(app: &str, members: &[(&str, &Value)]) -> Option<Value> {
    let mut version: Option<&str> = None;
    let mut capabilities = Value::Object(Map::new());
    let mut instructions = Vec::new();
    for (name, result) in members {
        if let Some(v) = result.get("protocolVersion").and_then(Value::as_str) {
            // Versions are dates: the oldest is the one every member speaks.
            version = Some(version.map_or(v, |old| old.min(v)));
        }
        if let Some(c) = result.get("capabilities") {
            unite(&mut capabilities, c);
        }
        if let Some(text) = result.get("instructions").and_then(Value::as_str)
            && !text.trim().is_empty()
        {
            instructions.push(format!("## {name}\n\n{}", text.trim()));
        }
    }
    let version = version?;
    let mut out = json!({
        "protocolVersion": version,
        "capabilities": capabilities,
        "serverInfo": { "name": app, "version": env!("CARGO_PKG_VERSION") },
    });
    if !instructions.is_empty() {
        out["instructions"] = Value::String(instructions.join("\n\n"));
    }
    Some(out)
}

/// `into` united with `other`: objects member by member, `true` wins over
/// `false`, otherwise what `into` has stays.
pub fn unite(into: &mut Value, other: &Value) {
    match (into, other) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in b {
                match a.get_mut(k) {
                    Some(mine) => unite(mine, v),
                    None => {
                        a.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        (Value::Bool(a), Value::Bool(b)) => *a |= *b,
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn combined() {
        let time = json!({
            "protocolVersion": "2025-06-18",
            "capabilities": {"tools": {"listChanged": false}},
            "serverInfo": {"name": "mcp-time", "version": "1"},
        });
        let notes = json!({
            "protocolVersion": "2025-03-26",
            "capabilities": {"tools": {"listChanged": true}, "resources": {"subscribe": true}, "logging": {}},
            "serverInfo": {"name": "notes", "version": "2"},
            "instructions": "Write notes.",
        });
        let out = initialize("suite", &[("time", &time), ("notes", &notes)]).unwrap();
        assert_eq!(out["protocolVersion"], "2025-03-26");
        assert_eq!(
            out["capabilities"],
            json!({"tools": {"listChanged": true}, "resources": {"subscribe": true}, "logging": {}})
        );
        assert_eq!(out["serverInfo"]["name"], "suite");
        assert_eq!(out["instructions"], "## notes\n\nWrite notes.");
        assert_eq!(initialize("suite", &[]), None);
    }
}
