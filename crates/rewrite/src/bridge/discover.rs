//! `server/discover` for an upstream of the handshake era, written from its
//! answer to `initialize`: the capabilities it declared there (with the
//! listings the gateway answers for it, and no change notification the
//! gateway does not deliver), its instructions, and its `serverInfo` where
//! the revision puts it, in the result's `_meta`.

use serde_json::{Map, Value, json};

use super::answer::Hints;
use super::check::SUPPORTED;

/// The `_meta` key a result of the revision names its server under.
pub const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";

/// The `server/discover` result for an upstream whose `initialize` result
/// is `initialized`. The overlays' additions (the UI extension, resources)
/// are the caller's to apply, as for an upstream's own discover.
pub fn discover(initialized: &Value, hints: Hints) -> Value {
    let mut capabilities = match initialized.get("capabilities") {
        Some(Value::Object(c)) => c.clone(),
        _ => Map::new(),
    };
    // The gateway answers these listings when the upstream has none.
    for kind in ["prompts", "resources"] {
        let entry = capabilities.entry(kind).or_insert_with(|| json!({}));
        if !entry.is_object() {
            *entry = json!({});
        }
    }
    // Changes reach a client of the revision through `subscriptions/listen`
    // only; until it is served, nothing is promised.
    for (kind, flags) in [
        ("tools", &["listChanged"][..]),
        ("prompts", &["listChanged"][..]),
        ("resources", &["listChanged", "subscribe"][..]),
    ] {
        if let Some(Value::Object(c)) = capabilities.get_mut(kind) {
            for flag in flags {
                if c.contains_key(*flag) {
                    c.insert((*flag).into(), json!(false));
                }
            }
        }
    }
    let mut result = Map::new();
    result.insert("supportedVersions".into(), json!(SUPPORTED));
    result.insert("capabilities".into(), Value::Object(capabilities));
    if let Some(instructions) = initialized.get("instructions").filter(|i| i.is_string()) {
        result.insert("instructions".into(), instructions.clone());
    }
    result.insert("resultType".into(), json!("complete"));
    result.insert("ttlMs".into(), json!(hints.ttl_ms));
    result.insert("cacheScope".into(), json!(hints.scope.as_str()));
    let mut meta = match initialized.get("_meta") {
        Some(Value::Object(m)) => m.clone(),
        _ => Map::new(),
    };
    if let Some(info) = initialized.get("serverInfo") {
        meta.insert(META_SERVER_INFO.into(), info.clone());
    }
    if !meta.is_empty() {
        result.insert("_meta".into(), Value::Object(meta));
    }
    Value::Object(result)
}
