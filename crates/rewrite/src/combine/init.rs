//! One `initialize` result from the members': their capabilities united,
//! their instructions each under its member's name, the oldest protocol
//! version any member settled on, and the app as the server.

use serde_json::{Map, Value, json};

use crate::bridge::Hints;

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

/// The app's `server/discover` result (2026-07-28) from its members'
/// (name, result), in order, announcing `hints`: their capabilities
/// united, their instructions each under its member's name, the versions
/// every member supports, and the app as the server (in the result's
/// `_meta`, where the revision puts it). `None` when there is none.
pub fn discover(app: &str, members: &[(&str, &Value)], hints: Hints) -> Option<Value> {
    let first = members.first()?;
    let mut versions: Vec<Value> = versions_of(first.1);
    for (_, result) in &members[1..] {
        let theirs = versions_of(result);
        versions.retain(|v| theirs.contains(v));
    }
    // Each member's result read as an `initialize` result, to be united.
    let as_initialized: Vec<Value> = members
        .iter()
        .map(|(_, r)| {
            let mut v = json!({ "protocolVersion": mcp_ui_wire::protocol::ENVELOPE });
            for key in ["capabilities", "instructions"] {
                if let Some(x) = r.get(key) {
                    v[key] = x.clone();
                }
            }
            v
        })
        .collect();
    let named: Vec<(&str, &Value)> = members
        .iter()
        .zip(&as_initialized)
        .map(|((name, _), v)| (*name, v))
        .collect();
    let united = initialize(app, &named)?;
    let mut out = json!({
        "supportedVersions": versions,
        "capabilities": united["capabilities"],
        "resultType": "complete",
        "ttlMs": hints.ttl_ms,
        "cacheScope": hints.scope.as_str(),
        "_meta": { crate::bridge::META_SERVER_INFO: united["serverInfo"] },
    });
    if let Some(text) = united.get("instructions") {
        out["instructions"] = text.clone();
    }
    Some(out)
}

fn versions_of(result: &Value) -> Vec<Value> {
    match result.get("supportedVersions") {
        Some(Value::Array(v)) => v.clone(),
        _ => Vec::new(),
    }
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

    #[test]
    fn discovered() {
        let time = json!({
            "supportedVersions": ["2025-11-25", "2026-07-28"],
            "capabilities": {"tools": {"listChanged": false}},
            "resultType": "complete",
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "mcp-time", "version": "1"}},
        });
        let notes = json!({
            "supportedVersions": ["2026-07-28"],
            "capabilities": {"tools": {"listChanged": true}, "extensions": {"io.modelcontextprotocol/ui": {}}},
            "instructions": "Write notes.",
        });
        let hints = Hints::default();
        let out = discover("suite", &[("time", &time), ("notes", &notes)], hints).unwrap();
        assert_eq!(out["supportedVersions"], json!(["2026-07-28"]));
        assert_eq!(
            out["capabilities"],
            json!({"tools": {"listChanged": true}, "extensions": {"io.modelcontextprotocol/ui": {}}})
        );
        assert_eq!(
            out["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
            "suite"
        );
        assert_eq!(out["instructions"], "## notes\n\nWrite notes.");
        assert_eq!(
            (out["resultType"].as_str(), out["ttlMs"].as_u64()),
            (Some("complete"), Some(0))
        );
        assert_eq!(out["cacheScope"], "private");
        assert_eq!(discover("suite", &[], hints), None);
    }
}
